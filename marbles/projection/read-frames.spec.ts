// readFrames: one A2A frame in, its parts out, in the order the frame's events come out, all at the frame's time.
import { Subject } from "rxjs";
import { describe, expect, it } from "vitest";
import { readFrames } from "../../operators/projection/read-frames.js";
import { a2aFrames, runMarbles } from "../harness.js";

const f = a2aFrames();
const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);
const frame = (time: number) => ({ type: "A2A_FRAME", time, taskId: "task-a1", contextId: "ctx-a1", sessionId: "sess-a1" });

describe("readFrames", () => {
  it("a text frame: its ids, its status text (a working state ends nothing: no part)", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const out = cold("-a", { a: f.text("Hello") }).pipe(readFrames());
      expectObservable(out).toBe("-(ab)", {
        a: frame(1),
        b: { type: "A2A_STATUS_TEXT", time: 1, delta: "Hello", messageId: "task-a1-message", final: false },
      });
    });
  });

  it("a tool's input, then its result; a permission is a required input before the state", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const out = cold("a 9ms b", { a: f.toolInput("c1", "bash", { cmd: "ls" }), b: f.permission("p-1", "c1", "bash") }).pipe(readFrames());
      expectObservable(out).toBe("(ab) 6ms (def)", {
        a: frame(0),
        b: { type: "A2A_TOOL_CALL", time: 0, toolUseId: "c1", name: "bash", ofCurrentMessage: true, args: '{"cmd":"ls"}' },
        d: frame(10),
        e: expect.objectContaining({ type: "A2A_REQUIRED_INPUTS", time: 10, inputs: [expect.objectContaining({ value: expect.objectContaining({ inputId: "p-1" }) })] }),
        f: { type: "A2A_STATE", time: 10, state: "input-required" },
      });
    });
  });

  it("a tool's input keeps a \"__proto__\" key as data, at any depth (as JSON.parse read it from the kernel)", () => {
    const input = JSON.parse('{"b":{"__proto__":"x","c":[{"__proto__":null}]},"__proto__":{"a":1}}') as Record<string, unknown>;
    runMarbles(eq, ({ cold, expectObservable }) => {
      const out = cold("a", { a: f.toolInput("c1", "bash", input) }).pipe(readFrames());
      expectObservable(out).toBe("(ab)", {
        a: frame(0),
        b: { type: "A2A_TOOL_CALL", time: 0, toolUseId: "c1", name: "bash", ofCurrentMessage: true, args: '{"__proto__":{"a":1},"b":{"__proto__":"x","c":[{"__proto__":null}]}}' },
      });
    });
  });

  it("a task frame without status text offers its history; with historyFallback off it does not", () => {
    const history = [{ messageId: "h1", role: "ROLE_AGENT", parts: [{ text: "answer" }] }];
    runMarbles(eq, ({ cold, expectObservable }) => {
      expectObservable(cold("a", { a: f.task("COMPLETED", { history }) }).pipe(readFrames())).toBe("(abc)", {
        a: { type: "A2A_FRAME", time: 0, taskId: "task-a1", contextId: "ctx-a1" },
        b: { type: "A2A_STATUS_TEXT", time: 0, delta: "", final: false, history: { text: "answer", messageId: "h1" } },
        c: { type: "A2A_STATE", time: 0, state: "completed" },
      });
      expectObservable(cold("a", { a: f.task("COMPLETED", { history }) }).pipe(readFrames({ historyFallback: false }))).toBe("(ac)", {
        a: { type: "A2A_FRAME", time: 0, taskId: "task-a1", contextId: "ctx-a1" },
        c: { type: "A2A_STATE", time: 0, state: "completed" },
      });
    });
  });

  it("with skipRepeatedIds, a frame part only when the ids differ from the last one emitted", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const frames = cold("a 9ms b 9ms c 9ms d", { a: f.text("a"), b: f.text("b"), c: f.task("WORKING"), d: f.text("d") });
      expectObservable(frames.pipe(readFrames({ skipRepeatedIds: true }))).toBe("(ab) 6ms b 9ms c 9ms (eb)", {
        a: frame(0),
        b: expect.objectContaining({ type: "A2A_STATUS_TEXT" }),
        // A task frame carries no session id: other ids, so a part (and no text).
        c: { type: "A2A_FRAME", time: 20, taskId: "task-a1", contextId: "ctx-a1" },
        e: frame(30),
      });
    });
  });

  it("a frame it cannot read is A2A_PROTOCOL_ERROR", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      expectObservable(cold("a", { a: null as never }).pipe(readFrames())).toBe("#", undefined, expect.objectContaining({ code: "A2A_PROTOCOL_ERROR" }));
    });
  });

  it("on the wall clock, the frames of one turn of the event loop share one reading of the clock; the next turn reads it again", async () => {
    const frames = new Subject<ReturnType<typeof f.text>>();
    const times: number[] = [];
    frames.pipe(readFrames()).subscribe((part) => times.push((part as { time: number }).time));
    frames.next(f.text("one"));
    const until = Date.now() + 5;
    while (Date.now() < until) {
      // The frames of one upstream chunk are read at once; this one's come 5 ms apart within the turn.
    }
    frames.next(f.text("two"));
    await new Promise((resolve) => setTimeout(resolve, 5));
    frames.next(f.text("three"));
    expect(times).toHaveLength(6);
    expect(new Set(times.slice(0, 4)).size).toBe(1);
    expect(times[4]! - times[0]!).toBeGreaterThanOrEqual(5);
  });
});
