// eventJson writes delta events directly: whatever object it is given, its output is JSON.stringify's, byte for byte.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { eventJson } from "../src/http/event-json.js";

const DELTAS = [
  ["TEXT_MESSAGE_CONTENT", "messageId"],
  ["REASONING_MESSAGE_CONTENT", "messageId"],
  ["TOOL_CALL_ARGS", "toolCallId"],
] as const;

function sameAsStringify(event: object): void {
  const value = event as { type: string };
  let expected: string | Error;
  try {
    expected = JSON.stringify(value);
  } catch (error) {
    expected = error as Error;
  }
  if (expected instanceof Error) expect(() => eventJson(value)).toThrow(expected.constructor as ErrorConstructor);
  else expect(eventJson(value)).toBe(expected);
}

// Text as a kernel may send it: any code unit, lone surrogates, the line separators, quotes and escapes.
const text = fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: fc.constantFrom("\u2028", "\u2029", "\ud800", "\udfff", '"', "\\", "\n", "\u0000", "é", "😀") }));
const timestamp = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e21, 1.5e-7, Number.MAX_SAFE_INTEGER + 2),
  fc.constant(undefined),
  fc.constant(null),
  fc.string(),
);
const anyValue = fc.oneof(text, timestamp, fc.jsonValue({ maxDepth: 2 }));

describe("eventJson", () => {
  it("writes the delta events of the projection as JSON.stringify does", () => {
    for (const [type, idKey] of DELTAS) {
      sameAsStringify({ type, [idKey]: "m-1", delta: "Hi", timestamp: 1_796_593_667_088 });
      sameAsStringify({ type, [idKey]: "m-1", delta: "Hi" });
      sameAsStringify({ type, [idKey]: 'm"\u2028', delta: "a\nb\u0000\ud800😀", timestamp: 1.5 });
    }
  });

  it("matches JSON.stringify on deltas of any text and timestamp", () => {
    fc.assert(
      fc.property(fc.constantFrom(...DELTAS), text, text, timestamp, fc.boolean(), ([type, idKey], id, delta, time, timed) => {
        sameAsStringify(timed ? { type, [idKey]: id, delta, timestamp: time } : { type, [idKey]: id, delta });
      }),
      { numRuns: 3_000 },
    );
  });

  it("matches JSON.stringify when the keys, their order or their values are not a delta's", () => {
    const keys = fc.constantFrom("type", "messageId", "toolCallId", "delta", "timestamp", "rawEvent", "0", "__proto__", "toJSON");
    fc.assert(
      fc.property(fc.constantFrom(...DELTAS.map(([type]) => type), "TEXT_MESSAGE_START", "CUSTOM"), fc.array(fc.tuple(keys, anyValue), { maxLength: 6 }), (type, entries) => {
        const event: Record<string, unknown> = { type };
        for (const [key, value] of entries) Object.defineProperty(event, key, { value, enumerable: true, configurable: true, writable: true });
        sameAsStringify(event);
      }),
      { numRuns: 3_000 },
    );
  });

  it("leaves objects that JSON.stringify treats specially to it", () => {
    const base = { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "d", timestamp: 1 };
    class Delta {
      type = "TEXT_MESSAGE_CONTENT";
      messageId = "m";
      delta = "d";
      toJSON() {
        return { replaced: true };
      }
    }
    sameAsStringify(new Delta());
    sameAsStringify(Object.assign(Object.create(null) as object, base));
    sameAsStringify({ ...base, timestamp: 1n });
    sameAsStringify(Object.defineProperty({ type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "d" }, "timestamp", { get: () => 7, enumerable: true }));
    sameAsStringify(Object.defineProperty({ ...base }, "delta", { value: "hidden", enumerable: false }));
    sameAsStringify({ ...base, [Symbol("s")]: 1 });
    const withInherited = Object.create({ inherited: 1 }) as Record<string, unknown>;
    Object.assign(withInherited, base);
    sameAsStringify(withInherited);
    sameAsStringify(Object.assign(["TEXT_MESSAGE_CONTENT"], base));
    sameAsStringify(Object.defineProperty({ ...base }, "toJSON", { value: () => "own, not enumerable" }));
    sameAsStringify(new Proxy({ ...base }, { get: (target, key, receiver) => (key === "toJSON" ? () => "from a proxy" : Reflect.get(target, key, receiver)) }));
    expect(eventJson(null as unknown as { type: string })).toBe("null");
  });

  it("writes what JSON.stringify writes when Object.prototype has been given keys", () => {
    const polluted = (key: string, value: unknown, enumerable: boolean, check: () => void) => {
      Object.defineProperty(Object.prototype, key, { value, enumerable, configurable: true, writable: true });
      try {
        check();
      } finally {
        delete (Object.prototype as Record<string, unknown>)[key];
      }
    };
    polluted("timestamp", 123, true, () => sameAsStringify({ type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "d" }));
    polluted("delta", "injected", true, () => sameAsStringify({ type: "TOOL_CALL_ARGS", toolCallId: "t" }));
    polluted("toJSON", () => "inherited", false, () => sameAsStringify({ type: "REASONING_MESSAGE_CONTENT", messageId: "m", delta: "d", timestamp: 1 }));
  });
});
