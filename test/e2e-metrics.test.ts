// Every metric the operations doc lists is one a user sees move: after real traffic (a run, an interrupt, a cancel, a
// failed turn, a client that leaves, a refused upload, a Redis outage) GET /metrics has samples for each of them. The
// list is read from the doc itself, so the doc and the gateway cannot drift apart unnoticed.
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postCancel } from "./helpers/durable.js";
import { expectValidRun, frame, openSse, postRaw, readSse, runWithHttpAgent, scriptByPrompt, slowTurn, startStack, type Stack } from "./helpers/e2e.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { bigJson, upload } from "./helpers/flood.js";
import type { Reply } from "./helpers/http.js";
import { startRedis, type RedisServer } from "./helpers/redis.js";

/** Where the metrics are documented for users (one place to change if the operations section moves). */
const METRICS_DOC = "docs/protocol.md";
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/**
 * The agui_gateway_ metric names the doc lists: names written in full, and the `_suffix` shorthand a line uses
 * after naming one in full (`agui_gateway_active_streams`, `_runs_total{outcome,code}`, …).
 */
function documentedMetrics(doc: string): string[] {
  const names = new Set<string>();
  for (const line of doc.split("\n")) {
    if (!line.includes("agui_gateway_")) continue;
    for (const [name] of line.matchAll(/agui_gateway_[a-z0-9_]*[a-z0-9]/g)) names.add(name);
    for (const [, suffix] of line.matchAll(/`(_[a-z0-9_]*[a-z0-9])/g)) names.add(`agui_gateway${suffix!}`);
  }
  return [...names].sort();
}

interface Sample {
  name: string;
  labels: string;
  value: number;
}

function samplesIn(text: string): Sample[] {
  return text
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
      expect(match, line).not.toBeNull();
      return { name: match![1]!, labels: match![2] ?? "", value: Number(match![3]) };
    });
}

/** A metric's own samples: a histogram's are its _bucket, _sum and _count lines. */
function samplesOf(samples: readonly Sample[], metric: string): Sample[] {
  return samples.filter((s) => s.name === metric || [`${metric}_bucket`, `${metric}_sum`, `${metric}_count`].includes(s.name));
}

/** The value of one series (`name{labels}` exactly as exported), or undefined when it has no sample. */
function valueOf(samples: readonly Sample[], name: string, labels = ""): number | undefined {
  return samples.find((s) => s.name === name && s.labels === labels)?.value;
}

const SESSION = "session-metrics";

describe(`GET /metrics after real traffic: every metric ${METRICS_DOC} lists has samples`, () => {
  let redis: RedisServer;
  /** One replica on its state dir (the default deployment). */
  let stack: Stack<ScriptedA2AServer>;
  /** A replica on a shared Redis store: the store's own metrics. */
  let shared: Stack<ScriptedA2AServer>;
  let stateDir: string | undefined;
  const read = async (on: Stack<ScriptedA2AServer>): Promise<Sample[]> => samplesIn(await (await fetch(`${on.gateway.url}metrics`)).text());

  beforeAll(async () => {
    redis = await startRedis();
    stateDir = await mkdtemp(path.join(tmpdir(), "agui-metrics-state-"));
    stack = await startStack({
      script: scriptByPrompt({
        "stream slowly": () => slowTurn(SESSION, 200, 50),
        "fail the turn": () => [frame.working({ sessionId: SESSION }), frame.status("TASK_STATE_FAILED", { sessionId: SESSION, text: "The kernel gave up." })],
      }),
      // A 1 s body deadline, so a trickled upload is refused soon.
      gateway: { stateDir, bodyTimeoutSeconds: 1 },
    });
    shared = await startStack({ gateway: { stateStore: redis.url } });
  }, 30_000);

  afterAll(async () => {
    await stack?.close();
    await shared?.close();
    await redis?.stop();
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
  });

  it("the doc lists every metric the gateway registers, and nothing it does not", async () => {
    const listed = documentedMetrics(readFileSync(path.join(REPO, METRICS_DOC), "utf8"));
    const registered = (await stack.gateway.metrics.registry.getMetricsAsJSON()).map((m) => m.name).filter((n) => n.startsWith("agui_gateway_"));
    expect(listed.length).toBeGreaterThan(0);
    expect(listed).toEqual([...registered].sort());
  });

  it("each series moves with what moves it; afterwards no listed metric is without a sample", async () => {
    const url = stack.gateway.url;

    // A plain run, with a forwardedProps key of another agent's: success, events out, the kernel's latency, writes.
    const plain = stack.input();
    const withProps = { ...plain, forwardedProps: { ...(plain.forwardedProps as object), properties: { theme: "dark" } } };
    expect((await runWithHttpAgent(url, withProps)).events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    let samples = await read(stack);
    expect(valueOf(samples, "agui_gateway_runs_total", '{outcome="success",code=""}')).toBe(1);
    expect(valueOf(samples, "agui_gateway_events_out_total", '{type="RUN_STARTED"}')).toBe(1);
    expect(valueOf(samples, "agui_gateway_forwarded_props_ignored_total")).toBe(1);
    expect(valueOf(samples, "agui_gateway_upstream_latency_seconds_count", '{method="SendStreamingMessage"}')).toBe(1);
    expect(valueOf(samples, "agui_gateway_state_write_latency_seconds_count", '{result="ok"}')).toBeGreaterThan(0);

    // An interrupt: parked on the thread, counted as pending.
    const parked = await runWithHttpAgent(url, stack.input({ prompt: "deploy the stack" }));
    expect(parked.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt" } });
    samples = await read(stack);
    expect(valueOf(samples, "agui_gateway_runs_total", '{outcome="interrupt",code=""}')).toBe(1);
    expect(valueOf(samples, "agui_gateway_interrupts_pending")).toBe(1);

    // A cancel through the extension route, by an AG-UI 1.0 client: the run ends cancelled, and the kernel was told.
    const live = await openSse(url, { ...stack.input({ prompt: "stream slowly" }), protocolVersion: "1.0" });
    const session = await live.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
    await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    expect(valueOf(await read(stack), "agui_gateway_active_streams")).toBe(1);
    const { executionId, rosInvocationId, threadId } = session!["value"] as { executionId: string; rosInvocationId: string; threadId: string };
    expect((await postCancel(url, executionId, { threadId, rosInvocationId })).json).toMatchObject({ status: "cancelled" });
    const cancelled = await live.rest();
    expectValidRun(cancelled);
    expect(cancelled.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
    samples = await read(stack);
    expect(valueOf(samples, "agui_gateway_runs_total", '{outcome="cancelled",code=""}')).toBe(1);
    expect(valueOf(samples, "agui_gateway_upstream_latency_seconds_count", '{method="CancelTask"}')).toBe(1);

    // A turn the kernel fails: RUN_ERROR, counted with its code.
    const failed = readSse((await postRaw(url, stack.input({ prompt: "fail the turn" }))).text).events;
    expectValidRun(failed);
    expect(failed.at(-1)).toMatchObject({ type: "RUN_ERROR" });
    const code = String(failed.at(-1)!["code"]);
    expect(valueOf(await read(stack), "agui_gateway_runs_total", `{outcome="error",code="${code}"}`)).toBe(1);

    // A client that leaves mid-run.
    const leaving = await openSse(url, stack.input({ prompt: "stream slowly" }));
    await leaving.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    leaving.abort();
    await expect.poll(async () => valueOf(await read(stack), "agui_gateway_runs_total", '{outcome="disconnected",code=""}')).toBe(1);
    await expect.poll(async () => valueOf(await read(stack), "agui_gateway_active_streams")).toBe(0);

    // An upload trickled past the body deadline.
    const refused = (await upload(url, bigJson(64 * 1024), { chunk: 10, everyMs: 200 })) as Reply;
    expect([refused.status, refused.json?.error?.code]).toEqual([408, "REQUEST_TIMEOUT"]);
    samples = await read(stack);
    expect(valueOf(samples, "agui_gateway_refused_requests_total", '{reason="deadline"}')).toBe(1);

    // What should never happen is exported as 0, not left out.
    expect(valueOf(samples, "agui_gateway_validation_violations_total", '{kind="schema"}')).toBe(0);
    expect(valueOf(samples, "agui_gateway_validation_violations_total", '{kind="order"}')).toBe(0);
    expect(valueOf(samples, "agui_gateway_unhandled_errors_total")).toBe(0);
    expect(valueOf(samples, "agui_gateway_stream_write_failures_total")).toBe(0);

    // The shared store: a run times its operations; with Redis gone the admission is refused and the failure counted.
    expect((await runWithHttpAgent(shared.gateway.url, shared.input())).events.at(-1)).toMatchObject({ type: "RUN_FINISHED" });
    await redis.kill();
    const unavailable = await postRaw(shared.gateway.url, shared.input());
    expect([unavailable.status, unavailable.json?.error?.code]).toEqual([503, "STATE_UNAVAILABLE"]);
    const sharedSamples = await read(shared);
    await redis.restart();
    const moved = (metric: string) => samplesOf(sharedSamples, metric).filter((s) => !s.name.endsWith("_bucket") && s.value > 0);
    expect(moved("agui_gateway_state_store_latency_seconds")).not.toEqual([]);
    expect(moved("agui_gateway_state_store_errors_total")).not.toEqual([]);

    // Every listed metric has samples on the replica that uses what it measures (the store metrics: the shared one).
    const all = [...samples, ...sharedSamples];
    const silent = documentedMetrics(readFileSync(path.join(REPO, METRICS_DOC), "utf8")).filter((name) => samplesOf(all, name).length === 0);
    expect(silent, "documented metrics with no sample after the traffic").toEqual([]);
  }, 60_000);
});
