// mapTerminal: RUN_STARTED on subscribe, exactly one terminal event (with the usage so far) preceded by the outcome
// fact, then completion; nothing after it.
import { describe, expect, it } from "vitest";
import { fact } from "../../operators/facts.js";
import { mapTerminal } from "../../operators/projection/map-terminal.js";
import { RunError } from "../../operators/types.js";
import { runMarbles } from "../harness.js";

const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);
const state = (time: number, s: string) => ({ type: "A2A_STATE", time, state: s });
const started = { type: "RUN_STARTED", threadId: "t", runId: "r", timestamp: 0 };
const opts = { threadId: "t", runId: "r" };

describe("mapTerminal", () => {
  it("working passes nothing; completed ends the run with the usage totals; later parts are dropped", () => {
    const usage = [{ inputTokens: 1, outputTokens: 2, totalTokens: 3, cachedInputTokens: 0 }];
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = cold("-wu-c-w", { w: state(1, "working"), u: { type: "A2A_USAGE_TOTALS", usage }, c: state(4, "completed") });
      expectObservable(src.pipe(mapTerminal(opts))).toBe("a---(of|)", {
        a: started,
        o: fact("outcome", { outcome: "success", endedBy: "kernel" }),
        f: { type: "RUN_FINISHED", threadId: "t", runId: "r", outcome: { type: "success" }, timestamp: 4, usage },
      });
    });
  });

  it("an interrupt ends RUN_FINISHED interrupt; canceled, failed and an early end are RUN_ERROR the kernel caused", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const interrupts = [{ id: "p-1", reason: "tool_call" }];
      expectObservable(cold("-i", { i: { type: "A2A_INTERRUPT_END", time: 1, interrupts } }).pipe(mapTerminal({ ...opts, runStarted: false }))).toBe("-(of|)", {
        o: fact("outcome", { outcome: "interrupt", endedBy: "kernel" }),
        f: { type: "RUN_FINISHED", threadId: "t", runId: "r", outcome: { type: "interrupt", interrupts }, timestamp: 1 },
      });
      const ended = (code: string, message: string, timestamp: number) => ({
        o: fact("outcome", { outcome: "failed", code, endedBy: "kernel" }),
        e: { type: "RUN_ERROR", code, message, timestamp },
      });
      const noStart = { ...opts, runStarted: false };
      expectObservable(cold("-c", { c: state(1, "canceled") }).pipe(mapTerminal(noStart))).toBe("-(oe|)", ended("CANCELLED", "The execution was cancelled.", 1));
      expectObservable(cold("-c", { c: state(1, "rejected") }).pipe(mapTerminal(noStart))).toBe("-(oe|)", ended("A2A_EXECUTION_FAILED", "The A2A execution failed.", 1));
      expectObservable(cold("-w|", { w: state(1, "working") }).pipe(mapTerminal(noStart))).toBe("--(oe|)", ended("A2A_EXECUTION_FAILED", "The A2A execution failed.", 2));
    });
  });

  it("an error: a RunError keeps its code, anything else is A2A_UNAVAILABLE; the message is translated", () => {
    const translate = (english: string, language?: string) => `${language}:${english}`;
    runMarbles(eq, ({ cold, expectObservable }) => {
      const run = { ...opts, runStarted: false, translate, language: "xx" };
      expectObservable(cold<{ type: string }>("-#", undefined, new RunError("A2A_PROTOCOL_ERROR", "Bad frame.")).pipe(mapTerminal(run))).toBe("-(oe|)", {
        o: fact("outcome", { outcome: "failed", code: "A2A_PROTOCOL_ERROR", endedBy: "error" }),
        e: { type: "RUN_ERROR", code: "A2A_PROTOCOL_ERROR", message: "xx:Bad frame.", timestamp: 1 },
      });
      expectObservable(cold<{ type: string }>("-#", undefined, new Error("socket")).pipe(mapTerminal(run))).toBe("-(oe|)", {
        o: fact("outcome", { outcome: "failed", code: "A2A_UNAVAILABLE", endedBy: "error" }),
        e: { type: "RUN_ERROR", code: "A2A_UNAVAILABLE", message: "xx:The local A2A execution service is unavailable.", timestamp: 1 },
      });
    });
  });

  it("RUN_STARTED carries parentRunId when given; other items pass between it and the end", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const text = { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "x", timestamp: 1 };
      expectObservable(cold("-t|", { t: text }).pipe(mapTerminal({ ...opts, parentRunId: "r0" }))).toBe("at(oe|)", {
        a: { ...started, parentRunId: "r0" },
        t: text,
        o: fact("outcome", { outcome: "failed", code: "A2A_EXECUTION_FAILED", endedBy: "kernel" }),
        e: { type: "RUN_ERROR", code: "A2A_EXECUTION_FAILED", message: "The A2A execution failed.", timestamp: 2 },
      });
    });
  });
});
