// Chunk events (TEXT_MESSAGE_CHUNK, TOOL_CALL_CHUNK, REASONING_MESSAGE_CHUNK) expanded as a consumer expands them
// (patterns/streaming): each owner has one lane holding the item a chunk opened, until another event closes it.
import { closeItem, continueItem, itemsOf, openItem, openTool } from "./items.js";
import { ownerName, str, TEXT_ROLES, type Owner, type StreamEvent } from "./rules.js";
import type { ChunkKind, Lane, VerifierState } from "./state.js";

// Closing a chunk stream (patterns/streaming): these close the lane of their own owner, these close every lane,
// the rest (RAW, ACTIVITY_*, REASONING_ENCRYPTED_VALUE, SUBAGENT_STARTED, unknown types) stand aside.
const CLOSES_OWN_LANE = new Set([
  "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
  "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
  "STATE_SNAPSHOT", "STATE_DELTA", "CUSTOM", "STEP_STARTED", "STEP_FINISHED",
  "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END",
]);
const CLOSES_EVERY_LANE = new Set(["RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT"]);

/** The lanes `event` closes, before the event itself is judged. */
export function closeLanesFor(v: VerifierState, event: StreamEvent): void {
  if (CLOSES_EVERY_LANE.has(event.type)) {
    for (const owner of [...v.run.lanes.keys()]) closeLane(v, owner, event.type);
  } else if (CLOSES_OWN_LANE.has(event.type)) {
    closeLane(v, str(event.subagentRunId), event.type);
  } else if (event.type === "SUBAGENT_FINISHED" || event.type === "SUBAGENT_ERROR") {
    const id = str(event.subagentRunId);
    if (id !== undefined) closeLane(v, id, event.type);
  }
}

/** Synthesizes the `*_END` of the lane's chunk item, as a consumer's expansion does. */
function closeLane(v: VerifierState, owner: Owner, by: string): void {
  const lane = v.run.lanes.get(owner);
  if (lane === undefined) return;
  v.run.lanes.delete(owner);
  v.run.laneClosedBy.set(laneKey(owner, lane.kind), { id: lane.id, index: v.index, type: by });
  v.endedByThisEvent = { kind: lane.kind, id: lane.id };
  closeItem(v, itemsOf(v, lane.kind), lane.id, undefined);
}

export function chunk(v: VerifierState, event: StreamEvent, kind: ChunkKind): void {
  const idKey = kind === "tool" ? "toolCallId" : "messageId";
  const noun = kind === "text" ? "text message" : kind === "tool" ? "tool call" : "reasoning message";
  const rawId = event[idKey];
  if (rawId !== undefined && rawId !== null && typeof rawId !== "string") {
    v.report("required-fields", `${event.type} ${idKey} is not a string`);
    return;
  }
  const id = str(rawId);
  const tag = str(event.subagentRunId);
  const owner = resolveLane(v, kind, id, tag, event.type, noun);
  if (owner === null) return;
  const lane = v.run.lanes.get(owner);
  if (lane?.kind === kind && (id === undefined || id === lane.id)) {
    checkRepeats(v, event, lane);
  } else {
    closeLane(v, owner, event.type);
    if (!openChunkItem(v, event, kind, id, owner, tag, idKey)) return;
  }
  const opened = v.run.lanes.get(owner);
  if (opened === undefined || event.delta === undefined) return;
  if (typeof event.delta !== "string") {
    v.report("required-fields", `${event.type} with a non-string delta`);
    return;
  }
  if (event.delta === "" && kind !== "tool") v.report("strict/non-empty-delta", `${event.type} with an empty delta for ${opened.id}`);
  continueItem(v, itemsOf(v, kind), opened.id, tag);
}

/** Which lane a chunk belongs to; null when it has no unique referent. */
function resolveLane(v: VerifierState, kind: ChunkKind, id: string | undefined, tag: Owner, type: string, noun: string): Owner | null {
  if (id !== undefined) {
    for (const [owner, lane] of v.run.lanes) {
      if (lane.kind !== kind || lane.id !== id) continue;
      if (tag !== undefined && tag !== owner) {
        v.report("owner-agrees", `${type} for ${noun} ${id} tagged ${ownerName(tag)}, but ${ownerName(owner)} opened it`);
        return null;
      }
      return owner;
    }
    return tag;
  }
  if (tag !== undefined) return tag;
  if (v.run.lanes.get(undefined)?.kind === kind) return undefined;
  const candidates = [...v.run.lanes].filter(([, lane]) => lane.kind === kind);
  if (candidates.length === 1) return candidates[0]![0];
  if (candidates.length > 1) {
    v.report(
      "chunk-ambiguous-continuation",
      `${type} without ${kind === "tool" ? "toolCallId" : "messageId"} or subagentRunId while ${candidates.length} subagents have an open ${noun}`,
    );
    return null;
  }
  return undefined;
}

function checkRepeats(v: VerifierState, event: StreamEvent, lane: Lane): void {
  const keys = lane.kind === "text" ? (["role", "name"] as const) : lane.kind === "tool" ? (["toolCallName", "parentMessageId"] as const) : [];
  for (const key of keys) {
    const repeated = event[key];
    if (repeated !== undefined && repeated !== lane[key]) {
      v.report(
        "chunk-conflicting-repeat",
        `${event.type} repeats ${key} ${String(repeated)} for ${lane.id}, whose opener established ${lane[key] ?? "(absent)"}`,
      );
    }
  }
}

function openChunkItem(v: VerifierState, event: StreamEvent, kind: ChunkKind, id: string | undefined, owner: Owner, tag: Owner, idKey: string): boolean {
  if (id === undefined) {
    const closed = v.run.laneClosedBy.get(laneKey(owner, kind));
    if (closed !== undefined) {
      v.report(
        "chunk-lane-closed",
        `${event.type} without ${idKey} continues nothing: the chunk stream of ${closed.id} was closed by ${closed.type} at index ${closed.index}`,
      );
    } else {
      v.report("chunk-first-fields", `the first ${event.type} of an item must carry ${idKey}`);
    }
    return false;
  }
  if (itemsOf(v, kind).open.has(id)) {
    v.report("chunk-forms-do-not-mix", `${event.type} for ${id}, an item opened by an explicit start; it continues explicitly`);
    return false;
  }
  const lane: Lane = { kind, id };
  if (kind === "text") {
    const role = event.role === undefined ? "assistant" : event.role;
    if (typeof role !== "string" || !TEXT_ROLES.has(role)) {
      v.report("role-closed-set", `${event.type} role ${String(role)} is not one of ${[...TEXT_ROLES].join(", ")}`);
    }
    lane.role = String(role);
    if (event.name !== undefined) lane.name = String(event.name);
    openItem(v, v.run.text, id, { owner: tag, role: lane.role, ...(lane.name !== undefined && { name: lane.name }) });
  } else if (kind === "tool") {
    const toolCallName = str(event.toolCallName);
    if (toolCallName === undefined) {
      v.report("chunk-first-fields", `the first TOOL_CALL_CHUNK of ${id} must carry toolCallName`);
      return false;
    }
    lane.toolCallName = toolCallName;
    if (event.parentMessageId !== undefined) lane.parentMessageId = String(event.parentMessageId);
    openTool(v, id, tag, toolCallName, lane.parentMessageId);
  } else {
    openItem(v, v.run.reasoningMessages, id, { owner: tag });
  }
  v.run.lanes.set(owner, lane);
  return true;
}

function laneKey(owner: Owner, kind: ChunkKind): string {
  return `${kind}\u0000${owner ?? ""}`;
}
