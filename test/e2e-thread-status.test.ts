// GET /threads/{threadId} and a cancel without the binding's proof: what a server that did not start a run (a
// CopilotKit runtime after a restart, another runtime replica) needs to tell whether a thread runs and to stop it.
// The trusted caller and the owning user may; a stranger is told the thread does not exist; without auth configured
// the status is anyone's and a cancel still needs its proof.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { expectValidRun, readSse, scriptByPrompt, slowTurn, startJwtStack, startStack, type Stack } from "./helpers/e2e.js";
import { tokenFor } from "./helpers/jwks.js";

const SLOW = "count slowly";
const TRUSTED = "status-trusted-token";

interface OpenRun {
  /** Resolves with the whole SSE text once the run's stream ends. */
  text: Promise<string>;
}

/** Starts a run and resolves once its stream has begun (the first tick arrived): the run is live. */
async function startLiveRun(url: string, body: unknown, headers: Record<string, string>): Promise<OpenRun> {
  // AG-UI 1.0 declared, as a current client does: a cancelled run then ends with the cancelled outcome.
  const declared = { ...(body as object), protocolVersion: "1.0" };
  const response = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify(declared) });
  expect(response.status).toBe(200);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("tick 1 ")) {
    const chunk = await reader.read();
    if (chunk.done) throw new Error(`the run ended before it streamed: ${text}`);
    text += chunk.value;
  }
  const rest = (async () => {
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += chunk.value;
    return text;
  })();
  return { text: rest };
}

async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: Record<string, unknown>; allow: string | null }> {
  const response = await fetch(url, init);
  const text = await response.text();
  return { status: response.status, body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>), allow: response.headers.get("Allow") };
}

const statusOf = (stack: Stack<ScriptedA2AServer>, threadId: string, headers: Record<string, string> = {}) =>
  json(new URL(`threads/${encodeURIComponent(threadId)}`, stack.gateway.url).href, { headers });

const cancel = (stack: Stack<ScriptedA2AServer>, executionId: string, body: unknown, headers: Record<string, string> = {}) =>
  json(new URL(`extensions/iac-code/v1/executions/${encodeURIComponent(executionId)}/cancel`, stack.gateway.url).href, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

function finalOutcome(text: string): unknown {
  const { events } = readSse(text);
  expectValidRun(events);
  return events.at(-1);
}

describe("with the trusted token and user tokens", () => {
  let stack: Stack<ScriptedA2AServer>;
  let alice: Record<string, string>;
  let mallory: Record<string, string>;
  const trusted = { Authorization: `Bearer ${TRUSTED}` };
  beforeAll(async () => {
    const jwtStack = await startJwtStack({
      kid: "status-key",
      script: scriptByPrompt({ [SLOW]: () => slowTurn("session-slow", 400, 25) }),
      gateway: { authToken: TRUSTED },
      jwt: { jwksCooldownMs: 0 },
    });
    stack = jwtStack;
    alice = { Authorization: `Bearer ${await tokenFor(jwtStack.key, "alice")}` };
    mallory = { Authorization: `Bearer ${await tokenFor(jwtStack.key, "mallory")}` };
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("a live run: its owner and the trusted server see it running with its ids, and the trusted server cancels it without the proof", async () => {
    const input = stack.input({ prompt: SLOW });
    const run = await startLiveRun(stack.gateway.url, input, alice);
    const own = await statusOf(stack, input.threadId, alice);
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ threadId: input.threadId, status: "running", pendingInterrupts: 0, runId: input.runId });
    expect(own.body["executionId"]).toEqual(expect.any(String));
    expect(await statusOf(stack, input.threadId, trusted)).toEqual(own);
    // A stranger and an unknown thread get the same answer; no token is no answer at all.
    const stranger = await statusOf(stack, input.threadId, mallory);
    expect(stranger).toMatchObject({ status: 404, body: { error: { code: "THREAD_NOT_FOUND" } } });
    expect(await statusOf(stack, "no-such-thread", alice)).toMatchObject({ status: 404, body: { error: { code: "THREAD_NOT_FOUND" } } });
    expect((await statusOf(stack, input.threadId)).status).toBe(401);

    const executionId = own.body["executionId"] as string;
    // A stranger cannot cancel it, with or without a proof it does not have.
    expect(await cancel(stack, executionId, { threadId: input.threadId }, mallory)).toMatchObject({ status: 404, body: { error: { code: "EXECUTION_NOT_FOUND" } } });
    expect(await cancel(stack, executionId, { threadId: input.threadId }, trusted)).toEqual({ status: 200, body: { executionId, status: "cancelled" }, allow: null });
    expect(finalOutcome(await run.text)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
    const after = await statusOf(stack, input.threadId, alice);
    expect(after.body).toMatchObject({ status: "idle", pendingInterrupts: 0 });
    expect(after.body).not.toHaveProperty("executionId");
    expect(after.body).not.toHaveProperty("runId");
  });

  it("the owner cancels their own run without the proof; a wrong proof is still refused", async () => {
    const input = stack.input({ prompt: SLOW });
    const run = await startLiveRun(stack.gateway.url, input, alice);
    const executionId = (await statusOf(stack, input.threadId, alice)).body["executionId"] as string;
    expect(await cancel(stack, executionId, { threadId: input.threadId, rosInvocationId: "not-the-binding" }, alice)).toMatchObject({ status: 404 });
    expect(await cancel(stack, executionId, { threadId: input.threadId, rosInvocationId: "" }, alice)).toMatchObject({ status: 400, body: { error: { code: "INVALID_INPUT" } } });
    expect(await cancel(stack, executionId, { threadId: input.threadId }, alice)).toMatchObject({ status: 200, body: { status: "cancelled" } });
    expect(finalOutcome(await run.text)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
  });

  it("a thread waiting at an interrupt shows it, with the execution the answer goes to and no live run", async () => {
    const input = stack.input({ prompt: "deploy the demo VPC" });
    const response = await fetch(stack.gateway.url, { method: "POST", headers: { "Content-Type": "application/json", ...alice }, body: JSON.stringify(input) });
    const last = finalOutcome(await response.text()) as { outcome?: { type?: string } };
    expect(last.outcome?.type).toBe("interrupt");
    const waiting = await statusOf(stack, input.threadId, trusted);
    expect(waiting.body).toMatchObject({ status: "waiting_for_input", pendingInterrupts: 1, executionId: expect.any(String) });
    expect(waiting.body).not.toHaveProperty("runId");
  });
});

describe("without auth configured", () => {
  let stack: Stack<ScriptedA2AServer>;
  beforeAll(async () => {
    stack = await startStack({ script: scriptByPrompt({ [SLOW]: () => slowTurn("session-slow", 400, 25) }) });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("anyone sees a thread's status; a cancel still needs the binding's proof", async () => {
    const input = stack.input({ prompt: SLOW });
    const run = await startLiveRun(stack.gateway.url, input, {});
    const status = await statusOf(stack, input.threadId);
    expect(status.body).toMatchObject({ status: "running", runId: input.runId });
    const executionId = status.body["executionId"] as string;
    expect(await cancel(stack, executionId, { threadId: input.threadId })).toMatchObject({ status: 400, body: { error: { code: "INVALID_INPUT" } } });
    const rosInvocationId = (input.forwardedProps as { iacCode: { rosInvocationId: string } }).iacCode.rosInvocationId;
    expect(await cancel(stack, executionId, { threadId: input.threadId, rosInvocationId })).toMatchObject({ status: 200, body: { status: "cancelled" } });
    expect(finalOutcome(await run.text)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
  });

  it("another method on a thread's path is a JSON 405 that names GET and DELETE", async () => {
    const answer = await json(new URL("threads/t-1", stack.gateway.url).href, { method: "POST" });
    expect(answer).toMatchObject({ status: 405, body: { error: { code: "METHOD_NOT_ALLOWED" } }, allow: "GET, DELETE" });
  });
});
