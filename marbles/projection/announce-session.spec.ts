// announceSession: one iac-code.session.v1 signal, when the ids are known or on the first frame, or right before a
// terminal event the kernel caused; never for a run an error ended.
import { describe, expect, it } from "vitest";
import { fact } from "../../operators/facts.js";
import { announceSession, type AnnounceSessionOptions } from "../../operators/projection/announce-session.js";
import { runMarbles } from "../harness.js";

const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);
const frame = (time: number) => ({ type: "A2A_FRAME", time });
const base: AnnounceSessionOptions = { threadId: "t", runId: "r", contextId: "ctx", session: { executionId: "e", rosInvocationId: "i" } };
const signal = (timestamp: number, taskId: string | null, sessionId: string | null) => ({
  type: "IAC_CODE_SIGNAL",
  namespace: "session",
  value: { schemaVersion: 1, threadId: "t", aguiRunId: "r", executionId: "e", contextId: "ctx", taskId, rosInvocationId: "i", sessionId },
  timestamp,
});
const finished = { type: "RUN_FINISHED", threadId: "t", runId: "r", outcome: { type: "success" }, timestamp: 4 };
const failed = { type: "RUN_ERROR", code: "A2A_PROTOCOL_ERROR", message: "m", timestamp: 4 };

describe("announceSession", () => {
  it("'ids': once both ids are known, at that frame's time; frames themselves are consumed", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const task = fact("taskId", { taskId: "task-1" });
      const session = fact("sessionId", { sessionId: "sess-1" });
      const src = cold("(xa) 6ms (yb) 6ms c", { x: task, a: frame(0), y: session, b: frame(10), c: frame(20) });
      expectObservable(src.pipe(announceSession(base))).toBe("x 9ms (ys)", { x: task, y: session, s: signal(10, "task-1", "sess-1") });
    });
  });

  it("'first-frame': on the first frame, with what is known then", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = cold("a-b", { a: frame(0), b: frame(2) });
      const opts = { ...base, taskId: "task-1", session: { ...base.session!, sessionId: "sess-1", emitOn: "first-frame" as const } };
      expectObservable(src.pipe(announceSession(opts))).toBe("s", { s: signal(0, "task-1", "sess-1") });
    });
  });

  it("before a terminal event the kernel caused, not before one an error caused", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const byKernel = fact("outcome", { outcome: "success", endedBy: "kernel" });
      const byError = fact("outcome", { outcome: "failed", code: "A2A_PROTOCOL_ERROR", endedBy: "error" });
      expectObservable(cold("(of|)", { o: byKernel, f: finished }).pipe(announceSession(base))).toBe("(osf|)", { o: byKernel, s: signal(4, null, null), f: finished });
      expectObservable(cold("(oe|)", { o: byError, e: failed }).pipe(announceSession(base))).toBe("(oe|)", { o: byError, e: failed });
    });
  });

  it("without session info nothing is announced", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const byKernel = fact("outcome", { outcome: "success", endedBy: "kernel" });
      expectObservable(cold("a(of|)", { a: frame(0), o: byKernel, f: finished }).pipe(announceSession({ threadId: "t", runId: "r" }))).toBe("-(of|)", { o: byKernel, f: finished });
    });
  });
});
