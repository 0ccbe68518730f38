// A sideband permission: a parallel pipeline candidate waits for a permission while the task stays
// WORKING. The run ends at that interrupt; the resume answers with non-streaming SendMessage, catches
// up on pipeline events, then follows the task (snapshot, subscribe) to its end.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RawA2AServer, RawExchange, RawResponder } from "../src/demo/index.js";
import { runWithHttpAgent, startStack, type Stack } from "./helpers/e2e.js";

const TASK = "task-sb";
const SESSION = "sess-sb";
let contextId = "";
const candidate = { id: "evaluate", runId: "candidate-evaluate-0-1", index: 0 };
const permission = () => ({
  schemaVersion: 1,
  kind: "permission",
  requestTaskId: TASK,
  contextId,
  inputId: "permission-sb-1",
  toolUseId: "call_sb",
  toolName: "ros_deploy",
  prompt: "Deploy for candidate 0?",
  scope: "candidate",
  subPipelineId: "evaluate",
  options: [{ id: "allow_once", label: "Allow once" }, { id: "deny", label: "Deny" }],
  required: true,
});
const envelope = (sequence: number, eventType: string, extra: Record<string, unknown> = {}) => ({
  eventId: `evt-sb-${sequence}`,
  sequence,
  eventType,
  scope: "candidate",
  status: "working",
  iacCodeSessionId: SESSION,
  candidate,
  ...extra,
});
const status = (state: string, iac: Record<string, unknown>) => ({
  statusUpdate: { taskId: TASK, contextId, status: { state: `TASK_STATE_${state}` }, metadata: { iac_code: iac } },
});

function handle(ex: RawExchange, res: RawResponder): void {
  if (ex.http.method === "GET" && ex.http.url.startsWith("/iac-code/pipeline/state")) {
    res.json(200, {
      snapshot: { pipelineRunId: contextId, taskId: TASK, lastSequence: 3, status: "working" },
      events: [envelope(3, "stack_progress", { data: { stackName: "s", progressPercentage: 40 } })],
    });
    return;
  }
  if (ex.http.url === "/iac-code/session/ensure-restored") {
    res.json(200, { status: "current" });
    return;
  }
  switch (ex.method) {
    case "SendStreamingMessage":
      contextId = ex.params.message.contextId;
      res.sseStart();
      res.sseFrame({ task: { id: TASK, contextId, status: { state: "TASK_STATE_SUBMITTED" } } });
      res.sseFrame(status("WORKING", { pipeline: envelope(1, "candidate_started"), iacCodeSessionId: SESSION }));
      res.sseFrame(status("WORKING", { pipeline: envelope(2, "permission_requested"), input: permission(), pendingPermissions: [permission()] }));
      return; // parked: the stream stays open until the gateway leaves
    case "GetTask":
      res.json(200, {
        jsonrpc: "2.0",
        id: ex.id,
        result: { id: TASK, contextId, status: { state: "TASK_STATE_WORKING" }, metadata: { iac_code: { pendingPermissions: [permission()], iacCodeSessionId: SESSION } } },
      });
      return;
    case "SendMessage":
      res.json(200, {
        jsonrpc: "2.0",
        id: ex.id,
        result: { message: { messageId: "permission-ack-1", contextId, taskId: TASK, role: "ROLE_AGENT", parts: [{ data: { kind: "permission_ack", accepted: true }, mediaType: "application/json" }] } },
      });
      return;
    case "SubscribeToTask":
      res.sseStart();
      res.sseFrame({ task: { id: TASK, contextId, status: { state: "TASK_STATE_WORKING" }, metadata: { iac_code: { iacCodeSessionId: SESSION } } } });
      res.sseFrame(status("WORKING", { pipeline: envelope(4, "permission_resolved") }));
      res.sseFrame(status("WORKING", { pipeline: envelope(5, "candidate_completed") }));
      res.sseFrame(status("COMPLETED", { pipeline: envelope(6, "pipeline_completed", { scope: "pipeline", status: "completed" }) }));
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

describe("sideband permission from a parallel candidate", () => {
  it("interrupts while WORKING, answers by SendMessage, recovers missed events, follows the task to its end", async () => {
    const input = stack.input({ iacCode: { runMode: "pipeline" } });
    const first = await runWithHttpAgent(stack.gateway.url, input);
    const outcome = first.events.at(-1)!.outcome as { type: string; interrupts: { id: string; reason: string }[] };
    expect(outcome.type).toBe("interrupt");
    expect(outcome.interrupts.map((i) => [i.id, i.reason])).toEqual([["permission-sb-1", "tool_call"]]);

    const resume = await runWithHttpAgent(stack.gateway.url, {
      ...input,
      runId: `${input.runId}-2`,
      resume: [{ interruptId: "permission-sb-1", status: "resolved", payload: { decision: "allow_once" } }],
    });
    const methods = stack.upstream.requests.map((r) => r.method || `${r.http.method} ${r.http.url.split("?")[0]}`);
    const afterTurn = methods.slice(methods.indexOf("SendStreamingMessage") + 1);
    expect(afterTurn).toEqual(["POST /iac-code/session/ensure-restored", "GetTask", "GET /iac-code/pipeline/state", "SendMessage", "SubscribeToTask"]);
    const answer = stack.upstream.requests.find((r) => r.method === "SendMessage")!;
    expect(answer.params.message.messageId).toBe("agui-resume-permission-sb-1");
    expect(answer.params.message.parts).toEqual([
      { data: { schemaVersion: 1, kind: "permission", requestTaskId: TASK, inputId: "permission-sb-1", toolUseId: "call_sb", decision: "allow_once" }, mediaType: "application/json" },
    ]);
    const state = stack.upstream.requests.find((r) => r.http.url.startsWith("/iac-code/pipeline/state"))!;
    expect(state.http.url).toContain("afterSequence=2");

    const types = resume.events.map((e) => e.type);
    expect(types.indexOf("ACTIVITY_SNAPSHOT")).toBeGreaterThan(0);
    const pipeline = resume.events.filter((e) => e.name === "iac-code.pipeline.v1").map((e) => (e.value as { eventType: string }).eventType);
    expect(pipeline).toEqual(["stack_progress", "candidate_completed", "pipeline_completed"]);
    expect(resume.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });
});
