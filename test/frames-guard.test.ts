// The A2A frame decoder's fast guards must never accept what the zod schemas (the definition) refuse,
// and must accept the ordinary frames, or the fast path would be either unsafe or useless.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FAST_GUARDS, STREAM_SCHEMAS, decodeStreamResult } from "../src/a2a/frames.js";
import { a2aFrames } from "../marbles/harness.js";
import { parseJson } from "../src/a2a/bodies.js";
import { UPSTREAM_LIMITS } from "../src/a2a/limits.js";

const odd = fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.constant([]), fc.dictionary(fc.string(), fc.string()));
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(fc.oneof(arb, odd), { nil: undefined });
const part = fc.record({ text: maybe(fc.string()), mediaType: maybe(fc.string()), metadata: maybe(fc.object()) }, { requiredKeys: [] });
const message = fc.record(
  { messageId: maybe(fc.string()), role: maybe(fc.string()), parts: maybe(fc.array(fc.oneof(part, odd))), metadata: maybe(fc.object()) },
  { requiredKeys: [] },
);
const status = fc.record({ state: maybe(fc.string()), message: maybe(message), timestamp: maybe(fc.string()) }, { requiredKeys: [] });
const payload = fc.record(
  {
    id: maybe(fc.string()),
    taskId: maybe(fc.string()),
    contextId: maybe(fc.string()),
    status: maybe(status),
    history: maybe(fc.array(fc.oneof(message, odd))),
    metadata: maybe(fc.object()),
    artifact: maybe(fc.record({ artifactId: maybe(fc.string()), parts: maybe(fc.array(part)) }, { requiredKeys: [] })),
    append: maybe(fc.boolean()),
    parts: maybe(fc.array(part)),
  },
  { requiredKeys: [] },
);

describe("A2A frame fast guards", () => {
  for (const key of Object.keys(FAST_GUARDS) as (keyof typeof FAST_GUARDS)[]) {
    it(`${key}: the guard accepts only what the schema accepts`, () => {
      fc.assert(
        fc.property(fc.oneof(payload, odd), (x) => {
          if (FAST_GUARDS[key](x)) expect(STREAM_SCHEMAS[key].safeParse(x).success).toBe(true);
        }),
        { numRuns: 3000 },
      );
    });
  }

  it("takes the fast path for the kernel's ordinary frames", () => {
    const f = a2aFrames();
    const frames = [f.task(), f.text("hi"), f.thinking("x"), f.toolInput("c", "bash", { a: 1 }), f.permission("p", "c"), f.artifact({ artifactId: "a", parts: [{ text: "x" }] })];
    for (const frame of frames) {
      const [key, value] = Object.entries(frame)[0] as [keyof typeof FAST_GUARDS, unknown];
      expect(FAST_GUARDS[key](value)).toBe(true);
      expect(decodeStreamResult(frame)).toBe(frame);
    }
  });
});

describe("parseJson's depth bound", () => {
  const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
  it("refuses a value nested deeper than the limit, and takes one at the limit", () => {
    expect(() => parseJson(nested(UPSTREAM_LIMITS.maxDepth + 1))).toThrow();
    expect(parseJson(nested(UPSTREAM_LIMITS.maxDepth))).toBeDefined();
  });
  it("takes a wide, shallow value with more brackets than the limit, and brackets inside strings", () => {
    const wide = JSON.stringify({ items: Array.from({ length: 3 * UPSTREAM_LIMITS.maxDepth }, (_, i) => ({ i, text: "[{".repeat(5) })) });
    expect(parseJson(wide)).toEqual(JSON.parse(wide));
  });
});
