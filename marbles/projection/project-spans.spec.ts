// projectSpans: text, reasoning and tool parts → their AG-UI spans (closing is balanceSpans' job).
// Alphabet (marbles/harness.ts): s/t/n TEXT_MESSAGE_START/CONTENT/END · r/m/c/o/z reasoning · T/A/E/X TOOL_CALL_START/ARGS/END/RESULT.
import { describe, expect, it } from "vitest";
import { projectSpans } from "../../operators/projection/project-spans.js";
import { letters, runMarbles } from "../harness.js";
import { tenApart } from "./timeline.js";

const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);
const parts = {
  h: { type: "A2A_REASONING", time: 0, thinking: { type: "raw_thinking", text: "hmm" } },
  a: { type: "A2A_STATUS_TEXT", time: 0, delta: "Hello", messageId: "m1", final: false },
  b: { type: "A2A_STATUS_TEXT", time: 0, delta: "Bye", messageId: "m2", final: false },
  f: { type: "A2A_STATUS_TEXT", time: 0, delta: "Hello", messageId: "m1", final: true },
  x: { type: "A2A_TOOL_CALL", time: 0, toolUseId: "c1", name: "bash", ofCurrentMessage: true },
  i: { type: "A2A_TOOL_CALL", time: 0, toolUseId: "c1", name: "bash", ofCurrentMessage: true, args: "{}" },
  y: { type: "A2A_TOOL_RESULT", time: 0, toolUseId: "c1", result: { ok: true } },
  p: { type: "A2A_TEXT", time: 0, delta: "P", messageId: "pm-1", parallel: true },
  q: { type: "A2A_TEXT", time: 0, delta: "Q", messageId: "pm-2", parallel: true },
  u: { type: "A2A_STATE", time: 0, state: "working" },
};

describe("projectSpans", () => {
  it("reasoning closes when text comes; status text ends the message before; a repeated final is dropped", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const out = cold(tenApart("h", "a", "b", "f"), parts).pipe(projectSpans({ runId: "r" }), letters());
      expectObservable(out).toBe(tenApart("(rmc)", "(ozst)", "(nst)", ""), undefined);
    });
  });

  it("a tool call starts once, its input completes once, its result ends it; the call's parent is the current message", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const out = cold(tenApart("a", "x", "i", "i", "y", "y"), parts).pipe(projectSpans({ runId: "r" }));
      expectObservable(out.pipe(letters())).toBe(tenApart("(st)", "T", "(AE)", "", "X", ""), undefined);
    });
    runMarbles(eq, ({ cold, expectObservable }) => {
      expectObservable(cold(tenApart("a", "x"), parts).pipe(projectSpans({ runId: "r" }))).toBe(tenApart("(st)", "T"), {
        s: { type: "TEXT_MESSAGE_START", messageId: "m1", role: "assistant", timestamp: 0 },
        t: { type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "Hello", timestamp: 0 },
        T: { type: "TOOL_CALL_START", toolCallId: "c1", toolCallName: "bash", parentMessageId: "m1", timestamp: 0 },
      });
    });
  });

  it("pipeline text keeps several messages open; other parts pass untouched", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      expectObservable(cold(tenApart("p", "q", "p", "u"), parts).pipe(projectSpans({ runId: "r" }))).toBe(tenApart("(12)", "(34)", "5", "u"), {
        1: { type: "TEXT_MESSAGE_START", messageId: "pm-1", role: "assistant", timestamp: 0 },
        2: { type: "TEXT_MESSAGE_CONTENT", messageId: "pm-1", delta: "P", timestamp: 0 },
        3: { type: "TEXT_MESSAGE_START", messageId: "pm-2", role: "assistant", timestamp: 0 },
        4: { type: "TEXT_MESSAGE_CONTENT", messageId: "pm-2", delta: "Q", timestamp: 0 },
        5: { type: "TEXT_MESSAGE_CONTENT", messageId: "pm-1", delta: "P", timestamp: 0 },
        u: parts.u,
      });
    });
  });

  it("history text only before any text; generated ids come from newId", () => {
    const history = { type: "A2A_STATUS_TEXT", time: 0, delta: "", final: false, history: { text: "from history" } };
    runMarbles(eq, ({ cold, expectObservable }) => {
      expectObservable(cold("a", { a: history }).pipe(projectSpans({ runId: "r", newId: () => "7" }))).toBe("(st)", {
        s: { type: "TEXT_MESSAGE_START", messageId: "assistant-7", role: "assistant", timestamp: 0 },
        t: { type: "TEXT_MESSAGE_CONTENT", messageId: "assistant-7", delta: "from history", timestamp: 0 },
      });
      expectObservable(cold(tenApart("a", "b"), { a: parts.a, b: history }).pipe(projectSpans({ runId: "r" }), letters())).toBe(tenApart("(st)", ""), undefined);
    });
  });
});
