// Read-only accessors over A2A stream results, shared by the projection and the run layer.
import { RunError, type A2AMessage, type A2AStreamResponse, type A2ATask, type A2ATaskStatus, type JsonObject } from "../types.js";
import { hasOnlyKey, isObject } from "./json.js";
import { OPERATOR_TEXTS } from "../messages.js";

export type A2AResult = A2ATask & { taskId?: string; artifact?: unknown; status?: A2ATaskStatus };

/** The keys of a StreamResponse's payload (a oneof), in the order they are looked for. */
export type PayloadKey = "statusUpdate" | "task" | "artifactUpdate" | "message";

/** The key the frame's payload sits under, undefined for a frame without one. Named reads: this runs once per frame. */
export function payloadKeyOf(frame: A2AStreamResponse): PayloadKey | undefined {
  const f = frame as Record<string, unknown>;
  if (f.statusUpdate != null) return "statusUpdate";
  if (f.task != null) return "task";
  if (f.artifactUpdate != null) return "artifactUpdate";
  if (f.message != null) return "message";
  return undefined;
}

/** The payload of a StreamResponse: its task, statusUpdate, artifactUpdate or message (the frame itself without one). */
export function resultOf(frame: A2AStreamResponse): A2AResult & A2AMessage {
  const key = payloadKeyOf(frame);
  return (key === undefined ? frame : (frame as Record<string, unknown>)[key]) as A2AResult & A2AMessage;
}

/** `TASK_STATE_INPUT_REQUIRED` → `input-required`; the US spelling `canceled` is the only one A2A uses. */
export function normalizeState(state: unknown): string | undefined {
  if (typeof state !== "string" || state === "") return undefined;
  let normalized = NORMALIZED_STATES.get(state);
  if (normalized === undefined) {
    normalized = state.toLowerCase();
    if (normalized.startsWith("task_state_")) normalized = normalized.slice("task_state_".length);
    normalized = normalized.replaceAll("_", "-");
    // Kernels use a handful of spellings; a bounded memo keeps the per-frame cost a map lookup.
    if (NORMALIZED_STATES.size < 64) NORMALIZED_STATES.set(state, normalized);
  }
  return normalized;
}

const NORMALIZED_STATES = new Map<string, string>();

export const FAILED_STATES: ReadonlySet<string> = new Set(["failed", "rejected", "auth-required"]);
export const TERMINAL_STATES: ReadonlySet<string> = new Set(["completed", "canceled", ...FAILED_STATES]);

export function iacCodeOf(result: { metadata?: JsonObject }): JsonObject | undefined {
  const meta = result.metadata;
  if (!meta) return undefined;
  const iac = meta.iac_code;
  return isObject(iac) ? iac : undefined;
}

export function taskIdOf(frame: A2AStreamResponse, result: A2AResult & A2AMessage): string | undefined {
  const id = "task" in frame ? result.id : result.taskId;
  return typeof id === "string" && id !== "" ? id : undefined;
}

/** An iac_code object whose only key is `iacCodeSessionId`, as on most frames of a turn (text deltas). */
export function onlySessionId(iac: JsonObject): boolean {
  return hasOnlyKey(iac, "iacCodeSessionId");
}

/** Session id: top-level, then the single pipeline envelope, then the batch; first non-empty wins. */
export function sessionIdOf(iac: JsonObject | undefined): string | undefined {
  if (!iac) return undefined;
  if (typeof iac.iacCodeSessionId === "string" && iac.iacCodeSessionId) return iac.iacCodeSessionId;
  const pipeline = iac.pipeline;
  if (isObject(pipeline) && typeof pipeline.iacCodeSessionId === "string" && pipeline.iacCodeSessionId) {
    return pipeline.iacCodeSessionId;
  }
  const batch = iac.pipelineBatch;
  if (isObject(batch) && Array.isArray(batch.events)) {
    for (const e of batch.events) {
      if (isObject(e) && typeof e.iacCodeSessionId === "string" && e.iacCodeSessionId) return e.iacCodeSessionId;
    }
  }
  return undefined;
}

export function isAgentRole(role: unknown): boolean {
  return role === undefined || role === "ROLE_AGENT" || role === "agent" || role === "";
}

export function textOfMessage(message: A2AMessage | undefined): string {
  if (!message || !isAgentRole(message.role) || !Array.isArray(message.parts)) return "";
  let text = "";
  for (const part of message.parts) if (typeof part.text === "string") text += part.text;
  return text;
}

/** What a stage threw while reading a frame: the frame was not one the gateway can process. */
export function unprocessableFrame(thrown: unknown): RunError {
  if (thrown instanceof RunError) return thrown;
  return new RunError("A2A_PROTOCOL_ERROR", OPERATOR_TEXTS["a2a.invalidFrame"]);
}
