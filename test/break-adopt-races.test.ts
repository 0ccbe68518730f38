// Breaking the adoption of a run a SIGKILLed gateway left streaming (--reconnect-grace, src/runs/adopt.ts): races
// between connects, turns, cancels and deletes on the orphaned thread, a task that ended while no gateway ran, and a
// gateway killed again while it follows an adopted run.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import type { RunAgentInput } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createDemoScript, demoSessionId, startScriptedA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import { ensureCliBuilt, startCliOnState, type CliGateway } from "./helpers/durable.js";
import { openSse, promptOf, runInput, slowTurn, waitFor, type WireEvent } from "./helpers/e2e.js";

const LONG = "write a long text";
const SHORT = "write a short text";
const DEPLOY = "deploy the stack";

let upstream: ScriptedA2AServer;
let root: string;
let current: CliGateway | undefined;
let grace = ["--reconnect-grace", "30"];

const start = async () => {
  current = await startCliOnState(upstream.url, root, grace);
  return current;
};
const url = (p = "") => new URL(p, current!.url).toString();

function valid(events: readonly WireEvent[]): void {
  for (const event of events) expect(() => EventSchema.parse(event), `event ${event.type}`).not.toThrow();
}

const count = (events: readonly WireEvent[], type: string) => events.filter((e) => e.type === type).length;

/** A run started on a fresh gateway, killed with SIGKILL after `ticks` text deltas; the gateway is started again. */
async function orphan(prompt: string, ticks: number, opts: { pauseMs?: number } = {}) {
  await start();
  const input = runInput(path.join(root, "ws-1"), { prompt, threadId: randomUUID() });
  const first = await openSse(url(), input);
  expect(first.status).toBe(200);
  await first.until(() => count(first.events, "TEXT_MESSAGE_CONTENT") >= ticks);
  const seen = JSON.stringify(first.events);
  const taskId = /"taskId":"([^"]+)"/.exec(seen)?.[1];
  const executionId = /"executionId":"([^"]+)"/.exec(seen)?.[1];
  expect(taskId).toBeDefined();
  await current!.kill("SIGKILL");
  first.abort();
  if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs));
  await start();
  return { input, taskId: taskId!, executionId: executionId! };
}

function connectBody(input: RunAgentInput) {
  return { threadId: input.threadId, runId: randomUUID(), forwardedProps: input.forwardedProps };
}

async function connect(input: RunAgentInput) {
  const live = await openSse(url("connect"), connectBody(input));
  return live;
}

function assistantText(events: readonly WireEvent[]): string {
  const snapshot = events.find((e) => e.type === "MESSAGES_SNAPSHOT") as { messages?: { role: string; content?: unknown }[] } | undefined;
  return (snapshot?.messages ?? []).filter((m) => m.role === "assistant").map((m) => String(m.content ?? "")).join("");
}

const status = async (threadId: string) => {
  const response = await fetch(url(`threads/${threadId}`));
  return { code: response.status, body: (await response.json().catch(() => ({}))) as { status?: string } };
};

const countOf = (list: readonly string[], id: string) => list.filter((x) => x === id).length;
const requestsFor = (method: string, taskId: string) =>
  upstream.requests.filter((r) => r.method === method && JSON.stringify(r.params).includes(taskId)).length;

describe("adoption of a SIGKILLed gateway's run: races and edges", () => {
  beforeAll(async () => {
    ensureCliBuilt();
    const pacedDemo = createDemoScript({ frameDelayMs: 40 });
    upstream = await startScriptedA2AServer({
      script: (turn) => {
        const prompt = promptOf(turn);
        if (prompt === LONG) return slowTurn(demoSessionId(turn.contextId), 60, 40);
        if (prompt === SHORT) return slowTurn(demoSessionId(turn.contextId), 12, 40);
        return pacedDemo(turn);
      },
    });
    root = await mkdtemp(path.join(tmpdir(), "agui-break-adopt-"));
    await mkdir(path.join(root, "ws-1"));
  }, 120_000);
  afterEach(async () => {
    await current?.kill("SIGKILL");
    current = undefined;
    grace = ["--reconnect-grace", "30"];
  });
  afterAll(async () => {
    await current?.kill("SIGKILL");
    await upstream?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("two connects at once to the orphaned thread: one run, both end with the run's outcome and the whole text", async () => {
    const { input, taskId } = await orphan(LONG, 5);
    const [a, b] = await Promise.all([connect(input), connect(input)]);
    const [ea, eb] = await Promise.all([a.rest(), b.rest()]);
    valid(ea);
    valid(eb);
    expect(upstream.cancelled).not.toContain(taskId);
    for (const events of [ea, eb]) {
      expect(events[0]?.type).toBe("RUN_STARTED");
      expect(count(events, "RUN_STARTED")).toBe(1);
      expect(count(events, "MESSAGES_SNAPSHOT")).toBeGreaterThanOrEqual(1);
      expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    }
    // Whichever connect lost the race must not say the run finished while it still streams: both see its whole text.
    expect(assistantText(ea), "first connect's conversation").toContain("tick 59 ");
    expect(assistantText(eb), "second connect's conversation").toContain("tick 59 ");
  }, 60_000);

  it("two connects at once while the orphan runs to a permission: both end at the permission's interrupt", async () => {
    const { input } = await orphan(DEPLOY, 2);
    const [a, b] = await Promise.all([connect(input), connect(input)]);
    const [ea, eb] = await Promise.all([a.rest(), b.rest()]);
    valid(ea);
    valid(eb);
    expect(ea.at(-1), "first connect").toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt" } });
    expect(eb.at(-1), "second connect").toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt" } });
  }, 60_000);

  it("a new turn on the orphaned thread before anyone connects: never two runs on the one task", async () => {
    grace = ["--reconnect-grace", "2"];
    const { input, taskId } = await orphan(LONG, 5);
    const next = { ...input, runId: randomUUID(), messages: [...input.messages, { id: `m-${randomUUID()}`, role: "user" as const, content: SHORT }] };
    const turn = await openSse(url(), next);
    const events = await turn.rest();
    if (turn.status === 200) {
      valid(events);
      expect(upstream.cancelled, "the orphan's task is recovered (cancelled) before the turn").toContain(taskId);
      expect(events.at(-1), JSON.stringify(events.at(-1))).toMatchObject({ type: "RUN_FINISHED" });
    } else {
      expect(turn.status).toBe(409);
    }
    // Past the grace: nothing more is cancelled, the thread is idle, and a connect adopts nothing.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(countOf(upstream.cancelled, taskId)).toBeLessThanOrEqual(1);
    expect((await status(input.threadId)).body.status).toBe("idle");
    const c = await connect(input);
    const ce = await c.rest();
    valid(ce);
    expect(ce.at(-1)?.type).toBe("RUN_FINISHED");
  }, 60_000);

  it("DELETE /threads/{id} while a connect follows the adopted run: the task is cancelled once, the thread stays gone", async () => {
    const { input, taskId } = await orphan(LONG, 5);
    const c = await connect(input);
    await c.until((e) => e.type === "RUN_STARTED");
    await new Promise((r) => setTimeout(r, 300));
    const deleted = await fetch(url(`threads/${input.threadId}`), { method: "DELETE" });
    expect(deleted.status).toBeLessThan(300);
    const events = await c.rest(8_000);
    valid(events);
    expect(["RUN_FINISHED", "RUN_ERROR"], "the connect ends").toContain(events.at(-1)?.type);
    await new Promise((r) => setTimeout(r, 500));
    expect(countOf(upstream.cancelled, taskId), "the kernel task cancelled exactly once").toBe(1);
    expect((await status(input.threadId)).code, "the deleted thread is not written back by the adopted run's end").toBe(404);
  }, 60_000);

  it("cancel through the extension while a connect follows the adopted run: cancelled outcome, task cancelled once", async () => {
    const { input, taskId, executionId } = await orphan(LONG, 5);
    const c = await connect(input);
    await c.until((e) => e.type === "RUN_STARTED");
    await new Promise((r) => setTimeout(r, 300));
    const cancelled = await fetch(url(`extensions/iac-code/v1/executions/${executionId}/cancel`), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ threadId: input.threadId, rosInvocationId: "invocation-1" }),
    });
    const body = await cancelled.json();
    expect(cancelled.status, JSON.stringify(body)).toBe(200);
    const events = await c.rest(8_000);
    valid(events);
    expect(events.at(-1)?.type).toBe("RUN_FINISHED");
    expect(assistantText(events)).not.toContain("tick 59 ");
    await new Promise((r) => setTimeout(r, 300));
    expect(countOf(upstream.cancelled, taskId)).toBe(1);
    expect((await status(input.threadId)).body.status).toBe("idle");
  }, 60_000);

  it("the kernel task completes while no gateway runs: the connect ends with success and the whole text", async () => {
    const { input, taskId } = await orphan(SHORT, 2, { pauseMs: 1_000 });
    const c = await connect(input);
    const events = await c.rest();
    valid(events);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(assistantText(events)).toContain("tick 11 ");
    expect(upstream.cancelled).not.toContain(taskId);
    expect((await status(input.threadId)).body.status).toBe("idle");
  }, 60_000);

  it("killed again while it follows the adopted run: a third process adopts it and the run ends with the whole text", async () => {
    const { input, taskId } = await orphan(LONG, 5);
    const c = await connect(input);
    await c.until((e) => e.type === "RUN_STARTED");
    await new Promise((r) => setTimeout(r, 500));
    await current!.kill("SIGKILL");
    c.abort();
    await start();
    const again = await connect(input);
    const events = await again.rest();
    valid(events);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(assistantText(events)).toContain("tick 59 ");
    expect(upstream.cancelled).not.toContain(taskId);
    expect(requestsFor("SubscribeToTask", taskId)).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it("grace expiry racing a connect: the connect either adopts (no cancel) or sees the recovered thread, never both", async () => {
    const outcomes: string[] = [];
    for (const delay of [900, 1_000, 1_100]) {
      grace = ["--reconnect-grace", "1"];
      const { input, taskId } = await orphan(LONG, 3);
      await new Promise((r) => setTimeout(r, delay));
      const c = await connect(input);
      const events = await c.rest(10_000);
      valid(events);
      expect(events.at(-1)?.type, `delay ${delay}`).toBe("RUN_FINISHED");
      const text = assistantText(events);
      const cancelled = upstream.cancelled.includes(taskId);
      outcomes.push(`${delay}:${cancelled ? "cancelled" : "adopted"}`);
      if (!cancelled) expect(text, `delay ${delay}: adopted, so whole`).toContain("tick 59 ");
      expect(countOf(upstream.cancelled, taskId), `delay ${delay}`).toBeLessThanOrEqual(1);
      await new Promise((r) => setTimeout(r, 300));
      expect((await status(input.threadId)).body.status, `delay ${delay}`).toBe("idle");
      await current!.kill("SIGKILL");
    }
    expect(outcomes.length).toBe(3);
  }, 120_000);
  it("a second connect while the first follows the adopted run: it ends with the run's outcome and whole text too", async () => {
    const { input, taskId } = await orphan(LONG, 5);
    const a = await connect(input);
    await a.until((e) => e.type === "RUN_STARTED");
    await new Promise((r) => setTimeout(r, 300));
    const b = await connect(input);
    const [ea, eb] = await Promise.all([a.rest(), b.rest()]);
    valid(ea);
    valid(eb);
    expect(ea.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(eb.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(assistantText(ea)).toContain("tick 59 ");
    expect(eb.map((e) => JSON.stringify(e)).join("")).toContain("tick 59 ");
    expect(upstream.cancelled).not.toContain(taskId);
  }, 60_000);

  it("the client of the adopting connect goes away: a connect again gets the run to its end, nothing cancelled", async () => {
    const { input, taskId } = await orphan(LONG, 5);
    const a = await connect(input);
    await a.until((e) => e.type === "RUN_STARTED");
    await new Promise((r) => setTimeout(r, 300));
    a.abort();
    await new Promise((r) => setTimeout(r, 200));
    const b = await connect(input);
    const eb = await b.rest();
    valid(eb);
    expect(eb.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(eb.map((e) => JSON.stringify(e)).join("")).toContain("tick 59 ");
    expect(upstream.cancelled).not.toContain(taskId);
  }, 60_000);
});
