// Alphabet: a RUN_STARTED · s/t/n TEXT_MESSAGE_START/CONTENT/END · r/m/c/o/z reasoning span/message · T/A/E TOOL_CALL_START/ARGS/END ·
// S/F STEP_STARTED/FINISHED · f RUN_FINISHED · e RUN_ERROR.
import { lastValueFrom, throwError, toArray } from "rxjs";
import { describe, expect, it } from "vitest";
import { balanceSpans } from "../operators/balance-spans.js";
import { RunError } from "../operators/types.js";
import { letters, runMarbles } from "./harness.js";

const ev = {
  a: { type: "RUN_STARTED", threadId: "t", runId: "r" },
  s: { type: "TEXT_MESSAGE_START", messageId: "m1" },
  t: { type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "x" },
  n: { type: "TEXT_MESSAGE_END", messageId: "m1" },
  r: { type: "REASONING_START", messageId: "r1" },
  m: { type: "REASONING_MESSAGE_START", messageId: "r1", role: "reasoning" },
  T: { type: "TOOL_CALL_START", toolCallId: "c1", toolCallName: "bash" },
  S: { type: "STEP_STARTED", stepName: "plan" },
  f: { type: "RUN_FINISHED", threadId: "t", runId: "r", timestamp: 7 },
  e: { type: "RUN_ERROR", code: "X", message: "boom", timestamp: 7 },
};

describe("balanceSpans", () => {
  it("closes reasoning, tools, text, then steps before RUN_FINISHED, and completes", () => {
    runMarbles((a, b) => expect(a).toEqual(b), ({ cold, expectObservable }) => {
      const src = cold("a-S-s-t-r-m-T-f-t|", ev);
      expectObservable(src.pipe(balanceSpans(), letters())).toBe("a-S-s-t-r-m-T-(ozEnFf|)");
    });
  });

  it("closes everything before RUN_ERROR too", () => {
    runMarbles((a, b) => expect(a).toEqual(b), ({ cold, expectObservable }) => {
      expectObservable(cold("a-s-T-e", ev).pipe(balanceSpans(), letters())).toBe("a-s-T-(Ene|)");
    });
  });

  it("closing events carry the terminal event's timestamp", () => {
    runMarbles((a, b) => expect(a).toEqual(b), ({ cold, expectObservable }) => {
      expectObservable(cold("a-s-f", ev).pipe(balanceSpans())).toBe("a-s-(nf|)", {
        a: ev.a,
        s: ev.s,
        n: { type: "TEXT_MESSAGE_END", messageId: "m1", timestamp: 7 },
        f: ev.f,
      });
    });
  });

  it("a closed span is not closed again", () => {
    runMarbles((a, b) => expect(a).toEqual(b), ({ cold, expectObservable }) => {
      expectObservable(cold("a-s-t-n-f", ev).pipe(balanceSpans(), letters())).toBe("a-s-t-n-(f|)");
    });
  });

  it("a source error becomes a balanced RUN_ERROR with the RunError's code", () => {
    runMarbles((a, b) => expect(a).toEqual(b), ({ cold, expectObservable }) => {
      const out = cold("a-s-#", ev, new RunError("A2A_UNAVAILABLE", "down")).pipe(balanceSpans());
      expectObservable(out.pipe(letters())).toBe("a-s-(ne|)");
    });
  });

  it("the RUN_ERROR a source error becomes speaks the run's language", async () => {
    const translate = (english: string, language?: string) => (language === "de" ? `[de] ${english}` : english);
    const events = await lastValueFrom(
      throwError(() => new RunError("A2A_UNAVAILABLE", "down")).pipe(balanceSpans({ translate, language: "de" }), toArray()),
    );
    expect(events).toMatchObject([{ type: "RUN_ERROR", code: "A2A_UNAVAILABLE", message: "[de] down" }]);
  });

  it("only the first terminal event passes", () => {
    runMarbles((a, b) => expect(a).toEqual(b), ({ cold, expectObservable, expectSubscriptions }) => {
      const src = cold("a-f-e-|", ev);
      expectObservable(src.pipe(balanceSpans(), letters())).toBe("a-(f|)");
      expectSubscriptions(src.subscriptions).toBe("^-!");
    });
  });
});
