// iac-code closes the stream of a permission answer right after its `inputReceived` frames (a2a-upstream
// §8b); the rest of the turn is on the task. The gateway follows with SubscribeToTask, and when the turn
// already ended (-32001) with GetTask, so the resume still ends with the turn's real outcome.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RawA2AServer, RawExchange, RawResponder } from "../src/demo/index.js";
import { runWithHttpAgent, startStack, type Stack } from "./helpers/e2e.js";

const TASK = "task-fu";
let contextId = "";
/** The second scenario: the turn ends before the gateway subscribes (SubscribeToTask answers -32001). */
let subscribeIdle = false;
let answered = false;
const status = (state: string, iac: Record<string, unknown>, text?: string) => ({
  statusUpdate: {
    taskId: TASK,
    contextId,
    status: { state: `TASK_STATE_${state}`, ...(text && { message: { messageId: `${TASK}-message`, role: "ROLE_AGENT", parts: [{ text }] } }) },
    metadata: { iac_code: { iacCodeSessionId: "sess-fu", ...iac } },
  },
});
const input = {
  schemaVersion: 1, kind: "permission", requestTaskId: TASK, inputId: "permission-fu", toolUseId: "call_fu", toolName: "bash",
  prompt: "Run bash?", options: [{ id: "allow_once", label: "Allow" }, { id: "deny", label: "Deny" }], required: true,
};

function handle(ex: RawExchange, res: RawResponder): void {
  if (ex.http.url === "/iac-code/session/ensure-restored") return res.json(404, { error: "Not Found" });
  const reply = (result: unknown) => res.json(200, { jsonrpc: "2.0", id: ex.id, result });
  switch (ex.method) {
    case "SendStreamingMessage":
      res.sseStart();
      if (!ex.params.message.taskId) {
        contextId = ex.params.message.contextId;
        res.sseFrame({ task: { id: TASK, contextId, status: { state: "TASK_STATE_SUBMITTED" } } });
        res.sseFrame(status("WORKING", { tool: { status: "started", toolUseId: "call_fu", name: "bash" } }));
        res.sseFrame(status("INPUT_REQUIRED", { input: { ...input, contextId } }));
        return;
      }
      // The answer: acknowledged, then the stream closes early.
      answered = true;
      res.sseFrame(status("WORKING", { inputReceived: { kind: "permission", inputId: "permission-fu", toolUseId: "call_fu", decision: "allow_once" } }));
      res.end();
      return;
    case "GetTask": {
      const ended = subscribeIdle && answered;
      return reply({
        id: TASK,
        contextId,
        status: { state: ended ? "TASK_STATE_INPUT_REQUIRED" : "TASK_STATE_WORKING", message: { messageId: "old", role: "ROLE_AGENT", parts: [{ text: "stale text" }] } },
        history: [{ messageId: "h", role: "ROLE_AGENT", parts: [{ text: "history text" }] }],
        metadata: { iac_code: { iacCodeSessionId: "sess-fu", ...(ended ? {} : { input: { ...input, contextId } }) } },
      });
    }
    case "SubscribeToTask":
      if (subscribeIdle) return res.json(200, { jsonrpc: "2.0", id: ex.id, error: { code: -32001, message: "task is not active" } });
      res.sseStart();
      res.sseFrame({ task: { id: TASK, contextId, status: { state: "TASK_STATE_WORKING" } } });
      res.sseFrame(status("WORKING", { tool: { status: "completed", toolUseId: "call_fu", name: "bash", result: "exit 0" } }));
      res.sseFrame(status("WORKING", {}, "Done."));
      res.sseFrame(status("INPUT_REQUIRED", {}));
      res.end();
      return;
    default:
      res.json(200, { jsonrpc: "2.0", id: ex.id, error: { code: -32601, message: "no" } });
  }
}

let stack: Stack<RawA2AServer>;
beforeAll(async () => {
  stack = await startStack({ raw: handle });
});
afterAll(() => stack.close());

async function interruptAndResume() {
  answered = false;
  const input = stack.input({ prompt: "touch a.txt" });
  const first = await runWithHttpAgent(stack.gateway.url, input);
  expect(first.events.at(-1)).toMatchObject({ outcome: { type: "interrupt" } });
  return runWithHttpAgent(stack.gateway.url, {
    ...input,
    runId: `${input.runId}-2`,
    resume: [{ interruptId: "permission-fu", status: "resolved", payload: { decision: "allow_once" } }],
  });
}

describe("an answer stream that closes early", () => {
  it("is followed by SubscribeToTask to the turn's end", async () => {
    subscribeIdle = false;
    const resume = await interruptAndResume();
    expect(stack.upstream.requests.map((r) => r.method).slice(-2)).toEqual(["SendStreamingMessage", "SubscribeToTask"]);
    const text = resume.events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta);
    expect(text).toEqual(["Done."]); // the snapshot's stale text is not replayed
    expect(resume.events.find((e) => e.type === "TOOL_CALL_RESULT")).toMatchObject({ toolCallId: "call_fu", content: "exit 0" });
    expect(resume.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });

  it("falls back to GetTask when the turn already ended (-32001)", async () => {
    subscribeIdle = true;
    const again = await interruptAndResume();
    expect(stack.upstream.requests.map((r) => r.method).slice(-3)).toEqual(["SendStreamingMessage", "SubscribeToTask", "GetTask"]);
    expect(again.events.some((e) => e.type === "TEXT_MESSAGE_CONTENT")).toBe(false);
    expect(again.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });
});
