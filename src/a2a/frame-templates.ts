// Text deltas are most of a kernel's stream, and one delta's SSE data is the previous one's with another text:
// the same envelope, ids, message and session. Parsing each whole costs more than all the projection does
// with it. FrameTemplates keeps, per kind of delta, the last such record as the text before and after its
// text literal; a record with the same before and after is that frame with another text, and only the
// literal is read. Sound because JSON is read left to right: the same prefix brings the parser to the same
// opening quote, a middle that is exactly one string body closes at the suffix's first character, and the
// suffix then parses as it did. A template is used only once a probe parse showed that its literal is the
// value at the delta's path (not a key, not part of another string, not overridden by a repeated key).
import type { A2AStreamResponse } from "../../operators/types.js";
import { isObject } from "../../operators/lib/json.js";
import { flatString } from "../flat-string.js";

type Path = readonly (string | number)[];
type Frame = Record<string, Record<string, unknown>>;
type Obj = Record<string, unknown>;

interface DeltaKind {
  /** Where the delta's text sits in a decoded frame. */
  path: Path;
  /**
   * The frame with another text at `path`, sharing everything off the path, keys in their order. Written out
   * per kind: a generic path walk spreads objects of every shape at one site, three times slower.
   */
  withText(frame: Frame, text: string): Frame;
}

/** The answer's text part and the thinking text. */
const DELTA_KINDS: readonly DeltaKind[] = [
  {
    path: ["statusUpdate", "status", "message", "parts", 0, "text"],
    withText: (frame, text) => {
      const update = frame.statusUpdate!;
      const status = update.status as Obj;
      const message = status.message as Obj;
      const parts = (message.parts as Obj[]).slice();
      parts[0] = { ...parts[0], text };
      return { ...frame, statusUpdate: { ...update, status: { ...status, message: { ...message, parts } } } };
    },
  },
  {
    path: ["statusUpdate", "metadata", "iac_code", "thinking", "text"],
    withText: (frame, text) => {
      const update = frame.statusUpdate!;
      const metadata = update.metadata as Obj;
      const iac = metadata.iac_code as Obj;
      return { ...frame, statusUpdate: { ...update, metadata: { ...metadata, iac_code: { ...iac, thinking: { ...(iac.thinking as Obj), text } } } } };
    },
  },
];

/** Records longer than this are parsed whole every time: a template holds its record's text. */
const MAX_TEMPLATE_CHARS = 8 * 1024;
/** Candidates in a row that never repeated before a delta kind stops being learned on this stream. */
const MAX_MISSES = 32;
/** Put in place of a candidate's literal for the probe parse; never learned from a record that contains it. */
const PROBE = "agui-gateway-template-probe-5b1c";
/** A string body that is its own value: no quote, no escape, no control character. */
const NEEDS_DECODING = /["\\\u0000-\u001f]/;

interface Template {
  prefix: string;
  suffix: string;
  /** The record's decoded frame; a match is this frame with another value at `path`. */
  frame: A2AStreamResponse;
}

class DeltaSlot {
  template: Template | undefined;
  /**
   * The last record of this kind as a fingerprint of its prefix and suffix; the next record with the same one is
   * promoted to a template. A fingerprint, not the text: an idle stream keeps its last delta's slot for minutes,
   * and the text would keep the whole record. A collision costs one probe parse, never a wrong template: the
   * template is the matching record's own text, proven by the probe.
   */
  candidate = NO_CANDIDATE;
  misses = 0;

  constructor(readonly kind: DeltaKind) {}
}

/** One per upstream stream: what it remembers is that stream's last deltas. */
export class FrameTemplates {
  private readonly slots = DELTA_KINDS.map((kind) => new DeltaSlot(kind));

  /** The frame of an SSE record's data when it matches a template; undefined: decode it in full, then `learn`. */
  decode(data: string): A2AStreamResponse | undefined {
    for (const slot of this.slots) {
      const template = slot.template;
      if (template === undefined) continue;
      const { prefix, suffix } = template;
      const end = data.length - suffix.length;
      if (end < prefix.length) continue;
      // Slices compared with ===, not startsWith/endsWith: V8 compares those a character at a time, ten times slower.
      if (data.slice(0, prefix.length) !== prefix || data.slice(end) !== suffix) continue;
      const text = stringBody(data.slice(prefix.length, end));
      if (text === undefined) return undefined;
      return slot.kind.withText(template.frame as unknown as Frame, text) as unknown as A2AStreamResponse;
    }
    return undefined;
  }

  /** After `data` was decoded in full into `frame` (its JSON-RPC result, checked). */
  learn(data: string, frame: A2AStreamResponse): void {
    if (data.length > MAX_TEMPLATE_CHARS) return;
    for (const slot of this.slots) {
      if (slot.misses > MAX_MISSES) continue;
      const value = valueAt(frame, slot.kind.path);
      if (typeof value !== "string") continue;
      const literal = JSON.stringify(value);
      // Not found: the kernel escapes this text differently; the next record of the kind may still be learned.
      const at = data.lastIndexOf(literal);
      if (at < 0) continue;
      const suffixAt = at + literal.length - 1;
      const fingerprint = envelopeFingerprint(data, at + 1, suffixAt);
      if (fingerprint === slot.candidate) {
        slot.candidate = NO_CANDIDATE;
        // Its own copy: the template's slices would otherwise keep the network chunk the record was cut from.
        const record = flatString(data);
        const prefix = record.slice(0, at + 1);
        const suffix = record.slice(suffixAt);
        if (provesLiteral(prefix, suffix, slot.kind.path, record)) {
          slot.template = { prefix, suffix, frame };
          slot.misses = 0;
        } else {
          slot.misses++;
        }
        return;
      }
      slot.candidate = fingerprint;
      slot.misses++;
      return;
    }
  }
}

const NO_CANDIDATE = -1;

/**
 * FNV-1a of the record without its text (`prefixEnd` up to `suffixStart`), folded with both lengths; a small
 * non-negative integer, never NO_CANDIDATE.
 */
function envelopeFingerprint(record: string, prefixEnd: number, suffixStart: number): number {
  let hash = 0x811c9dc5 ^ prefixEnd;
  for (let i = 0; i < prefixEnd; i++) hash = Math.imul(hash ^ record.charCodeAt(i), 0x01000193);
  hash = Math.imul(hash ^ (record.length - suffixStart), 0x01000193);
  for (let i = suffixStart; i < record.length; i++) hash = Math.imul(hash ^ record.charCodeAt(i), 0x01000193);
  return hash & 0x3fffffff;
}

/** The probe parse: with PROBE in place of the literal, the value at `path` is PROBE. */
function provesLiteral(prefix: string, suffix: string, path: Path, data: string): boolean {
  if (data.includes(PROBE)) return false;
  let envelope: unknown;
  try {
    envelope = JSON.parse(prefix + PROBE + suffix);
  } catch {
    return false;
  }
  return isObject(envelope) && valueAt(envelope.result, path) === PROBE;
}

/** The value of a string literal's body, when it is exactly one string body; undefined otherwise. */
function stringBody(body: string): string | undefined {
  if (!NEEDS_DECODING.test(body)) return flatString(body);
  try {
    const value: unknown = JSON.parse(`"${body}"`);
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

function valueAt(value: unknown, path: Path): unknown {
  let at = value;
  for (const key of path) {
    if (typeof key === "number" ? !Array.isArray(at) : !isObject(at)) return undefined;
    at = (at as Record<string | number, unknown>)[key];
  }
  return at;
}
