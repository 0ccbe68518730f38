// Alphabet (marbles/harness.ts): a RUN_STARTED f RUN_FINISHED e RUN_ERROR · s/t/n TEXT_MESSAGE_START/CONTENT/END ·
// r/m/c/o/z REASONING_START/MESSAGE_START/MESSAGE_CONTENT/MESSAGE_END/END · T/A/E/X TOOL_CALL_START/ARGS/END/RESULT ·
// S/F STEP_STARTED/FINISHED · u CUSTOM. One A2A frame per virtual ms; each word of a trace is what one frame produced.
import { describe, expect, it } from "vitest";
import { projectA2A, type ProjectA2AOptions } from "../operators/project-a2a.js";
import { isProjectionFact, type ProjectionFact } from "../operators/facts.js";
import { namespaceCustom } from "../operators/namespace-custom.js";
import type { A2AStreamResponse, AguiEvent } from "../operators/types.js";
import { a2aFrames, collectInVirtualTime, trace } from "./harness.js";

const f = a2aFrames();
const base: ProjectA2AOptions = { threadId: "t1", runId: "r1", contextId: "ctx-a1", newId: () => "x" };

/** Everything projectA2A emits (namespaced), the facts it learned included. */
function projectWithFacts(frames: A2AStreamResponse[], options: Partial<ProjectA2AOptions> = {}, tail = "|"): (AguiEvent | ProjectionFact)[] {
  return collectInVirtualTime(frames, (scheduler) => (src) => src.pipe(projectA2A({ ...base, ...options, scheduler }), namespaceCustom()), tail);
}

/** The AG-UI events projectA2A emits (facts are internal items: createAguiPipeline drops them). */
function project(frames: A2AStreamResponse[], options: Partial<ProjectA2AOptions> = {}, tail = "|"): AguiEvent[] {
  return projectWithFacts(frames, options, tail).filter((item): item is AguiEvent => !isProjectionFact(item));
}

describe("projectA2A", () => {
  it("projects a normal turn: reasoning, text, a tool call, usage, the duplicate final suppressed", () => {
    const events = project([
      f.task(), f.working(), f.thinking("hmm"), f.thinking(" ok"), f.text("Hello "), f.text("world"),
      f.toolStarted("call_1", "read_file"), f.toolInput("call_1", "read_file", { path: "a.txt" }),
      f.toolResult("call_1", "read_file", "content"), f.usage({ inputTokens: 812.0, outputTokens: 40.0, totalTokens: 852.0 }),
      f.text(" done."), f.final("Hello world done."), f.turnEnd(),
    ]);
    // task and working project nothing; usage and the repeated final neither
    expect(trace(events)).toBe("a rmc c ozst t T AE X t f");
    const finished = events.at(-1) as AguiEvent & { outcome: unknown; usage: unknown };
    expect(finished.outcome).toEqual({ type: "success" });
    expect(finished.usage).toEqual([{ inputTokens: 812, outputTokens: 40, totalTokens: 852, cachedInputTokens: 0 }]);
    const args = events.find((e) => e.type === "TOOL_CALL_ARGS") as { delta: string };
    expect(args.delta).toBe('{"path":"a.txt"}');
    const start = events.find((e) => e.type === "TOOL_CALL_START") as { parentMessageId?: string };
    expect(start.parentMessageId).toBe("task-a1-message");
    const text = events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => (e as { delta: string }).delta);
    expect(text).toEqual(["Hello ", "world", " done."]);
  });

  it("emits the session event once both task and session ids are known", () => {
    const events = project([f.task(), f.working(), f.turnEnd()], { session: { executionId: "exec-1", rosInvocationId: "inv-1" } });
    expect(trace(events)).toBe("a u f");
    expect(events[1]).toMatchObject({
      type: "CUSTOM",
      name: "iac-code.session.v1",
      value: { schemaVersion: 1, threadId: "t1", aguiRunId: "r1", executionId: "exec-1", contextId: "ctx-a1", taskId: "task-a1", rosInvocationId: "inv-1", sessionId: "sess-a1" },
    });
  });

  it("uses the assistantFinal text when no delta was streamed", () => {
    const events = project([f.task(), f.final("All at once."), f.turnEnd()]);
    expect(trace(events)).toBe("a st f");
  });

  it("closes reasoning before text and reopens it under the same id", () => {
    const events = project([f.thinking("a"), f.text("x"), f.thinking("b"), f.turnEnd()]);
    expect(trace(events)).toBe("a rmc ozst rmc f");
    const ids = events.filter((e) => e.type === "REASONING_START").map((e) => (e as { messageId: string }).messageId);
    expect(ids).toEqual(["reasoning-r1", "reasoning-task-a1-message"]);
  });

  it("a result that arrives before the input completed closes the call first, and is emitted once", () => {
    const events = project([f.toolStarted("c1", "bash"), f.toolResult("c1", "bash", { ok: true }), f.toolResult("c1", "bash", "again"), f.turnEnd()]);
    expect(trace(events)).toBe("a T EX f");
    expect(events[3]).toMatchObject({ type: "TOOL_CALL_RESULT", messageId: "tool-result-c1", content: '{"ok":true}', role: "tool" });
  });

  it("tool progress and artifacts leave as namespaced CUSTOM events", () => {
    const events = project([
      f.toolProgress("c1", "mcp", { mcp: { progress: 1 } }),
      f.artifact({ artifactId: "a1", name: "main.yaml", parts: [] }),
      f.turnEnd(),
    ]);
    expect(trace(events)).toBe("a u u f");
    expect(events[1]).toMatchObject({ name: "iac-code.tool-progress.v1", value: { schemaVersion: 1, status: "progress", toolUseId: "c1" } });
    expect(events[2]).toMatchObject({ name: "iac-code.artifact.v1", value: { schemaVersion: 1, artifactId: "a1", name: "main.yaml" } });
  });

  it.each([
    ["FAILED", f.failed(), "A2A_EXECUTION_FAILED"],
    ["REJECTED", f.status("REJECTED"), "A2A_EXECUTION_FAILED"],
    ["AUTH_REQUIRED", f.status("AUTH_REQUIRED"), "A2A_EXECUTION_FAILED"],
    ["CANCELED", f.canceled(), "CANCELLED"],
  ])("state %s ends the run with RUN_ERROR", (_state, frame, code) => {
    const events = project([f.task(), frame, f.text("ignored after the terminal state")]);
    expect(events.at(-1)).toMatchObject({ type: "RUN_ERROR", code });
    expect(Object.keys(events.at(-1)!).sort()).toEqual(["code", "message", "timestamp", "type"]);
    expect(events.some((e) => e.type === "TEXT_MESSAGE_CONTENT" && (e as { delta: string }).delta.startsWith("ignored"))).toBe(false);
  });

  it("COMPLETED is success; a stream that ends while WORKING is A2A_EXECUTION_FAILED", () => {
    expect(project([f.task(), f.completed()]).at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(project([f.task(), f.working()]).at(-1)).toMatchObject({ type: "RUN_ERROR", code: "A2A_EXECUTION_FAILED" });
  });

  it("a changed task or context id is A2A_PROTOCOL_ERROR", () => {
    const other = a2aFrames({ taskId: "task-b" });
    expect(project([f.task(), other.working()]).at(-1)).toMatchObject({ type: "RUN_ERROR", code: "A2A_PROTOCOL_ERROR" });
    const ctx = a2aFrames({ contextId: "ctx-x" });
    expect(project([ctx.task()]).at(-1)).toMatchObject({ type: "RUN_ERROR", code: "A2A_PROTOCOL_ERROR" });
    const sess = a2aFrames({ sessionId: "sess-other" });
    expect(project([f.working(), sess.working()]).at(-1)).toMatchObject({ type: "RUN_ERROR", code: "A2A_PROTOCOL_ERROR" });
  });

  it("a source error becomes RUN_ERROR A2A_UNAVAILABLE, a RunError keeps its code", () => {
    expect(project([f.task()], {}, "#").at(-1)).toMatchObject({ type: "RUN_ERROR", code: "A2A_UNAVAILABLE" });
  });

  it("a required input ends the run with an interrupt outcome", () => {
    const items = projectWithFacts(
      [f.task(), f.text("Deploying"), f.toolStarted("call_d", "ros_deploy"), f.permission("permission-1", "call_d", "ros_deploy"), f.text("never")],
      { interruptTtlMs: 540_000 },
    );
    const events = items.filter((item): item is AguiEvent => !isProjectionFact(item));
    const seen = items.flatMap((item) => (isProjectionFact(item) && item.fact === "interrupts" ? item.pending.map((p) => p.input.value.inputId) : []));
    expect(trace(events)).toBe("a st T f");
    expect(seen).toEqual(["permission-1"]);
    const outcome = (events.at(-1) as { outcome: { type: string; interrupts: Record<string, unknown>[] } }).outcome;
    expect(outcome.type).toBe("interrupt");
    expect(outcome.interrupts).toHaveLength(1);
    expect(outcome.interrupts[0]).toMatchObject({
      id: "permission-1",
      reason: "tool_call",
      message: "Allow ros_deploy?",
      toolCallId: "call_d",
      responseSchema: { properties: { decision: { enum: ["allow_once", "deny"] } } },
      metadata: { schemaVersion: 1, kind: "permission", toolName: "ros_deploy", standardOptions: [{ id: "allow_once", title: "Allow once" }, { id: "deny", title: "Deny" }] },
    });
    // expiresAt = virtual now (the 4th frame, at 4 ms) + TTL
    expect(outcome.interrupts[0]!.expiresAt).toBe(new Date(4 + 540_000).toISOString());
  });

  it("an input already applied in this execution is not a new interrupt", () => {
    const events = project([f.permission("permission-1", "call_d"), f.turnEnd()], { appliedInputIds: ["permission-1"] });
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });

  it("an interrupt for another task is A2A_PROTOCOL_ERROR", () => {
    const other = a2aFrames({ taskId: "task-zz" });
    const frame = other.permission("permission-1", "c");
    (frame as { statusUpdate: { taskId: string } }).statusUpdate.taskId = "task-a1";
    expect(project([f.task(), frame]).at(-1)).toMatchObject({ type: "RUN_ERROR", code: "A2A_PROTOCOL_ERROR" });
  });

  it("RUN_STARTED carries parentRunId when given, never null fields", () => {
    const events = project([f.turnEnd()], { parentRunId: "r0" });
    expect(events[0]).toEqual({ type: "RUN_STARTED", threadId: "t1", runId: "r1", parentRunId: "r0", timestamp: 0 });
    const plain = project([f.turnEnd()]);
    expect(Object.keys(plain[0]!)).toEqual(["type", "threadId", "runId", "timestamp"]);
  });

  it("falls back to the task history only before any text", () => {
    const history = [
      { messageId: "m1", role: "ROLE_USER", parts: [{ text: "question" }] },
      { messageId: "h1", role: "ROLE_AGENT", parts: [{ text: "answer " }] },
      { messageId: "h2", role: "ROLE_AGENT", parts: [{ text: "part two" }] },
    ];
    const events = project([f.task("COMPLETED", { history })]);
    expect(trace(events)).toBe("a stf");
    expect(events[2]).toMatchObject({ messageId: "h2", delta: "answer part two" });
    expect(trace(project([f.task("COMPLETED", { history })], { historyFallback: false }))).toBe("a f");
  });
});
