// @vitest-environment jsdom
// GatewayRunner (agui-gateway/copilotkit) in the real @copilotkit/runtime 1.75, driven by @copilotkit/core 1.74's
// client (what @copilotkit/react-core wraps): threads live in the gateway, so a runtime that restarts mid-run, or a
// second runtime in front of the same gateway, gives a reloaded page the conversation and the live run or the pending
// interrupt; a stop reaches the run through the cancel extension whichever runtime started it. The agents are
// GatewayAgents with the gateway's static token, the gateway keeps a run whose client left for 30 s. Every event a
// page receives and every gateway stream is validated with EventSchema.
import type { Message } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject } from "../operators/types.js";
import { GatewayAgent } from "../src/client/index.js";
import { GatewayRunner } from "../src/copilotkit/index.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { connectClient, expectValidTraffic, finishedOf, iacAgents, startCopilotRuntime, type CopilotClient, type CopilotRuntimeServer } from "./helpers/copilotkit.js";
import { frame, scriptByPrompt, slowTurn, startStack, type Stack } from "./helpers/e2e.js";

const TOKEN = "runner-trusted-token";
const SLOW = "count to sixty";
const HELLO = "say hello";
let hellos = 0;
const TICKS = 60;
const SLOW_TEXT = Array.from({ length: TICKS }, (_, i) => `tick ${i} `).join("");

let stack: Stack<ScriptedA2AServer>;
let iacCode: JsonObject;
const runtimes: CopilotRuntimeServer[] = [];

beforeAll(async () => {
  stack = await startStack({
    script: scriptByPrompt({
      [SLOW]: () => slowTurn("session-runner", TICKS, 40),
      // The same iac-code session as the slow turn: a thread keeps its session across turns.
      [HELLO]: () => [frame.working({ sessionId: "session-runner", text: "Hello.", messageId: `m-hello-${++hellos}` }), frame.status("TASK_STATE_COMPLETED", { sessionId: "session-runner" })],
    }),
    gateway: { authToken: TOKEN, reconnectGraceSeconds: 30 },
  });
  iacCode = (stack.input().forwardedProps as { iacCode: JsonObject }).iacCode;
});

afterAll(async () => {
  for (const runtime of runtimes) await runtime.close();
  await stack?.close();
});

/** A runtime process as an app configures it: GatewayAgents and a GatewayRunner, both with the gateway's token. */
async function startRuntime(): Promise<CopilotRuntimeServer> {
  const headers = { Authorization: `Bearer ${TOKEN}` };
  const runtime = await startCopilotRuntime(stack.gateway.url, iacAgents(iacCode), {
    agentClass: GatewayAgent,
    headers,
    runner: (fetch) => new GatewayRunner({ url: stack.gateway.url, headers, fetch }),
  });
  runtimes.push(runtime);
  return runtime;
}

/** A page loaded on an existing thread: it connects as CopilotChat does on mount, and resolves once connected. */
async function reloadedPage(runtime: CopilotRuntimeServer, threadId: string): Promise<CopilotClient> {
  const page = await connectClient(runtime.url, "iac", { threadId });
  await page.core.connectAgent({ agent: page.agent as never });
  return page;
}

/** What a conversation shows: roles and text, in order. */
const shown = (messages: readonly Message[]) =>
  messages.filter((m) => m.role === "user" || (m.role === "assistant" && typeof m.content === "string" && m.content !== "")).map((m) => ({ role: m.role, content: m.content }));

async function waitFor(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const ticksSeen = (page: CopilotClient) =>
  page.events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT" && /^tick \d+ $/.test((e as unknown as { delta: string }).delta)).length;

describe("GatewayRunner in @copilotkit/runtime", () => {
  it("a runtime restarted mid-run: the reloaded page's connect brings the conversation and the rest of the live run", async () => {
    const first = await startRuntime();
    const page = await connectClient(first.url, "iac");
    expect(finishedOf(await page.send(HELLO)).outcome?.type).toBe("success");
    const running = page.send(SLOW).catch(() => []);
    await waitFor(() => ticksSeen(page) >= 5, "the slow turn to stream");
    // The page is reloaded (its request aborted, as a browser does), and the runtime's process ends meanwhile: the
    // gateway loses its client. (Cutting the page's stream from the server side instead makes CopilotKit's 0.0.59 page
    // client rethrow the cut from its teardown as an unhandled rejection.)
    (page.agent as unknown as { abortController: AbortController }).abortController.abort();
    await running;
    await first.close();

    expect(ticksSeen(page)).toBeLessThan(TICKS);

    const second = await startRuntime();
    const reloaded = await reloadedPage(second, page.agent.threadId);
    expect(reloaded.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(reloaded.events.filter((e) => e.type === "MESSAGES_SNAPSHOT")).toHaveLength(1);
    const conversation = shown(reloaded.agent.messages as Message[]);
    expect(conversation.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(conversation.slice(0, 3)).toEqual(shown(page.agent.messages as Message[]).slice(0, 3));
    // The live run from its first event: every tick once, none missing.
    expect(conversation[3]!.content).toBe(SLOW_TEXT);
    expect(reloaded.errors).toEqual([]);
    await expectValidTraffic(second, reloaded);
    // The thread takes the next turn.
    expect(finishedOf(await reloaded.send(HELLO)).outcome?.type).toBe("success");
  });

  it("a new thread: the page's connect on load brings nothing and no error", async () => {
    const runtime = await startRuntime();
    const page = await reloadedPage(runtime, `never-used-${Date.now()}`);
    expect(page.events).toEqual([]);
    expect(page.errors).toEqual([]);
    expect(page.agent.messages).toEqual([]);
  });
});

describe("two runtimes in front of one gateway", () => {
  let a: CopilotRuntimeServer;
  let b: CopilotRuntimeServer;
  let runnerB: GatewayRunner;
  beforeAll(async () => {
    a = await startRuntime();
    const headers = { Authorization: `Bearer ${TOKEN}` };
    b = await startCopilotRuntime(stack.gateway.url, iacAgents(iacCode), {
      agentClass: GatewayAgent,
      headers,
      runner: (fetch) => (runnerB = new GatewayRunner({ url: stack.gateway.url, headers, fetch })),
    });
    runtimes.push(b);
  });

  it("an interrupt parked through A is shown by B's connect and answered through B", async () => {
    const onA = await connectClient(a.url, "iac");
    const parked = finishedOf(await onA.send("deploy the stack"));
    expect(parked.outcome?.type).toBe("interrupt");
    const interrupt = parked.outcome!.interrupts![0]!;
    const onB = await reloadedPage(b, onA.agent.threadId);
    const shownOnB = finishedOf(onB.events);
    expect(shownOnB.outcome?.interrupts?.map((i) => i.id)).toEqual([interrupt.id]);
    expect(shown(onB.agent.messages as Message[])[0]).toEqual({ role: "user", content: "deploy the stack" });
    const from = onB.events.length;
    await onB.core.runAgent({ agent: onB.agent as never, resume: [{ interruptId: interrupt.id, status: "resolved", payload: { decision: "allow_once" } }] } as never);
    expect(finishedOf(onB.events.slice(from)).outcome?.type).toBe("success");
    expect(onB.errors).toEqual([]);
    await expectValidTraffic(b, onB);
  });

  it("a run started through A: B says it runs, B's stop cancels it through the extension, and A's page sees the run end cancelled", async () => {
    const onA = await connectClient(a.url, "iac");
    const running = onA.send(SLOW);
    await waitFor(() => ticksSeen(onA) >= 3, "the slow turn to stream");
    const threadId = onA.agent.threadId;
    expect(await runnerB.isRunning({ threadId })).toBe(true);
    const cancelsBefore = stack.upstream.cancelled.length;
    // The page's stop button on a page served by B: the runtime's stop route.
    const stop = await fetch(`${b.url}/agent/iac/stop/${encodeURIComponent(threadId)}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    expect(await stop.json()).toMatchObject({ stopped: true });
    const ended = await running;
    // The gateway ended it cancelled; the page gets it as CopilotKit's runners end a stopped run.
    expect(ended.at(-1)).toEqual({ type: "RUN_FINISHED", threadId, runId: expect.any(String), timestamp: expect.any(Number) });
    const gatewayStream = (await expectValidTraffic(a, onA)).at(-1)!;
    expect(gatewayStream.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
    expect(ticksSeen(onA)).toBeLessThan(TICKS);
    expect(stack.upstream.cancelled.length).toBeGreaterThan(cancelsBefore);
    expect(await runnerB.isRunning({ threadId })).toBe(false);
    // Nothing runs now: a second stop says so.
    expect(await runnerB.stop({ threadId })).toBe(false);
    expect(onA.errors).toEqual([]);
  });

  it("the page's stop on the runtime that started the run cancels it the same way", async () => {
    const onA = await connectClient(a.url, "iac");
    const running = onA.send(SLOW);
    await waitFor(() => ticksSeen(onA) >= 3, "the slow turn to stream");
    onA.core.stopAgent({ agent: onA.agent as never });
    const ended = await running;
    expect(ended.at(-1)).toMatchObject({ type: "RUN_FINISHED" });
    await waitFor(() => stack.gateway.runs.activeRunCount === 0, "the run to end in the gateway");
    const status = await fetch(new URL(`threads/${encodeURIComponent(onA.agent.threadId)}`, stack.gateway.url), { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(await status.json()).toMatchObject({ status: "idle" });
    await expectValidTraffic(a, onA);
  });
});
