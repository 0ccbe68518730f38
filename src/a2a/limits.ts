// What a kernel may send, enforced where its JSON is decoded. The kernel is local, but what it streams comes
// from an LLM and from tools, so a frame is bounded like a request body: nesting depth (recursive steps after
// the parse — JSON.stringify, protobuf encoding, canonical JSON — would overflow the stack), and the interrupt
// inputs a frame asks for, which are amplified (a JSON schema and a message line per option) into the
// RUN_FINISHED that announces them and copied into the thread's state file.
import { RunError } from "../../operators/types.js";
import { messageText } from "../i18n/index.js";
import { iacCodeOf as iacCodeOfResult } from "../../operators/lib/a2a-read.js";
import { isObject } from "../../operators/lib/json.js";

export const UPSTREAM_LIMITS = {
  /** Nesting of any upstream JSON document (JSON-RPC envelope included), as on the request side. */
  maxDepth: 128,
  /** Required inputs one frame may ask for (`input` plus `pendingPermissions[]`). */
  maxInputs: 32,
  /** Options of one input. */
  maxOptions: 256,
  /** Options of all inputs of one frame together. */
  maxFrameOptions: 1_024,
  /** Length of any string inside an input (UTF-16 units). */
  maxInputString: 8_192,
  /** An input as JSON text. */
  maxInputChars: 65_536,
  /** inputId, toolUseId, task and session ids, in code points; like every id the gateway keeps. */
  maxIdCodePoints: 256,
  /** Durable pipeline steps open at once (kept in the state file until they finish). */
  maxOpenSteps: 256,
  /** A step key (`candidate:<candidate>:<step>`), in code points. */
  maxStepKeyCodePoints: 520,
} as const;

export function oversizedFrame(): RunError {
  return new RunError("A2A_PROTOCOL_ERROR", messageText("a2a.invalidFrame"));
}

/** True when `value` nests deeper than `limit` objects/arrays. Recursion is bounded by `limit` itself. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (limit === 0) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (nestsDeeperThan(item, limit - 1)) return true;
  } else {
    for (const key in value) if (nestsDeeperThan((value as Record<string, unknown>)[key], limit - 1)) return true;
  }
  return false;
}

// In a /u pattern a surrogate pair is one code point, so only lone halves match.
const LONE_SURROGATE = /\p{Cs}/u;

/** An id the gateway can key state by: a non-empty, well-formed string of at most 256 code points. */
export function isBoundedId(value: string, maxCodePoints: number = UPSTREAM_LIMITS.maxIdCodePoints): boolean {
  if (value.length > maxCodePoints * 2 || LONE_SURROGATE.test(value)) return false;
  if (value.length <= maxCodePoints) return true;
  let n = 0;
  for (const _ of value) if (++n > maxCodePoints) return false;
  return true;
}

/**
 * Throws A2A_PROTOCOL_ERROR when a payload's `metadata.iac_code` asks for more, or bigger, inputs than the
 * limits allow. Inputs that are not `required: true` are ignored by the projection and not checked here.
 */
export function assertInputLimits(payload: unknown): void {
  const iac = iacCodeOf(payload);
  if (!iac || (iac.input === undefined && iac.pendingPermissions === undefined)) return;
  const inputs: unknown[] = [];
  if (iac.input !== undefined) inputs.push(iac.input);
  if (Array.isArray(iac.pendingPermissions)) {
    if (iac.pendingPermissions.length > UPSTREAM_LIMITS.maxInputs * 4) throw oversizedFrame();
    inputs.push(...iac.pendingPermissions);
  }
  let required = 0;
  let options = 0;
  for (const input of inputs) {
    if (!isObject(input) || input.required !== true) continue;
    if (++required > UPSTREAM_LIMITS.maxInputs) throw oversizedFrame();
    for (const key of ["inputId", "toolUseId"] as const) {
      const id = input[key];
      if (typeof id === "string" && id !== "" && !isBoundedId(id)) throw oversizedFrame();
    }
    if (Array.isArray(input.options)) {
      if (input.options.length > UPSTREAM_LIMITS.maxOptions) throw oversizedFrame();
      options += input.options.length;
      if (options > UPSTREAM_LIMITS.maxFrameOptions) throw oversizedFrame();
    }
    if (!withinSize(input, UPSTREAM_LIMITS.maxInputChars)) throw oversizedFrame();
  }
}

/**
 * Throws A2A_PROTOCOL_ERROR when an id the projection keeps for the rest of the run (to dedupe envelopes, to
 * pair tool calls and messages) is longer than an id may be: each frame could otherwise add up to a record's
 * size to what the run holds until it ends. Checked: message ids, `iac_code.tool.toolUseId`, and in pipeline
 * envelopes `eventId`, `scope`, `data.toolUseId` and the step/candidate coordinates.
 */
export function assertIdLimits(key: string, payload: unknown): void {
  if (!isObject(payload)) return;
  if (key === "message") assertMessageId(payload);
  if (isObject(payload.status)) assertMessageId(payload.status.message);
  if (Array.isArray(payload.history)) for (const message of payload.history) assertMessageId(message);
  const iac = iacCodeOf(payload);
  if (!iac) return;
  if (isObject(iac.tool)) assertId(iac.tool.toolUseId);
  assertEnvelopeIds(iac.pipeline);
  const batch = iac.pipelineBatch;
  if (isObject(batch) && Array.isArray(batch.events)) for (const envelope of batch.events) assertEnvelopeIds(envelope);
}

// Checked where they are read, without collecting them first: this runs on every frame.
function assertId(id: unknown): void {
  if (typeof id === "string" && !withinCodePoints(id, UPSTREAM_LIMITS.maxIdCodePoints)) throw oversizedFrame();
}

function assertMessageId(message: unknown): void {
  if (isObject(message)) assertId(message.messageId);
}

function assertEnvelopeIds(envelope: unknown): void {
  if (!isObject(envelope)) return;
  assertId(envelope.eventId);
  assertId(envelope.scope);
  if (isObject(envelope.data)) assertId(envelope.data.toolUseId);
  for (const coordinate of [envelope.candidate, envelope.candidateStep, envelope.step]) {
    if (isObject(coordinate)) {
      assertId(coordinate.runId);
      assertId(coordinate.id);
      assertId(coordinate.subPipelineId);
    }
  }
}

function withinCodePoints(value: string, max: number): boolean {
  if (value.length <= max) return true;
  if (value.length > max * 2) return false;
  let n = 0;
  for (const _ of value) if (++n > max) return false;
  return true;
}

/** Walks strings and keys without building JSON text: a hostile input is refused before it is copied. */
function withinSize(root: unknown, budget: number): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === "string") {
      if (value.length > UPSTREAM_LIMITS.maxInputString) return false;
      budget -= value.length + 3;
    } else if (Array.isArray(value)) {
      budget -= value.length + 2;
      for (const item of value) stack.push(item);
    } else if (isObject(value)) {
      for (const key in value) {
        budget -= key.length + 4;
        stack.push(value[key]);
      }
    } else {
      budget -= 8;
    }
    if (budget < 0) return false;
  }
  return true;
}

function iacCodeOf(payload: unknown): Record<string, unknown> | undefined {
  return isObject(payload) ? iacCodeOfResult(payload) : undefined;
}

