// A refused request changes nothing: for each refusal code of POST /, the workspace it names is not created, the
// state directory holds the same bytes, and the kernel is not called. (Admission decides before it creates the
// workspace; the http edge only checks it.)
import { existsSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { RunAgentInput } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { threadFileStem } from "../src/state/thread-key.js";
import { allowOnce, demoScript, interruptsOf, resumeInput, startDurableStack, type DurableStack } from "./helpers/durable.js";
import { postRaw, promptOf, runWithHttpAgent, slowTurn } from "./helpers/e2e.js";
import { postRun } from "./helpers/replicas.js";
import { diskSnapshot } from "./helpers/disk.js";

let stack: DurableStack;
let fresh = 0;

beforeAll(async () => {
  const demo = demoScript();
  // The demo agent, and a "slow …" turn that streams for 10 s (the thread stays busy meanwhile).
  stack = await startDurableStack({ script: (turn) => (promptOf(turn).startsWith("slow") ? slowTurn(`session-${turn.contextId}`) : demo(turn)) });
});

afterAll(async () => {
  await stack?.close();
});

/** A workspace below the allowed root that does not exist yet. */
function missingWorkspace(): string {
  const dir = path.join(stack.root, `never-created-${++fresh}`, "deep");
  expect(existsSync(dir)).toBe(false);
  return dir;
}

function withCwd(input: RunAgentInput, cwd: string): RunAgentInput {
  const props = input.forwardedProps as { iacCode: Record<string, unknown> };
  return { ...input, forwardedProps: { ...props, iacCode: { ...props.iacCode, cwd } } };
}

/** Sends `body` (as JSON unless a string), expects `status`/`code`, and that nothing on disk or upstream changed. */
async function expectRefusedWithoutTrace(body: unknown, status: number, code: string, headers: Record<string, string> = {}): Promise<void> {
  const disk = diskSnapshot(stack.root);
  const calls = stack.upstream.requests.length;
  const reply = await postRaw(stack.gateway.url, typeof body === "string" ? body : JSON.stringify(body), { "Content-Type": "application/json", ...headers });
  expect(reply.status, reply.text).toBe(status);
  expect(JSON.parse(reply.text).error.code).toBe(code);
  expect(diskSnapshot(stack.root), "nothing created, written or removed on disk").toEqual(disk);
  expect(stack.upstream.requests.slice(calls).map((r) => r.method), "no kernel call").toEqual([]);
}

describe("a refused POST / leaves no trace", () => {
  it("INVALID_INPUT: a body the schema refuses, or a workspace outside the roots", async () => {
    const input = withCwd(stack.input(), missingWorkspace());
    await expectRefusedWithoutTrace({ ...input, runId: 42 }, 400, "INVALID_INPUT");
    await expectRefusedWithoutTrace(withCwd(stack.input(), "/proc/never/here"), 400, "INVALID_INPUT");
    await expectRefusedWithoutTrace({ ...input, messages: [] }, 400, "INVALID_INPUT");
  });

  it("UNSUPPORTED_MEDIA_TYPE and a body that is not JSON", async () => {
    const input = withCwd(stack.input(), missingWorkspace());
    await expectRefusedWithoutTrace(input, 415, "UNSUPPORTED_MEDIA_TYPE", { "Content-Type": "text/plain" });
    await expectRefusedWithoutTrace("{not json", 400, "INVALID_JSON");
  });

  it("THREAD_BINDING_CONFLICT: a known thread asked for another, missing workspace", async () => {
    const first = stack.input();
    await runWithHttpAgent(stack.gateway.url, first);
    await expectRefusedWithoutTrace(withCwd(stack.input({ threadId: first.threadId }), missingWorkspace()), 409, "THREAD_BINDING_CONFLICT");
  });

  it("DUPLICATE_RUN_ID and RUN_ID_CONFLICT: a run id used before", async () => {
    const first = stack.input();
    const body = JSON.stringify(first);
    expect((await postRaw(stack.gateway.url, body, { "Content-Type": "application/json" })).status).toBe(200);
    await expectRefusedWithoutTrace(body, 409, "DUPLICATE_RUN_ID");
    await expectRefusedWithoutTrace(withCwd({ ...first, messages: [{ id: "m2", role: "user", content: "other" }] }, missingWorkspace()), 409, "RUN_ID_CONFLICT");
  });

  it("RESUME_REQUIRED: a turn while an interrupt waits; EXECUTION_LOST: a resume of a thread never seen", async () => {
    const parked = stack.input({ prompt: "deploy the stack" });
    const interrupts = interruptsOf((await runWithHttpAgent(stack.gateway.url, parked)).events);
    expect(interrupts).toHaveLength(1);
    await expectRefusedWithoutTrace(stack.input({ threadId: parked.threadId }), 409, "RESUME_REQUIRED");
    await expectRefusedWithoutTrace(withCwd(resumeInput(stack.input(), [allowOnce("nobody")]), missingWorkspace()), 409, "EXECUTION_LOST");
  });

  it("THREAD_BUSY: a turn while the thread's run streams", async () => {
    const slow = stack.input({ prompt: "slow count" });
    const posted = await postRun(stack.gateway.url, slow);
    expect(posted.status).toBe(200);
    // The session event comes after the run's own write of the session id: the disk is quiet from here on.
    await posted.live!.until((e) => e.type === "CUSTOM" && e.name === "iac-code.session.v1");
    try {
      await expectRefusedWithoutTrace(withCwd(stack.input({ threadId: slow.threadId }), missingWorkspace()), 409, "THREAD_BUSY");
    } finally {
      posted.live!.abort();
    }
  });

  it("STATE_UNAVAILABLE: a thread whose state file is unreadable", async () => {
    const broken = stack.input();
    await runWithHttpAgent(stack.gateway.url, broken);
    const file = path.join(stack.stateDir, "threads", `${threadFileStem(broken.threadId)}.json`);
    expect(statSync(file).isFile()).toBe(true);
    await stack.restart();
    writeFileSync(file, "{ not a thread record");
    await expectRefusedWithoutTrace(withCwd(stack.input({ threadId: broken.threadId }), missingWorkspace()), 503, "STATE_UNAVAILABLE");
  });

  it("SHUTTING_DOWN: a gateway that stopped admitting", async () => {
    stack.gateway.runs.stopAdmitting();
    try {
      await expectRefusedWithoutTrace(withCwd(stack.input(), missingWorkspace()), 503, "SHUTTING_DOWN");
    } finally {
      await stack.restart();
    }
  });
});

describe("an admitted request creates its missing workspace", () => {
  it("once the run is admitted, before the kernel is asked", async () => {
    const cwd = missingWorkspace();
    const run = await runWithHttpAgent(stack.gateway.url, withCwd(stack.input(), cwd));
    expect(run.events.at(-1)).toMatchObject({ type: "RUN_FINISHED" });
    expect(statSync(cwd).isDirectory()).toBe(true);
    expect((statSync(cwd).mode & 0o777).toString(8)).toBe("700");
  });
});
