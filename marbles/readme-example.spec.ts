// The README's harness example, kept true.
import { describe, expect, it } from "vitest";
import { createAguiPipeline } from "../operators/index.js";
import { a2aFrames, collectInVirtualTime, trace, verifyAguiStream } from "./index.js";

describe("README example", () => {
  it("traces reasoning, text and the end of a turn", () => {
    const f = a2aFrames();
    const events = collectInVirtualTime([f.thinking("hmm"), f.text("Hello"), f.turnEnd()], (scheduler) =>
      createAguiPipeline({ threadId: "t", runId: "r", heartbeat: false, scheduler }),
    );
    expect(trace(events as never)).toBe("a rmc ozst nf");
    expect(verifyAguiStream(events, { strict: true })).toEqual([]);
  });
});
