// Plumbing for the replica end-to-end files (issue #17): one real redis-server, one scripted A2A kernel and two
// real gateway processes (the CLI) sharing both, plus more processes on demand (one to SIGKILL, one on a kernel of
// its own). Everything listens on 127.0.0.1 and everything is stopped by close().
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { RunAgentInput } from "@ag-ui/client";
import { expect } from "vitest";
import { createDemoScript, startScriptedA2AServer, type ScriptItem, type ScriptedA2AServer, type TurnScript } from "../../src/demo/index.js";
import { ensureCliBuilt, startCli, type CliGateway } from "./durable.js";
import { liveSse, promptOf, runInput, slowTurn, type InputOverrides, type LiveSse } from "./e2e.js";
import { streamProblems } from "./checks.js";
import { startRedis, type RedisServer } from "./redis.js";
import { isTerminal, type WireEvent } from "./sse.js";

/** Short, so expiry is seen within a test; long enough that a busy 2-core machine renews in time (every third). */
export const LEASE_TTL_SECONDS = 2;

/**
 * The demo agent, plus: "slow …" streams for 10 s (a cancel ends it at once), "brief slow …" for 1.5 s, and a
 * "deploy" prompt that mentions a pause waits 0.8 s before it asks its permission (time to break Redis first).
 */
export function replicaScript(): TurnScript {
  const demo = createDemoScript({ frameDelayMs: 0 });
  return (turn) => {
    const prompt = promptOf(turn);
    if (prompt.startsWith("slow")) return slowTurn(`session-${turn.contextId}`, 200, 50);
    if (prompt.startsWith("brief slow")) return slowTurn(`session-${turn.contextId}`, 30, 50);
    if (prompt.includes("pause")) return pausedBeforeAsking(demo(turn), 800);
    return demo(turn);
  };
}

async function* pausedBeforeAsking(items: Iterable<ScriptItem> | AsyncIterable<ScriptItem>, pauseMs: number): AsyncGenerator<ScriptItem> {
  for await (const item of items) {
    const update = (item as { statusUpdate?: { metadata?: { iac_code?: { input?: unknown } } } }).statusUpdate;
    if (update?.metadata?.iac_code?.input !== undefined) yield { delayMs: pauseMs };
    yield item;
  }
}

export interface Replicas {
  redis: RedisServer;
  kernel: ScriptedA2AServer;
  root: string;
  workspace: string;
  a: CliGateway;
  b: CliGateway;
  /** Another gateway process on the same Redis (and the shared kernel unless told otherwise). */
  spawn(kernelUrl?: string): Promise<CliGateway>;
  input(overrides?: InputOverrides): RunAgentInput;
  close(): Promise<void>;
}

/** `env`: more variables for every gateway process (e.g. the OTLP endpoint). */
export async function startReplicas(env: Record<string, string> = {}): Promise<Replicas> {
  ensureCliBuilt();
  const children: CliGateway[] = [];
  const redis = await startRedis();
  // A kernel like a newer iac-code: it answers session restores, for the sessions it has in memory.
  const kernel = await startScriptedA2AServer({ script: replicaScript(), sessionRestore: true });
  const root = await mkdtemp(path.join(tmpdir(), "agui-replicas-"));
  const workspace = path.join(root, "ws-1");
  await mkdir(workspace);
  const spawn = async (kernelUrl = kernel.url): Promise<CliGateway> => {
    const args = ["--a2a-url", kernelUrl, "--port", "0", "--state-store", redis.url, "--lease-ttl", String(LEASE_TTL_SECONDS)];
    // The state dir is never used with --state-store; it is given so nothing lands in ~/.iac-code.
    const child = await startCli([...args, "--state-dir", path.join(root, "state")], { IAC_CODE_AGUI_ALLOWED_CWDS: root, ...env });
    children.push(child);
    return child;
  };
  const close = async () => {
    await Promise.all(children.map((child) => child.kill("SIGKILL")));
    await kernel.close();
    await redis.stop();
    await rm(root, { recursive: true, force: true });
  };
  try {
    const [a, b] = await Promise.all([spawn(), spawn()]);
    return { redis, kernel, root, workspace, a, b, spawn, input: (overrides) => runInput(workspace, overrides), close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A POST / answered either with a refusal (its JSON envelope) or with a stream, read as it comes. */
export type Posted = { status: number; json: any; live?: undefined } | { status: 200; json?: undefined; live: LiveSse };

export async function postRun(url: string, body: unknown): Promise<Posted> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  if (response.status === 200) return { status: 200, live: liveSse(response, controller) };
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  return { status: response.status, json: await response.json() };
}

/** Reads a stream to its end: schema-valid, well-formed, exactly one terminal event, the last. */
export async function finishRun(posted: Posted): Promise<WireEvent[]> {
  expect(posted.status).toBe(200);
  const events = await posted.live!.rest();
  expect(streamProblems(events)).toEqual([]);
  expect(events.filter(isTerminal)).toHaveLength(1);
  return events;
}

/** The stateStore part of GET /health. */
export async function storeHealth(url: string): Promise<{ kind: string; status: string }> {
  const response = await fetch(new URL("health", url));
  return ((await response.json()) as { stateStore: { kind: string; status: string } }).stateStore;
}

/** Polls until `check` resolves true, every 50 ms, at most `timeoutMs`; resolves with the last answer. */
export async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check().catch(() => false);
}

/** A replica's id in leases and on the relay, from its start-up log line. */
export function replicaIdOf(gateway: CliGateway): string {
  const id = /"replicaId":"([^"]+)"/.exec(gateway.stderr())?.[1];
  expect(id, "the replica logs its id at start-up").toBeDefined();
  return id!;
}
