// guardIdentity: the first task and session ids become facts before their frame; another task, context or session is an error.
import { describe, expect, it } from "vitest";
import { fact } from "../../operators/facts.js";
import { guardIdentity } from "../../operators/projection/guard-identity.js";
import { runMarbles } from "../harness.js";

const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);
const frame = (ids: { taskId?: string; contextId?: string; sessionId?: string }) => ({ type: "A2A_FRAME", time: 0, ...ids });
const protocolError = expect.objectContaining({ name: "RunError", code: "A2A_PROTOCOL_ERROR" });

describe("guardIdentity", () => {
  it("announces each id once, before the frame that names it; other parts pass untouched", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const text = { type: "A2A_TEXT", time: 0, delta: "x", parallel: false };
      const src = cold("a 9ms b 9ms c", { a: frame({ taskId: "t1" }), b: text, c: frame({ taskId: "t1", sessionId: "s1" }) });
      expectObservable(src.pipe(guardIdentity({ contextId: "ctx" }))).toBe("(xa) 6ms b 9ms (yc)", {
        x: fact("taskId", { taskId: "t1" }),
        a: frame({ taskId: "t1" }),
        b: text,
        y: fact("sessionId", { sessionId: "s1" }),
        c: frame({ taskId: "t1", sessionId: "s1" }),
      });
    });
  });

  it("a known id is no fact", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = cold("a", { a: frame({ taskId: "t1", sessionId: "s1" }) });
      expectObservable(src.pipe(guardIdentity({ taskId: "t1", sessionId: "s1" }))).toBe("a", { a: frame({ taskId: "t1", sessionId: "s1" }) });
    });
  });

  it("another task, context or session ends the stream with A2A_PROTOCOL_ERROR", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      expectObservable(cold("a", { a: frame({ taskId: "t2" }) }).pipe(guardIdentity({ taskId: "t1" }))).toBe("#", undefined, protocolError);
      expectObservable(cold("a", { a: frame({ contextId: "other" }) }).pipe(guardIdentity({ contextId: "ctx" }))).toBe("#", undefined, protocolError);
      expectObservable(cold("a 9ms b", { a: frame({ sessionId: "s1" }), b: frame({ sessionId: "s2" }) }).pipe(guardIdentity())).toBe("(xa) 6ms #", {
        x: fact("sessionId", { sessionId: "s1" }),
        a: frame({ sessionId: "s1" }),
      }, protocolError);
    });
  });
});
