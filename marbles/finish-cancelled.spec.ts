// Alphabet: a RUN_STARTED · s/n TEXT_MESSAGE_START/END · e RUN_ERROR CANCELLED · x RUN_ERROR other · f RUN_FINISHED cancelled.
import { describe, expect, it } from "vitest";
import { balanceSpans } from "../operators/balance-spans.js";
import { finishCancelled } from "../operators/finish-cancelled.js";
import { letters, runMarbles } from "./harness.js";

const ev = {
  a: { type: "RUN_STARTED", threadId: "t", runId: "r" },
  s: { type: "TEXT_MESSAGE_START", messageId: "m1" },
  e: { type: "RUN_ERROR", code: "CANCELLED", message: "The execution was cancelled.", timestamp: 7 },
  x: { type: "RUN_ERROR", code: "A2A_EXECUTION_FAILED", message: "The A2A execution failed.", timestamp: 7 },
};
const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);

describe("finishCancelled", () => {
  it("a cancelled run ends RUN_FINISHED cancelled, after the spans balanceSpans closed", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = cold("a-s-e", ev).pipe(balanceSpans(), finishCancelled({ threadId: "t", runId: "r" }));
      expectObservable(src.pipe(letters())).toBe("a-s-(nf|)");
    });
  });

  it("keeps the thread, run, timestamp and usage and carries no message, interrupts or result", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const usage = [{ inputTokens: 1, outputTokens: 2, totalTokens: 3 }];
      const src = cold("e", { e: { ...ev.e, usage } }).pipe(finishCancelled({ threadId: "t", runId: "r" }));
      expectObservable(src).toBe("e", {
        e: { type: "RUN_FINISHED", threadId: "t", runId: "r", outcome: { type: "cancelled" }, usage, timestamp: 7 },
      });
    });
  });

  it("other errors stay RUN_ERROR", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      expectObservable(cold("a-x", ev).pipe(finishCancelled({ threadId: "t", runId: "r" }), letters())).toBe("a-e");
    });
  });
});
