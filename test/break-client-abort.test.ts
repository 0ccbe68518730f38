// GatewayAgent.abortRun() at awkward moments: before the run names its execution, during a reconnect's backoff,
// twice, and followed at once by the next run on the same agent (what a Stop button then a new message does).
import type { BaseEvent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayAgent } from "../src/client/index.js";
import { cancelExecution } from "../src/client/gateway-calls.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { at, plannedFetch, type Plan } from "./helpers/break-client-fetch.js";
import { scriptByPrompt, slowTurn, startStack, type Stack } from "./helpers/e2e.js";

const LONG_TEXT = "write a long text";

interface Run {
  events: BaseEvent[];
  error?: unknown;
  settledAt?: number;
}

function start(agent: GatewayAgent, runId: string, forwardedProps: unknown, onEvent: (event: BaseEvent, events: BaseEvent[]) => void = () => {}): { run: Run; done: Promise<Run> } {
  const run: Run = { events: [] };
  const done = agent
    .runAgent({ runId, forwardedProps }, { onEvent: ({ event }) => void (run.events.push(event), onEvent(event, run.events)) })
    .then(
      () => run,
      (error: unknown) => ((run.error = error), run),
    )
    .finally(() => (run.settledAt = Date.now()));
  return { run, done };
}

function rosOf(forwardedProps: unknown): { rosInvocationId?: string } {
  const proof = (forwardedProps as { iacCode?: { rosInvocationId?: unknown } } | undefined)?.iacCode?.rosInvocationId;
  return typeof proof === "string" ? { rosInvocationId: proof } : {};
}

describe.each([30, 0])("abortRun, reconnect grace %i s", (grace) => {
  let stack: Stack<ScriptedA2AServer>;
  beforeAll(async () => {
    stack = await startStack({ script: scriptByPrompt({ [LONG_TEXT]: () => slowTurn("session-abort", 60, 40) }), gateway: { reconnectGraceSeconds: grace } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  function agentFor(input: ReturnType<Stack<ScriptedA2AServer>["input"]>, plan: (n: number) => Plan = () => undefined, config: Record<string, unknown> = {}) {
    const planned = plannedFetch(plan);
    const agent = new GatewayAgent({ url: stack.gateway.url, threadId: input.threadId, initialMessages: input.messages, backoffMs: 20, ...config });
    agent.fetch = planned.fetch as never;
    return { agent, planned };
  }

  it("Stop right after RUN_STARTED (before the session event), then the next message on the same agent: it runs", async () => {
    const input = stack.input({ prompt: LONG_TEXT });
    const { agent } = agentFor(input);
    const first = await start(agent, input.runId, input.forwardedProps, (event) => {
      if (event.type === "RUN_STARTED") agent.abortRun();
    }).done;
    for (const event of first.events) expect(EventSchema.safeParse(event).success).toBe(true);
    agent.addMessage({ id: `m-${Date.now()}`, role: "user", content: LONG_TEXT });
    const second = await start(agent, `${input.runId}-2`, input.forwardedProps).done;
    expect(String(second.error ?? "")).not.toMatch(/THREAD_BUSY/);
    expect(second.error).toBeUndefined();
    expect(second.events.at(-1)?.type).toBe("RUN_FINISHED");
  }, 30_000);

  it("Stop before the session, the next message meets THREAD_BUSY, and the stopped run ends before the agent asks the thread: the message is sent again and runs", async () => {
    const input = stack.input({ prompt: LONG_TEXT });
    const real = plannedFetch(() => undefined).fetch;
    const statusOf = async () => (await (await real(`${stack.gateway.url.replace(/\/+$/, "")}/threads/${input.threadId}`, { headers: { Accept: "application/json" } })).json()) as { status: string; executionId?: string };
    let busyAnswers = 0;
    // Before the refusal, the agent's look at the thread finds nothing (so the stopped run keeps the thread); after it,
    // the look waits until another caller has cancelled that run and the thread is idle.
    const racing = async (url: string, init: RequestInit): Promise<Response> => {
      const isStatus = (init.method ?? "GET") === "GET" && url.includes("/threads/");
      if (isStatus && busyAnswers === 0) return new Response("{}", { status: 503, headers: { "Content-Type": "application/json" } });
      if (isStatus) {
        for (let i = 0; i < 100; i++) {
          const status = await statusOf();
          if (status.status === "idle") break;
          if (status.executionId) await cancelExecution({ url: stack.gateway.url, headers: {}, fetch: real }, { executionId: status.executionId, threadId: input.threadId, ...rosOf(input.forwardedProps) });
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      const response = await real(url, init);
      if (response.status === 409 && !isStatus) busyAnswers++;
      return response;
    };
    const agent = new GatewayAgent({ url: stack.gateway.url, threadId: input.threadId, initialMessages: input.messages, backoffMs: 20 });
    agent.fetch = racing as never;
    await start(agent, input.runId, input.forwardedProps, (event) => {
      if (event.type === "RUN_STARTED") agent.abortRun();
    }).done;
    agent.addMessage({ id: `m-${Date.now()}`, role: "user", content: LONG_TEXT });
    const second = await start(agent, `${input.runId}-2`, input.forwardedProps).done;
    for (const event of second.events) expect(EventSchema.safeParse(event).success).toBe(true);
    expect(second.error).toBeUndefined();
    expect(second.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    if (grace > 0) expect(busyAnswers).toBeGreaterThanOrEqual(1);
  }, 30_000);

  it("Stop mid-run (session known), then at once the next message on the same agent: it runs", async () => {
    const input = stack.input({ prompt: LONG_TEXT });
    const { agent } = agentFor(input);
    const first = start(agent, input.runId, input.forwardedProps, (event, events) => {
      if (event.type === "TEXT_MESSAGE_CONTENT" && events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").length === 3) agent.abortRun();
    });
    await first.done;
    expect(first.run.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
    agent.addMessage({ id: `m-${Date.now()}`, role: "user", content: LONG_TEXT });
    const second = await start(agent, `${input.runId}-2`, input.forwardedProps).done;
    expect(second.error).toBeUndefined();
    expect(second.events.at(-1)?.type).toBe("RUN_FINISHED");
  }, 30_000);

  it("abortRun twice mid-run: one cancelled outcome, no error", async () => {
    const input = stack.input({ prompt: LONG_TEXT });
    const { agent, planned } = agentFor(input);
    const first = await start(agent, input.runId, input.forwardedProps, (event, events) => {
      if (event.type === "TEXT_MESSAGE_CONTENT" && events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").length === 3) {
        agent.abortRun();
        agent.abortRun();
      }
    }).done;
    expect(first.error).toBeUndefined();
    expect(first.events.filter((e) => e.type === "RUN_FINISHED")).toHaveLength(1);
    expect(first.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
    expect(planned.requests.filter((r) => r.url.endsWith("/cancel")).length).toBeGreaterThanOrEqual(1);
  }, 30_000);

  it("abortRun during a reconnect backoff before the session event ends the run promptly (not after the backoff)", async () => {
    const input = stack.input({ prompt: LONG_TEXT });
    // Every connection is cut before any record: the agent backs off 4 s, 5 s, ...
    const { agent } = agentFor(input, () => ({ cut: () => 0 }), { backoffMs: 4_000, maxBackoffMs: 5_000 });
    const first = start(agent, input.runId, input.forwardedProps);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const abortedAt = Date.now();
    agent.abortRun();
    await first.done;
    expect(first.run.settledAt! - abortedAt).toBeLessThan(1_500);
  }, 30_000);

  it("abortRun during a reconnect backoff after the session event: the run ends cancelled", async () => {
    const input = stack.input({ prompt: LONG_TEXT });
    // The first connection is cut after 3 deltas, every other one before any record.
    const { agent } = agentFor(input, (n) => (n === 0 ? { cut: at((e, i) => e.type === "TEXT_MESSAGE_CONTENT" && i >= 5, (r) => r.end) } : n <= 2 ? { cut: () => 0 } : undefined), { backoffMs: 300 });
    const first = start(agent, input.runId, input.forwardedProps);
    await new Promise((resolve) => setTimeout(resolve, 600));
    agent.abortRun();
    const run = await first.done;
    expect(run.error).toBeUndefined();
    for (const event of run.events) expect(EventSchema.safeParse(event).success).toBe(true);
    const outcome = (run.events.at(-1) as { outcome?: { type: string } }).outcome?.type;
    // grace 0: the cut already ended the run (cancelled on disconnect); grace 30: the cancel did.
    expect(run.events.at(-1)?.type).toBe("RUN_FINISHED");
    if (grace > 0) expect(outcome).toBe("cancelled");
  }, 30_000);
});
