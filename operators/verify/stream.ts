// One pass over a stream: each event's shape and envelope, the lanes it closes, then the rules of its type.
import { isObject } from "../lib/json.js";
import { chunk, closeLanesFor } from "./chunk-lanes.js";
import { activityDelta, activitySnapshot, encryptedValue, messagesSnapshot, stepFinished, stepStarted, toolResult } from "./families.js";
import { closeItem, continueItem, mixesForms, openItem, openTool } from "./items.js";
import { admitted, endOfStream, runError, runFinished, runStarted } from "./lifecycle.js";
import { END_OF_STREAM, NULLABLE_REQUIRED, str, TEXT_ROLES, type StreamEvent, type StreamProblem } from "./rules.js";
import { VerifierState } from "./state.js";
import { subagentEnded, subagentStarted } from "./subagents.js";

/** Every problem of `events`; throws only on hostile inputs (throwing getters, proxies). */
export function verifyStream(events: readonly unknown[], strict: boolean): StreamProblem[] {
  const v = new VerifierState(strict);
  if (events.length === 0) {
    v.report("stream-begins-with-run", "the stream is empty; it must start with RUN_STARTED or RUN_ERROR", 0, END_OF_STREAM);
    return v.problems;
  }
  events.forEach((event, index) => visit(v, event, index));
  endOfStream(v, events.length);
  return v.problems;
}

function visit(v: VerifierState, raw: unknown, index: number): void {
  v.index = index;
  v.endedByThisEvent = undefined;
  if (!isObject(raw) || typeof raw.type !== "string") {
    v.type = isObject(raw) ? String(raw.type) : typeof raw;
    v.report("event-shape", "not an event object with a string type");
    return;
  }
  const event = raw as StreamEvent;
  v.type = event.type;
  if (!admitted(v, event)) return;
  checkEnvelope(v, event);
  closeLanesFor(v, event);
  dispatch(v, event);
}

/** Fields every event shares: timestamp, no null optionals, interrupts only in the outcome. */
function checkEnvelope(v: VerifierState, event: StreamEvent): void {
  if (event.timestamp === undefined) {
    v.report("strict/timestamp-required", "missing timestamp");
  } else if (!Number.isSafeInteger(event.timestamp)) {
    v.report("timestamp-integer", `timestamp ${String(event.timestamp)} is not a safe integer`);
  }
  const nullable = NULLABLE_REQUIRED[event.type] ?? [];
  for (const [key, value] of Object.entries(event)) {
    if (value === null && key !== "timestamp" && !nullable.includes(key)) {
      v.report("no-null-optionals", `${key} is null; optional fields must be absent`);
    }
  }
  if (Object.hasOwn(event, "interrupts")) {
    v.report("strict/interrupts-in-outcome", "top-level interrupts; interrupts belong in RUN_FINISHED.outcome");
  }
  const tag = str(event.subagentRunId);
  if (tag !== undefined && !event.type.startsWith("SUBAGENT_")) v.run.attributed.add(tag);
}

function dispatch(v: VerifierState, event: StreamEvent): void {
  const tag = str(event.subagentRunId);
  switch (event.type) {
    case "RUN_STARTED":
      return runStarted(v, event);
    case "RUN_FINISHED":
      return runFinished(v, event);
    case "RUN_ERROR":
      return runError(v, event);

    case "TEXT_MESSAGE_START": {
      const id = v.requireString(event, "messageId");
      if (id === undefined || mixesForms(v, "text", id)) return;
      const role = event.role === undefined ? "assistant" : event.role;
      if (typeof role !== "string" || !TEXT_ROLES.has(role)) {
        v.report("role-closed-set", `TEXT_MESSAGE_START role ${String(role)} is not one of ${[...TEXT_ROLES].join(", ")}`);
      }
      const name = str(event.name);
      return openItem(v, v.run.text, id, { owner: tag, role: String(role), ...(name !== undefined && { name }) });
    }
    case "TEXT_MESSAGE_CONTENT":
    case "REASONING_MESSAGE_CONTENT": {
      const items = event.type === "TEXT_MESSAGE_CONTENT" ? v.run.text : v.run.reasoningMessages;
      const id = v.requireString(event, "messageId");
      const delta = v.requireString(event, "delta");
      if (delta === "") v.report("strict/non-empty-delta", `${event.type} with an empty delta for ${items.noun} ${id}`);
      if (id === undefined || mixesForms(v, event.type === "TEXT_MESSAGE_CONTENT" ? "text" : "reasoning", id)) return;
      return continueItem(v, items, id, tag);
    }
    case "TEXT_MESSAGE_END":
    case "REASONING_MESSAGE_END": {
      const id = v.requireString(event, "messageId");
      if (id === undefined || mixesForms(v, event.type === "TEXT_MESSAGE_END" ? "text" : "reasoning", id)) return;
      return closeItem(v, event.type === "TEXT_MESSAGE_END" ? v.run.text : v.run.reasoningMessages, id, tag);
    }
    case "TEXT_MESSAGE_CHUNK":
      return chunk(v, event, "text");

    case "TOOL_CALL_START": {
      const id = v.requireString(event, "toolCallId");
      const name = v.requireString(event, "toolCallName");
      if (id === undefined || mixesForms(v, "tool", id)) return;
      return openTool(v, id, tag, name, str(event.parentMessageId));
    }
    case "TOOL_CALL_ARGS": {
      const id = v.requireString(event, "toolCallId");
      v.requireString(event, "delta");
      if (id === undefined || mixesForms(v, "tool", id)) return;
      return continueItem(v, v.run.tools, id, tag);
    }
    case "TOOL_CALL_END": {
      const id = v.requireString(event, "toolCallId");
      if (id === undefined || mixesForms(v, "tool", id)) return;
      return closeItem(v, v.run.tools, id, tag);
    }
    case "TOOL_CALL_CHUNK":
      return chunk(v, event, "tool");
    case "TOOL_CALL_RESULT":
      return toolResult(v, event);

    case "REASONING_START": {
      const id = v.requireString(event, "messageId");
      if (id !== undefined) openItem(v, v.run.reasoningSpans, id, { owner: tag });
      return;
    }
    case "REASONING_END": {
      const id = v.requireString(event, "messageId");
      if (id !== undefined) closeItem(v, v.run.reasoningSpans, id, tag);
      return;
    }
    case "REASONING_MESSAGE_START": {
      const id = v.requireString(event, "messageId");
      if (event.role !== "reasoning") {
        v.report("reasoning-role", `REASONING_MESSAGE_START role ${String(event.role)}; it is always reasoning`);
      }
      if (id === undefined || mixesForms(v, "reasoning", id)) return;
      return openItem(v, v.run.reasoningMessages, id, { owner: tag });
    }
    case "REASONING_MESSAGE_CHUNK":
      return chunk(v, event, "reasoning");
    case "REASONING_ENCRYPTED_VALUE":
      return encryptedValue(v, event, tag);

    case "STEP_STARTED":
      return stepStarted(v, event, tag);
    case "STEP_FINISHED":
      return stepFinished(v, event, tag);

    case "ACTIVITY_SNAPSHOT":
      return activitySnapshot(v, event, tag);
    case "ACTIVITY_DELTA":
      return activityDelta(v, event, tag);
    case "MESSAGES_SNAPSHOT":
      return messagesSnapshot(v, event);

    case "SUBAGENT_STARTED":
      return subagentStarted(v, event);
    case "SUBAGENT_FINISHED":
    case "SUBAGENT_ERROR":
      return subagentEnded(v, event);

    default:
      // CUSTOM, RAW, STATE_*: standalone, no ordering rules. An unknown type is unrecognised material a consumer
      // drops (processing model), not a sequence error.
      return;
  }
}
