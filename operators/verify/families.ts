// Event families with rules of their own besides streamed items: tool results, encrypted values, steps,
// activities and message lists (MESSAGES_SNAPSHOT, RUN_STARTED.input).
import { isObject } from "../lib/json.js";
import { MESSAGE_ROLES, ofOwner, ownerName, str, type Owner, type StreamEvent } from "./rules.js";
import type { VerifierState } from "./state.js";

export function toolResult(v: VerifierState, event: StreamEvent): void {
  v.requireString(event, "messageId");
  const id = v.requireString(event, "toolCallId");
  if (event.role !== undefined && event.role !== "tool") {
    v.report("role-closed-set", `TOOL_CALL_RESULT role ${String(event.role)}; it is always tool`);
  }
  if (id === undefined) return;
  // A result may answer a call made in an earlier run (a resume), so no "was started" rule.
  if (v.run.toolResults.has(id)) v.report("strict/one-result-per-tool-call", `second TOOL_CALL_RESULT for tool call ${id}`);
  v.run.toolResults.add(id);
}

export function encryptedValue(v: VerifierState, event: StreamEvent, tag: Owner): void {
  v.requireString(event, "subtype");
  v.requireString(event, "encryptedValue");
  const id = v.requireString(event, "entityId");
  if (id === undefined || tag === undefined) return;
  const target =
    event.subtype === "tool-call" ? v.run.tools.known.get(id) : (v.run.text.known.get(id) ?? v.run.reasoningMessages.known.get(id));
  if (target !== undefined && target.owner !== tag) {
    v.report("owner-agrees", `REASONING_ENCRYPTED_VALUE for ${id} tagged ${ownerName(tag)}, but ${ownerName(target.owner)} owns it`);
  }
}

export function stepStarted(v: VerifierState, event: StreamEvent, tag: Owner): void {
  const name = v.requireString(event, "stepName");
  if (name === undefined) return;
  const names = v.run.stepsOf(tag);
  if (names.has(name)) v.report("no-reopen-while-open", `STEP_STARTED for already active step "${name}"${ofOwner(tag)}`);
  names.add(name);
}

export function stepFinished(v: VerifierState, event: StreamEvent, tag: Owner): void {
  const name = v.requireString(event, "stepName");
  if (name === undefined) return;
  const names = v.run.stepsOf(tag);
  if (names.delete(name)) return;
  const other = [...v.run.steps].find(([owner, open]) => owner !== tag && open.has(name));
  if (other !== undefined) {
    v.report("owner-agrees", `STEP_FINISHED for step "${name}"${ofOwner(tag)}, but it is open under ${ownerName(other[0])}`);
  } else {
    v.report("open-before-continue", `STEP_FINISHED for step "${name}"${ofOwner(tag)} that was not started`);
  }
}

export function activitySnapshot(v: VerifierState, event: StreamEvent, tag: Owner): void {
  const id = v.requireString(event, "messageId");
  if (id === undefined) return;
  // A replacing snapshot re-mints the activity and its owner; replace: false leaves the established one.
  if (!v.run.activities.has(id) || event.replace !== false) v.run.activities.set(id, tag);
}

export function activityDelta(v: VerifierState, event: StreamEvent, tag: Owner): void {
  const id = v.requireString(event, "messageId");
  if (id === undefined || !v.run.activities.has(id)) return; // a consumer skips such a delta with a warning
  const owner = v.run.activities.get(id);
  if (tag !== undefined && tag !== owner) {
    v.report("owner-agrees", `ACTIVITY_DELTA for activity ${id} tagged ${ownerName(tag)}, but ${ownerName(owner)} owns it`);
  }
}

export function messagesSnapshot(v: VerifierState, event: StreamEvent): void {
  if (!Array.isArray(event.messages)) {
    v.report("required-fields", "MESSAGES_SNAPSHOT without a messages array");
    return;
  }
  checkMessages(v, event.messages, "MESSAGES_SNAPSHOT");
  // The snapshot establishes each message's owner (subagents#attribution, state#messages_snapshot).
  for (const message of event.messages) {
    if (!isObject(message) || typeof message.id !== "string") continue;
    const owner = str(message.subagentRunId);
    const items = message.role === "reasoning" ? v.run.reasoningMessages : v.run.text;
    if (message.role === "activity") {
      v.run.activities.set(message.id, owner);
      continue;
    }
    const role = message.role === "reasoning" ? undefined : str(message.role);
    const name = str(message.name);
    items.known.set(message.id, { owner, ...(role !== undefined && { role }), ...(name !== undefined && { name }) });
    if (!Array.isArray(message.toolCalls)) continue;
    for (const call of message.toolCalls) {
      if (!isObject(call) || typeof call.id !== "string") continue;
      const toolCallName = isObject(call.function) ? str(call.function.name) : undefined;
      v.run.tools.known.set(call.id, { owner, parentMessageId: message.id, ...(toolCallName !== undefined && { toolCallName }) });
    }
  }
}

/** A message list's closed role set and null optionals (MESSAGES_SNAPSHOT, RUN_STARTED.input). */
export function checkMessages(v: VerifierState, messages: unknown, where: string): void {
  if (!Array.isArray(messages)) return;
  messages.forEach((message: unknown, position) => {
    if (!isObject(message)) return;
    if (typeof message.role !== "string" || !MESSAGE_ROLES.has(message.role)) {
      v.report("role-closed-set", `${where} message ${position} has role ${String(message.role)}, not one of ${[...MESSAGE_ROLES].join(", ")}`);
    }
    if (message.subagentRunId === null) v.report("no-null-optionals", `${where} message ${position} has subagentRunId null`);
  });
}
