// totalUsage: usage reports → running totals per provider and model, saturating; the totals already passed on stay as they were.
import { describe, expect, it } from "vitest";
import { totalUsage } from "../../operators/projection/total-usage.js";
import { runMarbles } from "../harness.js";
import { tenApart } from "./timeline.js";

const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);
const report = (usage: unknown) => ({ type: "A2A_USAGE", time: 0, usage });
const zero = { inputTokens: 0, outputTokens: 0, totalTokens: 0, cachedInputTokens: 0 };

describe("totalUsage", () => {
  it("adds per provider and model; a non-object counts for nothing; other parts pass", () => {
    const state = { type: "A2A_STATE", time: 0, state: "completed" };
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = cold(tenApart("a", "b", "c", "d", "s"), {
        a: report({ model: "m", inputTokens: 3.0, outputTokens: 1 }),
        b: report("nonsense"),
        c: report({ model: "m", inputTokens: 2, cachedInputTokens: 1 }),
        d: report({ provider: "p", totalTokens: 9, inputTokens: true }),
        s: state,
      });
      expectObservable(src.pipe(totalUsage())).toBe(tenApart("1", "", "2", "3", "s"), {
        1: { type: "A2A_USAGE_TOTALS", usage: [{ ...zero, model: "m", inputTokens: 3, outputTokens: 1 }] },
        2: { type: "A2A_USAGE_TOTALS", usage: [{ ...zero, model: "m", inputTokens: 5, outputTokens: 1, cachedInputTokens: 1 }] },
        3: {
          type: "A2A_USAGE_TOTALS",
          usage: [{ ...zero, model: "m", inputTokens: 5, outputTokens: 1, cachedInputTokens: 1 }, { ...zero, provider: "p", totalTokens: 9 }],
        },
        s: state,
      });
    });
  });

  it("sums saturate at 2^53 - 1", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = cold("ab", { a: report({ inputTokens: 1e308 }), b: report({ inputTokens: 1e308 }) });
      const max = Number.MAX_SAFE_INTEGER;
      expectObservable(src.pipe(totalUsage())).toBe("ab", {
        a: { type: "A2A_USAGE_TOTALS", usage: [{ ...zero, inputTokens: max }] },
        b: { type: "A2A_USAGE_TOTALS", usage: [{ ...zero, inputTokens: max }] },
      });
    });
  });
});
