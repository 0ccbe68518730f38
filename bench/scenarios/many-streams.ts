// manyStreams: N runs live at once on one gateway, each a realistic turn (thinking, answer text deltas, a tool
// call every ~40 frames, usage) paced by the upstream at a model's speed, a few KB/s per stream; every client
// reads its own stream as it arrives. The same N streams through the floor relay, alternating with the gateway:
// - ratio: aggregate upstream frames delivered per second, gateway ÷ floor relay (the same stream for both; with
//   the streams paced, 1.0 means the gateway kept up at that concurrency);
// - added latency: each answer delta carries its send time; the gateway's p50 / p99 minus the floor relay's;
// - fairness: the slowest stream's delivered rate ÷ the median stream's, on the gateway.
import { Agent } from "undici";
import { readSse } from "../lib/client.js";
import type { BenchContext } from "../lib/context.js";
import { MB, median, quantile, round, sleep } from "../lib/stats.js";
import type { System } from "../lib/systems.js";
import { benchPrompt, latencyReader } from "../lib/upstream.js";
import { hardFdLimit } from "./idle.js";

/** Frames a second per stream: about 3.3 KB/s of kernel SSE (a frame is ~330 bytes). */
export const MANY_FRAMES_PER_SEC = 10;

interface StreamRun {
  frames: number;
  records: number;
  bytes: number;
  /** Headers → end of body. */
  ms: number;
  latencies: number[];
}

interface Pass {
  system: string;
  streams: StreamRun[];
  failures: number;
  firstFailure?: string;
  /** First request → last stream's end. */
  wallMs: number;
  cpuMs?: number;
  peakRssMB?: number;
}

async function readLive(system: System, frames: number, agent: Agent): Promise<StreamRun> {
  const { body } = await system.request(benchPrompt({ mode: "live", frames, perSecond: MANY_FRAMES_PER_SEC }));
  const latencies: number[] = [];
  const result = await readSse(system.url, body, {
    agent,
    onText: latencyReader((ms) => latencies.push(ms)),
  });
  if (result.status !== 200) throw new Error(`${system.name}: HTTP ${result.status}`);
  const isRelay = system.name.endsWith("relay");
  if (isRelay ? result.records < frames : !result.tail.includes('"RUN_FINISHED"')) {
    throw new Error(`${system.name}: stream ended early after ${result.records} records: …${result.tail.slice(-200)}`);
  }
  return { frames, records: result.records, bytes: result.bytes, ms: result.ms - result.headersMs, latencies };
}

async function pass(system: System, count: number, frames: number, rampMs: number): Promise<Pass> {
  // A minute to connect: thousands of connections opening together wait in the listen backlog.
  const agent = new Agent({ connections: null, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: 120_000, bodyTimeout: 0, connect: { timeout: 60_000 } });
  const streams: StreamRun[] = [];
  let failures = 0;
  let firstFailure: string | undefined;
  const cpuBefore = await system.child?.cpuMs();
  let peak = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling && system.child) {
      peak = Math.max(peak, await system.child.rssBytes().catch(() => 0));
      await sleep(1000);
    }
  })();
  const started = performance.now();
  try {
    // The streams start spread over `rampMs`, as users arriving do, not in one instant.
    await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        await sleep((i * rampMs) / count);
        try {
          streams.push(await readLive(system, frames, agent));
        } catch (error) {
          failures++;
          firstFailure ??= String(error instanceof Error ? error.message : error);
        }
      }),
    );
  } finally {
    sampling = false;
    await sampler;
    await agent.destroy().catch(() => undefined);
  }
  const wallMs = performance.now() - started;
  const cpuAfter = await system.child?.cpuMs();
  return {
    system: system.name,
    streams,
    failures,
    ...(firstFailure !== undefined && { firstFailure }),
    wallMs,
    ...(cpuBefore !== undefined && cpuAfter !== undefined && { cpuMs: cpuAfter - cpuBefore }),
    ...(peak > 0 && { peakRssMB: round(peak / MB, 1) }),
  };
}

interface PassSummary {
  streams: number;
  failures: number;
  /** Sum over streams of upstream frames ÷ that stream's seconds. */
  framesPerSec: number;
  eventsPerSec: number;
  /** Frames delivered ÷ (first request → last end), all streams. */
  wallFramesPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Slowest stream's frames/s ÷ the median stream's. */
  fairness: number;
  kbPerSecPerStream: number;
  cpuMs?: number;
  peakRssMB?: number;
}

function summarize(p: Pass): PassSummary {
  const rates = p.streams.map((s) => s.frames / (s.ms / 1000));
  const all = p.streams.flatMap((s) => s.latencies);
  return {
    streams: p.streams.length,
    failures: p.failures,
    framesPerSec: Math.round(rates.reduce((a, b) => a + b, 0)),
    eventsPerSec: Math.round(p.streams.reduce((a, s) => a + s.records / (s.ms / 1000), 0)),
    wallFramesPerSec: Math.round(p.streams.reduce((a, s) => a + s.frames, 0) / (p.wallMs / 1000)),
    p50Ms: round(quantile(all, 0.5), 3),
    p99Ms: round(quantile(all, 0.99), 3),
    maxMs: round(all.reduce((a, b) => Math.max(a, b), 0), 1),
    fairness: round(Math.min(...rates) / median(rates), 3),
    kbPerSecPerStream: round(median(p.streams.map((s) => s.bytes / 1024 / (s.ms / 1000))), 2),
    ...(p.cpuMs !== undefined && { cpuMs: Math.round(p.cpuMs) }),
    ...(p.peakRssMB !== undefined && { peakRssMB: p.peakRssMB }),
  };
}

export interface ManyStreamsFigure {
  count: number;
  /** Aggregate frames/s, gateway ÷ floor relay, median of the per-repetition ratios. */
  ratio: number;
  p50AddedMs: number;
  p99AddedMs: number;
  /** The gateway's slowest stream ÷ its median stream (frames/s), the worst repetition. */
  fairness: number;
}

export interface ManyStreamsResult {
  figure: ManyStreamsFigure;
  detail: Record<string, unknown>;
}

/** The fd headroom a count needs: the floor relay holds two sockets per stream (client and upstream, HTTP/1.1). */
export function manyStreamsFits(count: number): boolean {
  return 2 * count + 128 <= hardFdLimit();
}

export async function manyStreams(ctx: BenchContext, systems: { floor: System; gateway: System }, count: number): Promise<ManyStreamsResult> {
  const seconds = ctx.quick ? 15 : 30;
  const frames = seconds * MANY_FRAMES_PER_SEC;
  const reps = ctx.quick ? 2 : 3;
  const rampMs = Math.max(2_000, 2 * count);
  const passes: Array<{ floor: PassSummary; gateway: PassSummary }> = [];
  // Warm-up: JIT and connection set-up on both, a tenth of the streams.
  for (const system of [systems.floor, systems.gateway]) await pass(system, Math.ceil(count / 10), 3 * MANY_FRAMES_PER_SEC, 500);
  for (let rep = 0; rep < reps; rep++) {
    const order = rep % 2 === 0 ? [systems.floor, systems.gateway] : [systems.gateway, systems.floor];
    const got: Record<string, PassSummary> = {};
    for (const system of order) {
      const p = await pass(system, count, frames, rampMs);
      const s = summarize(p);
      const failure = p.firstFailure;
      got[system.name] = s;
      ctx.log(
        `  ${String(count).padStart(5)} × ${system.name.padEnd(8)} ${s.streams} streams (${s.failures} failed${failure ? `: ${failure}` : ""}), ` +
          `${s.framesPerSec.toLocaleString("en")} frames/s, ${s.eventsPerSec.toLocaleString("en")} events/s, latency p50 ${s.p50Ms} p99 ${s.p99Ms} max ${s.maxMs} ms, ` +
          `fairness ${s.fairness}, cpu ${s.cpuMs ?? "?"} ms, peak rss ${s.peakRssMB ?? "?"} MB`,
      );
      // The sockets of the pass close in the background; let them go before the next one opens as many.
      await sleep(1000);
    }
    passes.push({ floor: got[systems.floor.name]!, gateway: got[systems.gateway.name]! });
  }
  const ok = passes.every((p) => p.gateway.failures === 0 && p.gateway.streams === count);
  const figure: ManyStreamsFigure = {
    count: ok ? count : Math.min(...passes.map((p) => p.gateway.streams)),
    ratio: round(median(passes.map((p) => p.gateway.framesPerSec / p.floor.framesPerSec)), 3),
    p50AddedMs: round(median(passes.map((p) => p.gateway.p50Ms - p.floor.p50Ms)), 3),
    p99AddedMs: round(median(passes.map((p) => p.gateway.p99Ms - p.floor.p99Ms)), 3),
    fairness: Math.min(...passes.map((p) => p.gateway.fairness)),
  };
  return {
    figure,
    detail: {
      count,
      framesPerStream: frames,
      framesPerSecPerStream: MANY_FRAMES_PER_SEC,
      rampMs,
      reps,
      upstreamProtocol: "HTTP/1.1 (gateway and floor relay alike)",
      passes,
    },
  };
}
