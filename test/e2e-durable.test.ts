// Durable thread state end to end (seeds "Persistência e recuperação", reference-adapter §7, §8.1): the thread
// file's place, modes and contents, run-id idempotency across a restart, a corrupt file, fail-closed writes,
// and the thread binding. The gateway runs in-process; runs go through the real HttpAgent.
import { readFile, realpath, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject } from "../operators/types.js";
import { FileThreadStore } from "../src/state/file-store.js";
import {
  RenameFault,
  allowOnce,
  cancelCount,
  demoScript,
  iacCodeOf,
  interruptsOf,
  messagesToTask,
  postCancel,
  resumeInput,
  runErrorOf,
  startDurableStack,
  type DurableStack,
} from "./helpers/durable.js";
import {
  expectValidRun,
  frame,
  ofType,
  postRaw,
  readSse,
  runWithHttpAgent,
  scriptByPrompt,
  sessionEventOf,
  typesOf,
  type HttpAgentRun,
} from "./helpers/e2e.js";

const SECRETS = {
  authToken: "gateway-auth-secret-71",
  a2aToken: "a2a-token-secret-72",
  llmApiKey: "sk-llm-secret-73",
  llmHeader: "header-value-secret-74",
  accessKeyId: "LTAI-access-key-id-75",
  accessKeySecret: "access-key-secret-76",
  securityToken: "sts-security-token-77",
};
const MESSAGE_MARKER = "marker-of-the-user-text-78";
const OUTSIDE_ALLOWLIST = { toolInput: { password: "tool-input-secret-79" }, internalNote: "not-allowlisted-80" };

/** A permission whose input also carries fields outside the persisted allowlist (reference-adapter §6.1). */
const askWithExtras = scriptByPrompt({
  "ask with extra fields": (turn) => [
    frame.working({ sessionId: "session-durable-1" }),
    frame.status("TASK_STATE_INPUT_REQUIRED", {
      sessionId: "session-durable-1",
      iac: {
        input: {
          schemaVersion: 1,
          kind: "permission",
          requestTaskId: turn.taskId,
          contextId: turn.contextId,
          inputId: "permission-extras",
          toolUseId: "call_extras",
          toolName: "bash",
          prompt: "Run it?",
          required: true,
          ...OUTSIDE_ALLOWLIST,
        },
      },
    }),
  ],
});

function threadFile(stack: DurableStack, threadId: string): string {
  return path.join(stack.stateDir, "threads", `${threadId}.json`);
}

async function readThread(stack: DurableStack, threadId: string): Promise<{ text: string; doc: any }> {
  const text = await readFile(threadFile(stack, threadId), "utf8");
  return { text, doc: JSON.parse(text) };
}

async function modeOf(file: string): Promise<number> {
  return (await stat(file)).mode & 0o777;
}

/** Waits (bounded) until the run's end-of-run write marked `executionId` terminal on disk. */
async function settled(stack: DurableStack, threadId: string, executionId: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const { doc } = await readThread(stack, threadId);
    if (doc.execution.taskId === null && doc.terminalExecutionIds.includes(executionId)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("the end-of-run write never landed");
}

function sendCount(stack: DurableStack): number {
  return stack.upstream.requests.filter((r) => r.method === "SendStreamingMessage").length;
}

describe("the thread file", () => {
  let stack: DurableStack;

  beforeAll(async () => {
    stack = await startDurableStack({
      script: askWithExtras,
      upstreamToken: SECRETS.a2aToken,
      gateway: { authToken: SECRETS.authToken, a2aToken: SECRETS.a2aToken },
    });
  });

  afterAll(async () => {
    await stack.close();
  });

  it("holds the binding, task, pending interrupt and run digests in a 0600 file under 0700 dirs, and no text or secret", async () => {
    const headers = { Authorization: `Bearer ${SECRETS.authToken}` };
    const input = stack.input({
      prompt: `Please deploy the ${MESSAGE_MARKER} stack`,
      iacCode: {
        llmApiKey: SECRETS.llmApiKey,
        llmHeaders: { "X-Gateway-Test": SECRETS.llmHeader },
        alibabaCloud: {
          accessKeyId: SECRETS.accessKeyId,
          accessKeySecret: SECRETS.accessKeySecret,
          securityToken: SECRETS.securityToken,
          regionId: "cn-hangzhou",
        },
      },
    });
    const run = await runWithHttpAgent(stack.gateway.url, input, { headers });
    const [interrupt] = interruptsOf(run.events);
    const session = sessionEventOf(run.events);

    // The secrets really travelled: the kernel got them, the bearer token was checked.
    const sent = JSON.stringify(stack.upstream.requests.map((r) => r.params));
    for (const secret of [SECRETS.llmApiKey, SECRETS.llmHeader, SECRETS.accessKeyId, SECRETS.accessKeySecret, SECRETS.securityToken]) {
      expect(sent).toContain(secret);
    }
    expect(stack.upstream.requests.every((r) => r.headers.authorization === `Bearer ${SECRETS.a2aToken}`)).toBe(true);

    const file = threadFile(stack, input.threadId);
    expect(await modeOf(file)).toBe(0o600);
    expect(await modeOf(path.dirname(file))).toBe(0o700);
    expect(await modeOf(stack.stateDir)).toBe(0o700);

    const { text, doc } = await readThread(stack, input.threadId);
    expect(doc.threadId).toBe(input.threadId);
    expect(doc.contextId).toBe(session["contextId"]);
    expect(doc.cwd).toBe(await realpath(stack.workspace));
    expect(doc.execution.taskId).toBe(session["taskId"]);
    expect(doc.execution.executionId).toBe(session["executionId"]);
    expect(doc.execution.rosInvocationId).toBe("invocation-1");
    expect(Object.keys(doc.execution.pending)).toEqual([interrupt!.id]);
    expect(doc.execution.pending[interrupt!.id].value).toMatchObject({ kind: "permission", inputId: interrupt!.id, toolName: "ros_deploy" });
    expect(doc.execution.pending[interrupt!.id].expiresAt).toBe(interrupt!.expiresAt);
    expect(doc.runDigests).toEqual([{ runId: input.runId, digest: expect.stringMatching(/^[0-9a-f]{64}$/) }]);

    for (const secret of [MESSAGE_MARKER, ...Object.values(SECRETS)]) expect(text, `the file holds ${secret}`).not.toContain(secret);
    expect(text).not.toContain("Please deploy");

    // The resume carries the same secrets; the file still holds none, and records the applied answer instead.
    const resume = resumeInput(input, [allowOnce(interrupt!.id)]);
    const resumed = await runWithHttpAgent(stack.gateway.url, resume, { agent: run.agent, headers });
    expect(resumed.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    const after = await readThread(stack, input.threadId);
    expect(after.doc.execution.pending).toEqual({});
    expect(after.doc.appliedResumeDigests).toEqual([
      { executionId: session["executionId"], interruptId: interrupt!.id, digest: expect.stringMatching(/^[0-9a-f]{64}$/) },
    ]);
    expect(after.doc.runDigests.map((entry: { runId: string }) => entry.runId)).toEqual([input.runId, resume.runId]);
    for (const secret of [MESSAGE_MARKER, ...Object.values(SECRETS)]) expect(after.text).not.toContain(secret);
    expect(await modeOf(threadFile(stack, input.threadId))).toBe(0o600);
  });

  it("keeps only allowlisted input fields: neither the interrupt nor the file has toolInput or unknown keys", async () => {
    const headers = { Authorization: `Bearer ${SECRETS.authToken}` };
    const input = stack.input({ prompt: "ask with extra fields" });
    const run = await runWithHttpAgent(stack.gateway.url, input, { headers });
    const [interrupt] = interruptsOf(run.events);
    expect(interrupt!.id).toBe("permission-extras");
    expect(interrupt!.metadata).not.toHaveProperty("toolInput");
    expect(interrupt!.metadata).not.toHaveProperty("internalNote");
    const { text, doc } = await readThread(stack, input.threadId);
    expect(doc.execution.pending["permission-extras"].value).toMatchObject({ inputId: "permission-extras", toolName: "bash" });
    expect(text).not.toContain("toolInput");
    expect(text).not.toContain(OUTSIDE_ALLOWLIST.toolInput.password);
    expect(text).not.toContain(OUTSIDE_ALLOWLIST.internalNote);
  });
});

describe("run ids, restarts and corrupt files", () => {
  let stack: DurableStack;

  beforeAll(async () => {
    stack = await startDurableStack();
  });

  afterAll(async () => {
    await stack.close();
  });

  it("a runId used before a restart is 409 DUPLICATE_RUN_ID (same body) or RUN_ID_CONFLICT (other body) after it", async () => {
    const input = stack.input({ prompt: "list my stacks" });
    const first = await postRaw(stack.gateway.url, input);
    expect(first.status).toBe(200);
    const events = readSse(first.text).events;
    expectValidRun(events);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });

    await stack.restart();
    const sends = sendCount(stack);
    const duplicate = await postRaw(stack.gateway.url, input);
    expect(duplicate.status).toBe(409);
    expect(duplicate.json).toMatchObject({ error: { code: "DUPLICATE_RUN_ID" } });
    const conflict = await postRaw(stack.gateway.url, { ...input, messages: [{ id: "message-other", role: "user", content: "another text" }] });
    expect(conflict.status).toBe(409);
    expect(conflict.json).toMatchObject({ error: { code: "RUN_ID_CONFLICT" } });
    expect(sendCount(stack), "a duplicate is rejected, never replayed").toBe(sends);
    // The thread itself is fine: a new runId runs.
    const next = await runWithHttpAgent(stack.gateway.url, stack.input({ threadId: input.threadId, prompt: "and now?" }));
    expect(next.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });

  it("an interrupt survives a restart: the new gateway resumes it and delivers the answer once", async () => {
    const input = stack.input({ prompt: "deploy across a restart" });
    const run = await runWithHttpAgent(stack.gateway.url, input);
    const [interrupt] = interruptsOf(run.events);
    const taskId = sessionEventOf(run.events)["taskId"] as string;
    await stack.restart();
    const resume = resumeInput(input, [allowOnce(interrupt!.id)]);
    const resumed = await runWithHttpAgent(stack.gateway.url, resume);
    expect(resumed.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(messagesToTask(stack.upstream, taskId)).toHaveLength(1);
  });

  const corruptions: [string, string | Buffer][] = [
    ["not JSON", "{ this is not json"],
    ["JSON of the wrong shape", JSON.stringify({ schemaVersion: 1, threadId: "someone-else" })],
    ["invalid UTF-8", Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
  ];
  it("after a restart the cancel extension still finds and cancels the parked execution", async () => {
    const input = stack.input({ prompt: "deploy, restart, cancel" });
    const run = await runWithHttpAgent(stack.gateway.url, input);
    interruptsOf(run.events);
    const session = sessionEventOf(run.events);
    await stack.restart();
    const body = { threadId: input.threadId, rosInvocationId: "invocation-1" };
    const cancelled = await postCancel(stack.gateway.url, session["executionId"] as string, body);
    expect(cancelled).toEqual({ status: 200, json: { executionId: session["executionId"], status: "cancelled" } });
    expect(cancelCount(stack.upstream, session["taskId"] as string)).toBe(1);
    const { doc } = await readThread(stack, input.threadId);
    expect(doc.execution.pending).toEqual({});
    expect(doc.terminalExecutionIds).toContain(session["executionId"]);
    const next = await runWithHttpAgent(stack.gateway.url, stack.input({ threadId: input.threadId, prompt: "after the cancel" }));
    expect(next.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });

  it.each(corruptions)("a thread file that is %s is 503 STATE_UNAVAILABLE for that thread only", async (_what, content) => {
    const broken = stack.input({ prompt: "first turn of a thread that breaks" });
    const done = await runWithHttpAgent(stack.gateway.url, broken);
    expect(done.events.at(-1)).toMatchObject({ type: "RUN_FINISHED" });
    const executionId = sessionEventOf(done.events)["executionId"] as string;
    // The end-of-run write lands after the client saw RUN_FINISHED; corrupt the file only after it.
    await settled(stack, broken.threadId, executionId);
    await writeFile(threadFile(stack, broken.threadId), content);
    await stack.restart();

    const turn = await postRaw(stack.gateway.url, stack.input({ threadId: broken.threadId, prompt: "again" }));
    expect(turn.status).toBe(503);
    expect(turn.json).toMatchObject({ error: { code: "STATE_UNAVAILABLE" } });
    const resume = await postRaw(stack.gateway.url, { ...stack.input({ threadId: broken.threadId }), resume: [allowOnce("permission-x")] });
    expect(resume.status).toBe(503);
    expect(resume.json).toMatchObject({ error: { code: "STATE_UNAVAILABLE" } });
    const cancel = await postCancel(stack.gateway.url, executionId, { threadId: broken.threadId, rosInvocationId: "invocation-1" });
    expect(cancel.status).toBe(503);
    expect(cancel.json).toMatchObject({ error: { code: "STATE_UNAVAILABLE" } });

    const other = await runWithHttpAgent(stack.gateway.url, stack.input({ prompt: "a healthy thread" }));
    expect(other.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });
});

describe("fail-closed writes (rename fails with ENOSPC)", () => {
  let stack: DurableStack;
  const fault = new RenameFault();

  beforeAll(async () => {
    const upstreamScript = demoScript();
    stack = await startDurableStack({ script: upstreamScript });
    // The same state dir, now through a store whose atomic replace can be made to fail.
    await stack.restart({ store: new FileThreadStore({ dir: stack.stateDir, fs: fault.fs }) });
  });

  afterAll(async () => {
    await stack.close();
  });

  it("at admission of a new thread: 503 STATE_UNAVAILABLE, nothing sent, and the runId stays usable", async () => {
    const input = stack.input({ prompt: "hello durable world" });
    const sends = sendCount(stack);
    fault.failAfter(0);
    const refused = await postRaw(stack.gateway.url, input);
    fault.heal();
    expect(refused.status).toBe(503);
    expect(refused.json).toMatchObject({ error: { code: "STATE_UNAVAILABLE" } });
    expect(sendCount(stack)).toBe(sends);
    const retried = await runWithHttpAgent(stack.gateway.url, input);
    expect(retried.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });

  it("at admission of a second turn: 503, the stored thread is unchanged, and the same runId then runs", async () => {
    const first = stack.input({ prompt: "turn one" });
    const done = await runWithHttpAgent(stack.gateway.url, first);
    const before = await readThread(stack, first.threadId);
    const second = stack.input({ threadId: first.threadId, prompt: "turn two" });
    fault.failAfter(0);
    const refused = await postRaw(stack.gateway.url, second);
    fault.heal();
    expect(refused.status).toBe(503);
    expect(refused.json).toMatchObject({ error: { code: "STATE_UNAVAILABLE" } });
    expect((await readThread(stack, first.threadId)).text).toBe(before.text);
    const retried = await runWithHttpAgent(stack.gateway.url, second);
    expect(retried.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(sessionEventOf(retried.events)["executionId"]).not.toBe(sessionEventOf(done.events)["executionId"]);
  });

  it("at the interrupt commit: RUN_ERROR STATE_PERSISTENCE_FAILED, no interrupt announced, the task cancelled", async () => {
    // Which save commits the interrupt: the first one whose document holds a pending entry.
    const calibration = stack.input({ prompt: "deploy to count the saves" });
    const from = fault.attempts.length;
    interruptsOf((await runWithHttpAgent(stack.gateway.url, calibration)).events);
    const saves = fault.attempts.slice(from).filter((a) => a.threadId === calibration.threadId);
    const commitIndex = saves.findIndex((a) => a.hasPending);
    expect(commitIndex).toBeGreaterThan(0);

    const input = stack.input({ prompt: "deploy onto a full disk" });
    const start = fault.attempts.length;
    fault.failAfter(commitIndex);
    let run: HttpAgentRun;
    try {
      run = await runWithHttpAgent(stack.gateway.url, input);
    } finally {
      fault.heal();
    }
    const attempts = fault.attempts.slice(start).filter((a) => a.threadId === input.threadId);
    expect(attempts[commitIndex]).toMatchObject({ failed: true, hasPending: true });

    expect(runErrorOf(run.events).code).toBe("STATE_PERSISTENCE_FAILED");
    expect(ofType(run.events, "RUN_FINISHED")).toEqual([]);
    expect(typesOf(run.events)).not.toContain("RUN_FINISHED");
    expect(run.agent.pendingInterrupts).toEqual([]);
    const taskId = sessionEventOf(run.events)["taskId"] as string;
    expect(cancelCount(stack.upstream, taskId)).toBe(1);
    // Never durable, never announced: the file holds no pending interrupt, and the thread takes a new turn.
    const { doc } = await readThread(stack, input.threadId);
    expect(doc.execution.pending).toEqual({});
    const next = await runWithHttpAgent(stack.gateway.url, stack.input({ threadId: input.threadId, prompt: "after the disk was freed" }));
    expect(next.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });
});

describe("the thread binding", () => {
  let stack: DurableStack;

  beforeAll(async () => {
    stack = await startDurableStack();
  });

  afterAll(async () => {
    await stack.close();
  });

  it("another cwd or another userId on a bound thread is 409 THREAD_BINDING_CONFLICT; the binding keeps working", async () => {
    const first = stack.input({ prompt: "bind me", iacCode: { userId: "user-1" } });
    const done = await runWithHttpAgent(stack.gateway.url, first);
    expect(done.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    const variants: JsonObject[] = [
      { cwd: stack.otherWorkspace, userId: "user-1" },
      { userId: "user-2" },
      {},
    ];
    for (const change of variants) {
      const attempt = stack.input({ threadId: first.threadId, prompt: "rebind me" });
      const iacCode = iacCodeOf(attempt);
      delete iacCode.userId;
      Object.assign(iacCode, change);
      const reply = await postRaw(stack.gateway.url, attempt);
      expect(reply.status, JSON.stringify(change)).toBe(409);
      expect(reply.json).toMatchObject({ error: { code: "THREAD_BINDING_CONFLICT" } });
    }
    const { doc } = await readThread(stack, first.threadId);
    expect(doc).toMatchObject({ cwd: await realpath(stack.workspace), userId: "user-1" });
    const again = await runWithHttpAgent(stack.gateway.url, stack.input({ threadId: first.threadId, prompt: "same binding", iacCode: { userId: "user-1" } }));
    expect(again.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });
});
