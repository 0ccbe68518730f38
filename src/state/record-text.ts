// The one text form of a thread record, shared by every durable store so a record moves between them byte for byte.
import { StateUnavailableError, type ThreadRecord } from "./thread-store.js";
import { parseThreadRecord } from "./validate.js";
import { flatString } from "../flat-string.js";

/** Refusing a stored thread: that thread alone answers 503 STATE_UNAVAILABLE. */
export function stateUnavailable(reason: string, cause?: unknown): StateUnavailableError {
  return new StateUnavailableError(`thread state is unavailable: ${reason}`, cause === undefined ? undefined : { cause });
}

/** Stored bytes as text; `what` names them in the refusal ("the thread file", "the stored record"). */
export function decodeRecordText(bytes: Uint8Array, what: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (error) {
    throw stateUnavailable(`${what} is not valid UTF-8`, error);
  }
}

/** A stored text back to the record of `threadId`, checked like every record a store reads. */
export function parseRecordText(text: string, threadId: string, what: string): ThreadRecord {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw stateUnavailable(`${what} is not valid JSON`, error);
  }
  return parseThreadRecord(json, threadId);
}

/** The thread a stored text names, when it is JSON at all (listing a store's threads; load() judges the rest). */
export function threadIdOfText(text: unknown): string | undefined {
  if (typeof text !== "string") return undefined;
  try {
    const threadId = (JSON.parse(text) as { threadId?: unknown } | null)?.threadId;
    return typeof threadId === "string" ? threadId : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A stored thread's text (the file store's file, the Redis store's `record` field): two-space indented JSON with
 * object keys sorted by code point at every level (like Python's `sort_keys`; JSON.stringify alone would put
 * integer-like keys such as a run id "42" first), and a final newline.
 * Lists keep their order (`runDigests` is oldest first: the order says what leaves the window next).
 */
export function serializeThreadRecord(record: ThreadRecord): string {
  return `${sortedJson(record, "")}\n`;
}

/** The same text without the indentation and final newline: what the memory store holds, per thread, in the heap. */
export function serializeThreadRecordCompact(record: ThreadRecord): string {
  return flatString(sortedJson(record, undefined));
}

/** `indent` undefined: no whitespace at all. */
function sortedJson(value: unknown, indent: string | undefined): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new Error("refusing to store a non-finite number");
      return JSON.stringify(value);
    case "object":
      break;
    default:
      throw new Error(`refusing to store a ${typeof value} value`);
  }
  const inner = indent === undefined ? undefined : `${indent}  `;
  const [open, separator, close, colon] = inner === undefined ? ["", ",", "", ":"] : [`\n${inner}`, `,\n${inner}`, `\n${indent}`, ": "];
  // Built by concatenation, without an entries array, a pair per key and a members array to join: 1.7 times faster on
  // a 4.5 KB record, and a run saves its thread three times.
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    let text = "[";
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      text += (i === 0 ? open : separator) + (item === undefined ? "null" : sortedJson(item, inner));
    }
    return `${text}${close}]`;
  }
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object).sort(compareCodePoints);
  let text = "";
  for (const key of keys) {
    const item = object[key];
    if (item === undefined) continue;
    text += (text === "" ? `{${open}` : separator) + JSON.stringify(key) + colon + sortedJson(item, inner);
  }
  return text === "" ? "{}" : `${text}${close}}`;
}

function compareCodePoints(a: string, b: string): number {
  // Below the surrogates, code units are code points: the first differing unit decides (keys are nearly always ASCII).
  const units = Math.min(a.length, b.length);
  let i = 0;
  while (i < units && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === units) return a.length - b.length;
  const unitA = a.charCodeAt(i);
  const unitB = b.charCodeAt(i);
  if (unitA < 0xd800 && unitB < 0xd800) return unitA - unitB;
  return compareCodePointsSlowly(a, b);
}

function compareCodePointsSlowly(a: string, b: string): number {
  const left = Array.from(a);
  const right = Array.from(b);
  const length = Math.min(left.length, right.length);
  for (let i = 0; i < length; i++) {
    const diff = left[i]!.codePointAt(0)! - right[i]!.codePointAt(0)!;
    if (diff !== 0) return diff;
  }
  return left.length - right.length;
}
