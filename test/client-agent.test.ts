// GatewayAgent (agui-gateway/client), the real @ag-ui/client agent a page or a server uses, against a real gateway:
// its runs survive a proxy that cuts the TCP connection at random points (100 cuts), a gateway killed with SIGKILL
// and started again mid-stream (with --reconnect-grace the restarted gateway takes the run up: the whole text, or the
// permission it then stops at, answered afterwards), and a reload (connectAgent on a fresh agent); abortRun() cancels
// through the cancel extension. Every event the subscriber sees parses with EventSchema; verifyEvents runs inside runAgent.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import type { BaseEvent, Message, RunAgentInput } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { GatewayAgent, GatewayStreamError } from "../src/client/index.js";
import { createDemoScript, startScriptedA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import { startCuttingProxy, type CuttingProxy } from "./helpers/cutting-proxy.js";
import { ensureCliBuilt, startCliOnState, type CliGateway } from "./helpers/durable.js";
import { promptOf, runInput, scriptByPrompt, slowTurn, startStack, waitFor, type Stack } from "./helpers/e2e.js";
import { eventually } from "./helpers/replicas.js";
import { seeded } from "./helpers/seeded.js";

const LONG_TEXT = "write a long text";
const DEPLOY = "deploy the stack";
const PACED_DEMO = createDemoScript({ frameDelayMs: 3 });

function script() {
  return scriptByPrompt({
    [LONG_TEXT]: () => slowTurn("session-long", 120, 2),
    [DEPLOY]: (turn) => PACED_DEMO(turn) as never,
  });
}

interface AgentRun {
  agent: GatewayAgent;
  events: BaseEvent[];
  error?: unknown;
}

/** One run the way an app makes it: a fresh agent on the input's thread, runAgent with the input's ids and props. */
async function runAgent(url: string, input: RunAgentInput, config: Partial<ConstructorParameters<typeof GatewayAgent>[0]> = {}): Promise<AgentRun> {
  const agent = new GatewayAgent({ url, threadId: input.threadId, initialMessages: input.messages, backoffMs: 20, ...config });
  return runOn(agent, input);
}

async function runOn(agent: GatewayAgent, input: RunAgentInput): Promise<AgentRun> {
  const events: BaseEvent[] = [];
  const run: AgentRun = { agent, events };
  try {
    await agent.runAgent({ runId: input.runId, forwardedProps: input.forwardedProps, tools: input.tools, context: input.context }, { onEvent: ({ event }) => void events.push(event) });
  } catch (error) {
    run.error = error;
  }
  for (const event of events) expect(() => EventSchema.parse(event), `event ${event.type}`).not.toThrow();
  return run;
}

/** What a conversation shows: roles and text, in order (ids differ between two runs of the same prompt). */
function shown(messages: readonly Message[]): { role: string; content: unknown; tools?: string[] }[] {
  return messages.map((m) => ({
    role: m.role,
    // The demo names each deployment's stack at random.
    content: typeof m.content === "string" ? m.content.replace(/demo-[0-9a-f]{6}/g, "demo-…") : m.content,
    ...("toolCalls" in m && m.toolCalls && { tools: m.toolCalls.map((t) => t.function.name) }),
  }));
}

describe("GatewayAgent across cut connections", () => {
  let stack: Stack<ScriptedA2AServer>;
  let proxy: CuttingProxy;
  let cutAfter: () => number | undefined = () => undefined;
  beforeAll(async () => {
    stack = await startStack({ script: script(), gateway: { reconnectGraceSeconds: 30 } });
    proxy = await startCuttingProxy(stack.gateway.url, () => cutAfter());
  });
  afterAll(async () => {
    await proxy?.close();
    await stack?.close();
  });

  it("100 random cuts: every run ends as the uncut run does, no event twice, none missing, no RUN_ERROR", async () => {
    const prompts = [LONG_TEXT, DEPLOY];
    const uncut = new Map<string, AgentRun>();
    for (const prompt of prompts) {
      const run = await runAgent(stack.gateway.url, stack.input({ prompt }));
      expect(run.error).toBeUndefined();
      uncut.set(prompt, run);
    }
    const random = seeded(24);
    cutAfter = () => 150 + Math.floor(random() * 3_000);
    for (let round = 0; proxy.cuts < 100 && round < 80; round++) {
      const prompt = prompts[round % prompts.length]!;
      const reference = uncut.get(prompt)!;
      const run = await runAgent(proxy.url, stack.input({ prompt }));
      expect(run.error, `round ${round}`).toBeUndefined();
      expect(run.events.map((e) => e.type), `round ${round}`).toEqual(reference.events.map((e) => e.type));
      expect(shown(run.agent.messages), `round ${round}`).toEqual(shown(reference.agent.messages));
      expect(run.events.filter((e) => e.type === "RUN_ERROR")).toEqual([]);
    }
    cutAfter = () => undefined;
    expect(proxy.cuts).toBeGreaterThanOrEqual(100);
  }, 240_000);

  it("a reloaded page's agent connects: connectAgent brings the conversation and the outcome", async () => {
    const input = stack.input({ prompt: DEPLOY });
    const first = await runAgent(stack.gateway.url, input);
    expect(first.error).toBeUndefined();
    const reloaded = new GatewayAgent({ url: proxy.url, threadId: input.threadId });
    const events: BaseEvent[] = [];
    cutAfter = (() => {
      let connections = 0;
      return () => (connections++ === 0 ? 900 : undefined);
    })();
    await reloaded.connectAgent({ forwardedProps: input.forwardedProps }, { onEvent: ({ event }) => void events.push(event) });
    cutAfter = () => undefined;
    for (const event of events) expect(() => EventSchema.parse(event)).not.toThrow();
    expect(events[0]?.type).toBe("RUN_STARTED");
    expect(events.filter((e) => e.type === "MESSAGES_SNAPSHOT")).toHaveLength(1);
    const outcome = first.events.at(-1) as { type: string; outcome?: unknown };
    expect(events.at(-1)).toMatchObject({ type: outcome.type, outcome: outcome.outcome });
    expect(reloaded.messages.map((m) => [m.role, m.content])).toEqual(
      first.agent.messages.filter((m) => m.role === "user" || (m.role === "assistant" && typeof m.content === "string" && m.content !== "")).map((m) => [m.role, m.content]),
    );
  }, 60_000);

  it("abortRun() cancels through the cancel extension: the run ends with the cancelled outcome", async () => {
    const input = stack.input({ prompt: LONG_TEXT });
    const agent = new GatewayAgent({ url: stack.gateway.url, threadId: input.threadId, initialMessages: input.messages });
    const events: BaseEvent[] = [];
    const cancels: string[] = [];
    agent.fetch = (url, init) => {
      if (String(url).endsWith("/cancel")) cancels.push(String(url));
      return fetch(url, init);
    };
    await agent.runAgent({ runId: input.runId, forwardedProps: input.forwardedProps }, {
      onEvent: ({ event }) => {
        events.push(event);
        if (event.type === "TEXT_MESSAGE_CONTENT" && events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").length === 5) agent.abortRun();
      },
    });
    expect(cancels).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
    expect(events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").length).toBeLessThan(120);
  }, 30_000);

  it("a cut that cannot be recovered ends the run with a clear error", async () => {
    const input = stack.input({ prompt: LONG_TEXT });
    const gone = await startCuttingProxy(stack.gateway.url, () => 400);
    const run = await runAgent(gone.url, input, { maxReconnects: 2, backoffMs: 10 });
    await gone.close();
    // Every connection is cut after 400 bytes, before a record of its own: no try brings anything new.
    expect(run.error).toBeInstanceOf(GatewayStreamError);
    expect((run.error as GatewayStreamError).code).toBe("UNREACHABLE");
    expect(run.events.filter((e) => e.type === "RUN_FINISHED")).toEqual([]);
  }, 30_000);
});

describe("GatewayAgent when the gateway is killed with SIGKILL mid-run and started again", () => {
  let upstream: ScriptedA2AServer;
  let root: string;
  let current: CliGateway | undefined;
  let balancer: CuttingProxy;
  beforeAll(async () => {
    ensureCliBuilt();
    // Everything but the long text is the demo agent at a pace a kill lands in (its answers too: one instance).
    const pacedDemo = createDemoScript({ frameDelayMs: 40 });
    upstream = await startScriptedA2AServer({ script: (turn) => (promptOf(turn) === LONG_TEXT ? slowTurn("session-kill", 60, 40) : pacedDemo(turn)) });
    root = await mkdtemp(path.join(tmpdir(), "agui-agent-restart-"));
    await mkdir(path.join(root, "ws-1"));
    // One address for the client, whichever process serves behind it (a balancer in front of a restarting gateway).
    balancer = await startCuttingProxy(() => current?.url ?? "http://127.0.0.1:9", () => undefined);
  }, 120_000);
  afterAll(async () => {
    await current?.kill("SIGKILL");
    await balancer?.close();
    await upstream?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });
  let grace: string[] = [];
  const start = async () => {
    current = await startCliOnState(upstream.url, root, grace);
  };

  /** One run through the balancer; the gateway is killed with SIGKILL after the 10th text delta and started again. */
  async function runThroughKill(prompt = LONG_TEXT): Promise<{ agent: GatewayAgent; events: BaseEvent[]; text: string; input: RunAgentInput }> {
    await start();
    const input = runInput(path.join(root, "ws-1"), { prompt, threadId: randomUUID() });
    const agent = new GatewayAgent({ url: balancer.url, threadId: input.threadId, initialMessages: input.messages, backoffMs: 100, maxReconnects: 10 });
    let killed = false;
    const events: BaseEvent[] = [];
    let failure: unknown;
    await agent
      .runAgent({ runId: input.runId, forwardedProps: input.forwardedProps }, {
        onEvent: ({ event }) => {
          events.push(event);
          if (!killed && events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").length === (prompt === LONG_TEXT ? 10 : 2)) {
            killed = true;
            void current!.kill("SIGKILL").then(start);
          }
        },
      })
      .catch((error: unknown) => (failure = error));
    expect(failure).toBeUndefined();
    expect(killed).toBe(true);
    for (const event of events) expect(() => EventSchema.parse(event)).not.toThrow();
    expect(events.filter((e) => e.type === "RUN_STARTED")).toHaveLength(1);
    expect(events.filter((e) => e.type === "MESSAGES_SNAPSHOT")).toHaveLength(1);
    const assistant = agent.messages.filter((m) => m.role === "assistant");
    expect(assistant.length).toBeGreaterThan(0);
    return { agent, events, input, text: assistant.map((m) => String(m.content)).join("") };
  }

  afterEach(async () => {
    await current?.kill("SIGKILL");
    current = undefined;
  });

  // The restarted gateway keeps none of the killed one's streams. With --reconnect-grace it keeps the run the kernel
  // goes on with: the agent's reconnect is told the events are gone, it connects, the connect takes the run up and
  // follows it to its end, and the agent ends with the whole conversation.
  it("with --reconnect-grace: the run is taken up by the restarted gateway and ends as the uncut run does", async () => {
    grace = ["--reconnect-grace", "30"];
    const { events, text } = await runThroughKill();
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    for (let i = 0; i < 60; i++) expect(text.split(`tick ${i} `), `tick ${i}`).toHaveLength(2);
    expect(text).not.toMatch(/cancel/i);
  }, 120_000);

  it("with --reconnect-grace: a deployment killed before its permission ends at the permission, which is then answered", async () => {
    grace = ["--reconnect-grace", "30"];
    const { agent, events, input } = await runThroughKill(DEPLOY);
    const finished = events.at(-1) as { type: string; outcome?: { type: string; interrupts?: { id: string }[] } };
    expect(finished).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt" } });
    const interrupt = finished.outcome!.interrupts![0]!;
    expect(interrupt.id).toMatch(/^permission-/);
    // The permission was parked by the restarted gateway: the answer is admitted and the deployment finishes.
    const answered: BaseEvent[] = [];
    await agent.runAgent(
      { runId: randomUUID(), forwardedProps: input.forwardedProps, resume: [{ interruptId: interrupt.id, status: "resolved", payload: { decision: "allow_once" } }] },
      { onEvent: ({ event }) => void answered.push(event) },
    );
    for (const event of answered) expect(() => EventSchema.parse(event)).not.toThrow();
    expect(answered.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  }, 120_000);

  it("with --reconnect-grace: a run nobody comes back to is cancelled once the grace is over", async () => {
    // Four seconds: long enough that a loaded machine still reads the thread inside the grace.
    grace = ["--reconnect-grace", "4"];
    await start();
    const input = runInput(path.join(root, "ws-1"), { prompt: LONG_TEXT, threadId: randomUUID() });
    const response = await fetch(current!.url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(input) });
    const reader = response.body!.getReader();
    let seen = "";
    while (!seen.includes("tick 3 ")) seen += new TextDecoder().decode((await reader.read()).value ?? new Uint8Array());
    const taskId = /"taskId":"([^"]+)"/.exec(seen)![1]!;
    await current!.kill("SIGKILL");
    await start();
    const status = async () => (await (await fetch(new URL(`threads/${input.threadId}`, current!.url))).json()) as { status: string };
    // Kept for the grace: the kernel goes on with it and nobody cancelled it.
    expect((await status()).status).toBe("running");
    expect(upstream.cancelled).not.toContain(taskId);
    await waitFor(() => upstream.cancelled.includes(taskId), 15_000);
    expect(upstream.cancelled).toContain(taskId);
    // The kernel hears the cancel before the gateway stores the run as ended.
    await eventually(async () => (await status()).status === "idle", 5_000);
    expect((await status()).status).toBe("idle");
  }, 60_000);

  // Without it, the restarted gateway cancels the task it finds orphaned: the run ends with the conversation as the
  // kernel has it, what was streamed before the kill there once.
  it("without: the run ends as one run with the conversation so far, recovered through connect", async () => {
    grace = [];
    const { events, text } = await runThroughKill();
    expect(events.at(-1)?.type).toBe("RUN_FINISHED");
    for (let i = 0; i < 10; i++) expect(text.split(`tick ${i} `)).toHaveLength(2);
  }, 120_000);
});
