// GatewayAgent against streams that do not simply break: a replay window that a reconnect falls behind, a connection
// that goes silent, a proxy's 5xx HTML page, a run id a header cannot carry. Each expectation is the promise of
// docs/reconnect.md "GatewayAgent": one uninterrupted run, or a clear GatewayStreamError.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayStreamError } from "../src/client/index.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { at, runPlanned, type Outcome } from "./helpers/break-client-fetch.js";
import { scriptByPrompt, slowTurn, startStack, type Stack } from "./helpers/e2e.js";

const LONG_TEXT = "write a long text";
const TICKS = 60;

function text(run: Outcome): string {
  return run.agent.messages.filter((m) => m.role === "assistant").map((m) => String(m.content)).join("|");
}

function trace(run: Outcome): string {
  return `requests: ${JSON.stringify(run.requests.map((r) => [r.url.replace(/^http:\/\/[^/]+/, ""), r.lastEventId]))} events: ${run.events.map((e) => e.type).join(",")} error: ${String(run.error)}`;
}

describe("a reconnect that falls behind the gateway's replay window while the run still streams", () => {
  let stack: Stack<ScriptedA2AServer>;
  beforeAll(async () => {
    // The replay log keeps the last 10 records of a run: a reconnect that comes 30 records late is REPLAY_EXPIRED.
    stack = await startStack({ script: scriptByPrompt({ [LONG_TEXT]: () => slowTurn("session-trim", TICKS, 30) }), gateway: { reconnectGraceSeconds: 30, replay: { events: 10 } } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("the agent follows the live run to its real end (not an early RUN_FINISHED while the run still streams)", async () => {
    const input = stack.input({ prompt: LONG_TEXT });
    // First connection cut after the 5th text delta; the reconnect is slow (a flaky network) by 900 ms (~30 ticks).
    const run = await runPlanned(stack.gateway.url, input, (n) =>
      n === 0 ? { cut: at((e, i) => e.type === "TEXT_MESSAGE_CONTENT" && i >= 7, (r) => r.end) } : n === 1 ? { delayMs: 900 } : undefined,
    );
    expect(run.invalid).toEqual([]);
    expect(run.error, trace(run)).toBeUndefined();
    // The uncut run's text: every tick once.
    const all = text(run);
    const missing = Array.from({ length: TICKS }, (_, i) => i).filter((i) => all.split(`tick ${i} `).length !== 2);
    expect(missing, `${trace(run)} text: ${all}`).toEqual([]);
    // And when the agent says the run finished, the gateway says the thread is idle.
    const status = (await (await fetch(new URL(`threads/${input.threadId}`, stack.gateway.url))).json()) as { status: string };
    expect(status.status, trace(run)).toBe("idle");
  }, 30_000);
});

describe("connections that go silent, proxies' error pages, run ids a header cannot carry", () => {
  let stack: Stack<ScriptedA2AServer>;
  let graceZero: Stack<ScriptedA2AServer>;
  beforeAll(async () => {
    graceZero = await startStack({ script: scriptByPrompt({ [LONG_TEXT]: () => slowTurn("session-zero", 20, 20) }) });
    stack = await startStack({ script: scriptByPrompt({ [LONG_TEXT]: () => slowTurn("session-misc", 20, 20) }), gateway: { reconnectGraceSeconds: 30, heartbeatSeconds: 1 } });
  });
  afterAll(async () => {
    await stack?.close();
    await graceZero?.close();
  });

  it("a connection that stays open but goes silent (no bytes, no heartbeats) does not hang the run forever", async () => {
    const input = stack.input({ prompt: LONG_TEXT });
    // The gateway heartbeats every second; the proxy forwards 3 records, then nothing, and never closes. Three missed
    // heartbeats make the try a broken one.
    const pending = runPlanned(stack.gateway.url, input, (n) => (n === 0 ? { stall: at((_, i) => i === 2, (r) => r.end) } : undefined), { maxReconnects: 2, backoffMs: 20, idleTimeoutMs: 3_000 });
    const settled = await Promise.race([pending.then(() => "settled"), new Promise((resolve) => setTimeout(() => resolve("still waiting after 15 s"), 15_000))]);
    // (clean-up either way: unsubscribe is what a page's unmount does)
    expect(settled).toBe("settled");
  }, 30_000);

  it("a proxy's 502 HTML page on the first POST is retried as a 5xx (docs: 'maxReconnects tries … or the gateway's code of a 5xx')", async () => {
    const input = stack.input({ prompt: LONG_TEXT });
    const run = await runPlanned(stack.gateway.url, input, (n) => (n === 0 ? { status: 502 } : undefined));
    expect(run.error, trace(run)).toBeUndefined();
    expect(run.events.at(-1)?.type).toBe("RUN_FINISHED");
  }, 30_000);

  it("503 HTML pages on two reconnects after a cut: recovered", async () => {
    const input = stack.input({ prompt: LONG_TEXT });
    const run = await runPlanned(stack.gateway.url, input, (n) =>
      n === 0 ? { cut: at((e) => e.type === "TEXT_MESSAGE_START", (r) => r.end) } : n <= 2 ? { status: 503 } : undefined,
    );
    expect(run.invalid).toEqual([]);
    expect(run.error, trace(run)).toBeUndefined();
    expect(text(run).split("tick ").length).toBe(21);
  }, 30_000);

  it("502 pages on every try: a GatewayStreamError that says 502", async () => {
    const input = stack.input({ prompt: LONG_TEXT });
    const run = await runPlanned(stack.gateway.url, input, (n) => (n === 0 ? { cut: at((e) => e.type === "TEXT_MESSAGE_START", (r) => r.end) } : { status: 502 }), { maxReconnects: 2 });
    expect(run.error).toBeInstanceOf(GatewayStreamError);
    expect((run.error as GatewayStreamError).status).toBe(502);
    expect(run.events.filter((e) => e.type === "RUN_ERROR")).toEqual([]);
  }, 30_000);

  it("a reconnect's REPLAY_EXPIRED answer whose body is cut in transit is a broken try, not a final 409", async () => {
    // Grace 0 (the default): the cut cancels the run, its reconnect is answered 409 REPLAY_EXPIRED (then a connect).
    const input = graceZero.input({ prompt: LONG_TEXT });
    const run = await runPlanned(graceZero.gateway.url, input, (n) =>
      n === 0 ? { cut: at((e) => e.type === "TEXT_MESSAGE_START", (r) => r.end) } : n === 1 ? { cutErrorBody: true } : undefined,
    );
    expect(run.error, trace(run)).toBeUndefined();
    expect(run.events.at(-1)?.type, trace(run)).toBe("RUN_FINISHED");
  }, 30_000);

  it("a run id in non-Latin-1 Unicode (valid for the gateway) survives a cut before its first record", async () => {
    const input = stack.input({ prompt: LONG_TEXT, runId: `运行-${randomUUID()}` });
    const run = await runPlanned(stack.gateway.url, input, (n) => (n === 0 ? { cut: () => 0 } : undefined), { maxReconnects: 3 });
    expect(run.error, trace(run)).toBeUndefined();
    expect(run.events.at(-1)?.type).toBe("RUN_FINISHED");
  }, 30_000);
});
