// dedupePipeline works on A2A frames: the letters here are frames, and the values say which envelope ids
// each output frame still carries.
import { describe, expect, it } from "vitest";
import { dedupePipeline } from "../operators/dedupe-pipeline.js";
import type { A2AStreamResponse } from "../operators/types.js";
import { a2aFrames, runMarbles } from "./harness.js";

const f = a2aFrames();
const env = (eventId: string | undefined, sequence: number) => ({ eventType: "stack_progress", sequence, ...(eventId ? { eventId } : {}) });
const ids = (frame: A2AStreamResponse): string[] => {
  const iac = (frame as { statusUpdate: { metadata: { iac_code: Record<string, unknown> } } }).statusUpdate.metadata.iac_code;
  const single = iac.pipeline ? [iac.pipeline] : [];
  const batch = (iac.pipelineBatch as { events?: unknown[] } | undefined)?.events ?? [];
  return [...single, ...batch].map((e) => (e as { eventId?: string; sequence: number }).eventId ?? `#${(e as { sequence: number }).sequence}`);
};
const run = (frames: Record<string, A2AStreamResponse>, marble: string, options = {}) => {
  let out: string[][] = [];
  runMarbles((a, b) => expect(a).toEqual(b), ({ cold }) => {
    out = [];
    cold(marble, frames).pipe(dedupePipeline(options)).subscribe((frame) => out.push(ids(frame)));
  });
  return out;
};

describe("dedupePipeline", () => {
  it("drops envelopes whose eventId was delivered, inside batches too", () => {
    const out = run(
      { a: f.pipeline(env("e1", 1)), b: f.pipelineBatch([env("e1", 1), env("e2", 2)]), c: f.pipeline(env("e2", 2)) },
      "a-b-c|",
    );
    expect(out).toEqual([["e1"], ["e2"], []]);
  });

  it("keeps a late envelope with a new id below the highest sequence (late acks)", () => {
    const out = run({ a: f.pipeline(env("evt-31", 31)), b: f.pipeline(env("evt-33", 33)), c: f.pipeline(env("evt-32", 32)) }, "abc|");
    expect(out).toEqual([["evt-31"], ["evt-33"], ["evt-32"]]);
  });

  it("tolerates gaps; id-less envelopes are deduplicated by sequence only", () => {
    const out = run(
      { a: f.pipeline(env(undefined, 2)), b: f.pipeline(env(undefined, 7)), c: f.pipeline(env(undefined, 5)), d: f.pipeline(env(undefined, 8)) },
      "abcd|",
    );
    expect(out).toEqual([["#2"], ["#7"], [], ["#8"]]);
  });

  it("starts id-less dedupe from a persisted cursor, new ids below it still pass (recovery gap fill)", () => {
    const out = run({ a: f.pipelineBatch([env(undefined, 3), env("evt-4", 4), env(undefined, 11)]) }, "a|", { afterSequence: 10 });
    expect(out).toEqual([["evt-4", "#11"]]);
  });

  it("passes frames without pipeline envelopes untouched and never mutates its input", () => {
    const frame = f.pipelineBatch([env("x", 1), env("x", 1)]);
    const copy = structuredClone(frame);
    const text = f.text("hi");
    let passed: A2AStreamResponse | undefined;
    runMarbles((a, b) => expect(a).toEqual(b), ({ cold }) => {
      cold("ab|", { a: frame, b: text }).pipe(dedupePipeline()).subscribe((x) => {
        if (x !== frame) passed = x;
      });
    });
    expect(frame).toEqual(copy);
    expect(passed).toBe(text);
  });
});
