// Every interrupt a run announces carries its expiry, including one the kernel first shows while a resume is
// being planned (GetTask lists a required input the gateway never recorded): without one it would never expire
// (EXECUTION_EXPIRED and the idle sweep act only on entries that have an expiresAt). A known interrupt keeps its own.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RawExchange, RawA2AServer, RawResponder } from "../src/demo/index.js";
import { runWithHttpAgent, startStack, type Stack } from "./helpers/e2e.js";

const TASK = "task-exp";
let contextId = "";
const permission = (inputId: string, toolUseId: string) => ({
  schemaVersion: 1, kind: "permission", requestTaskId: TASK, contextId, inputId, toolUseId, toolName: "bash",
  prompt: `Run ${toolUseId}?`, options: [{ id: "allow_once", label: "Allow once" }, { id: "deny", label: "Deny" }], required: true,
});
const parked = (iac: Record<string, unknown>) => ({
  statusUpdate: { taskId: TASK, contextId, status: { state: "TASK_STATE_INPUT_REQUIRED" }, metadata: { iac_code: { iacCodeSessionId: "sess-exp", ...iac } } },
});

function handle(ex: RawExchange, res: RawResponder): void {
  if (ex.http.url === "/iac-code/session/ensure-restored") return res.json(404, { error: "Not Found" });
  const reply = (result: unknown) => res.json(200, { jsonrpc: "2.0", id: ex.id, result });
  switch (ex.method) {
    case "SendStreamingMessage": {
      const message = (ex.params as { message: { contextId: string; taskId?: string } }).message;
      contextId = message.contextId;
      res.sseStart();
      if (message.taskId === undefined) {
        res.sseFrame({ task: { id: TASK, contextId, status: { state: "TASK_STATE_WORKING" } } });
        res.sseFrame(parked({ input: permission("perm-a", "call-a") }));
      } else {
        res.sseFrame({ statusUpdate: { taskId: TASK, contextId, status: { state: "TASK_STATE_WORKING" }, metadata: { iac_code: { inputReceived: { kind: "permission" } } } } });
        res.sseFrame(parked({ input: permission("perm-b", "call-b") }));
      }
      return res.end();
    }
    case "GetTask": {
      // perm-b is news to the gateway: it first hears of it while it plans the answer to perm-a.
      const { status, metadata } = parked({ input: permission("perm-a", "call-a"), pendingPermissions: [permission("perm-b", "call-b")] }).statusUpdate;
      return reply({ id: TASK, contextId, status, metadata });
    }
    case "SendMessage":
      return reply({ task: { id: TASK, contextId, status: { state: "TASK_STATE_WORKING" } } });
    default:
      return res.json(200, { jsonrpc: "2.0", id: ex.id, error: { code: -32601, message: "no" } });
  }
}

let stack: Stack<RawA2AServer>;
beforeAll(async () => {
  stack = await startStack({ raw: handle, gateway: { interruptTtlSeconds: 600 } });
});
afterAll(() => stack.close());

type Announced = { id: string; expiresAt?: string };
const interruptsOf = (event: unknown) => (event as { outcome?: { interrupts?: Announced[] } }).outcome?.interrupts ?? [];

describe("interrupt expiry across a resume", () => {
  it("an interrupt first seen while the resume is planned gets an expiry; the answered-to one keeps its own", async () => {
    const input = stack.input({ prompt: "run two commands" });
    const first = await runWithHttpAgent(stack.gateway.url, input);
    const [a] = interruptsOf(first.events.at(-1));
    expect(a).toMatchObject({ id: "perm-a", expiresAt: expect.any(String) });

    const before = Date.now();
    const resumed = await runWithHttpAgent(stack.gateway.url, {
      ...input,
      runId: `${input.runId}-2`,
      resume: [{ interruptId: "perm-a", status: "resolved", payload: { selectedOptionId: "allow_once" } }],
    });
    const announced = interruptsOf(resumed.events.at(-1));
    expect(announced.map((i) => i.id).sort()).toEqual(["perm-a", "perm-b"]);
    expect(announced.find((i) => i.id === "perm-a")!.expiresAt).toBe(a!.expiresAt);
    const b = announced.find((i) => i.id === "perm-b")!;
    expect(b.expiresAt).toEqual(expect.any(String));
    expect(Date.parse(b.expiresAt!)).toBeGreaterThanOrEqual(before + 599_000);
  });
});
