// floorRatio / relayRatio: the same pre-rendered upstream turn (≥ 100k frames, served as fast as the
// socket takes it) through the floor relay, the raw relay and the gateway, alternating, median of each.
import { Agent } from "undici";
import { readSse } from "../lib/client.js";
import type { BenchContext } from "../lib/context.js";
import { median, round } from "../lib/stats.js";
import type { System } from "../lib/systems.js";
import { benchPrompt } from "../lib/upstream.js";

export interface BurstRun {
  eventsPerSec: number;
  /** Upstream frames per second: the same stream for every system, so also comparable. */
  framesPerSec: number;
  records: number;
  ms: number;
  /** CPU the system's process spent on the run (absent for processes we cannot ask). */
  cpuMs?: number;
}

/** One stream through `system`; throws unless it came back 200 and (for a gateway) ended with RUN_FINISHED. */
export async function burst(ctx: BenchContext, system: System, frames: number, agent: Agent): Promise<BurstRun> {
  const prompt = benchPrompt({ mode: "burst", frames });
  const { body, contextId } = await system.request(prompt);
  const prepared = await ctx.upstream.call<{ frames: number; bytes: number }>("prepare", { contextId, frames }, 120_000);
  const cpuBefore = await system.child?.cpuMs();
  const result = await readSse(system.url, body, { agent });
  const cpuAfter = await system.child?.cpuMs();
  if (result.status !== 200) throw new Error(`${system.name}: HTTP ${result.status}`);
  const isRelay = system.name.endsWith("relay");
  if (isRelay ? result.records < frames : !result.tail.includes('"RUN_FINISHED"')) {
    throw new Error(`${system.name}: stream ended early after ${result.records} records: …${result.tail.slice(-300)}`);
  }
  void prepared;
  return {
    eventsPerSec: result.records / (result.ms / 1000),
    framesPerSec: frames / (result.ms / 1000),
    records: result.records,
    ms: result.ms,
    ...(cpuBefore !== undefined && cpuAfter !== undefined && { cpuMs: cpuAfter - cpuBefore }),
  };
}

/** The stream every throughput comparison times (floor, raw relay, gateway, Python reference) in a quick run. */
export const THROUGHPUT_FRAMES = 100_000;

export interface ThroughputResult {
  floorRatio: number;
  relayRatio: number;
  /** With a compare build: the median over repetitions of (this gateway's events/s ÷ the compare build's, same repetition). */
  compareRatio?: number;
  detail: Record<string, unknown>;
  gatewayEventsPerSec: number;
}

export async function throughput(ctx: BenchContext, systems: { floor: System; raw: System; gateway: System; compare?: System }): Promise<ThroughputResult> {
  const frames = ctx.quick ? THROUGHPUT_FRAMES : 2 * THROUGHPUT_FRAMES;
  // A comparison of two builds wants more pairs than a figure against the floor.
  const reps = systems.compare ? (ctx.quick ? 9 : 15) : ctx.quick ? 3 : 5;
  const agent = new Agent({ keepAliveTimeout: 10_000 });
  const order = [systems.floor, systems.raw, systems.gateway, ...(systems.compare ? [systems.compare] : [])];
  const runs = new Map<string, BurstRun[]>(order.map((s) => [s.name, []]));
  try {
    // Warm-up: JIT, connection pools, first-render caches.
    for (const system of order) await burst(ctx, system, 20_000, agent);
    for (let rep = 0; rep < reps; rep++) {
      // Rotate who goes first so drift on a shared machine does not favour one system.
      for (let i = 0; i < order.length; i++) {
        const system = order[(i + rep) % order.length]!;
        const run = await burst(ctx, system, frames, agent);
        runs.get(system.name)!.push(run);
        ctx.log(`  ${system.name.padEnd(14)} ${run.records} records in ${run.ms.toFixed(0)} ms = ${Math.round(run.eventsPerSec).toLocaleString("en")} events/s (cpu ${run.cpuMs?.toFixed(0)} ms)`);
      }
    }
  } finally {
    await agent.close();
  }
  const eps = (name: string) => median(runs.get(name)!.map((r) => r.eventsPerSec));
  const fps = (name: string) => median(runs.get(name)!.map((r) => r.framesPerSec));
  // Events per CPU-second of the relaying process: far less sensitive to a busy shared machine than wall time.
  const epcs = (name: string) => median(runs.get(name)!.map((r) => r.records / ((r.cpuMs ?? Number.NaN) / 1000)));
  const gateway = eps(systems.gateway.name);
  // Within one repetition both builds ran back to back, so the machine's drift cancels in their ratio.
  const compareRuns = systems.compare ? runs.get(systems.compare.name)! : undefined;
  const compareRatio = compareRuns
    ? round(median(runs.get(systems.gateway.name)!.map((r, i) => r.eventsPerSec / compareRuns[i]!.eventsPerSec)), 3)
    : undefined;
  const stats = await ctx.upstream.call<{ renderMisses: number }>("stats");
  return {
    floorRatio: round(gateway / eps(systems.floor.name), 3),
    relayRatio: round(gateway / eps(systems.raw.name), 3),
    ...(compareRatio !== undefined && { compareRatio }),
    gatewayEventsPerSec: gateway,
    detail: {
      ...(systems.compare && {
        compareFloorRatio: round(eps(systems.compare.name) / eps(systems.floor.name), 3),
        compareFloorRatioByCpu: round(epcs(systems.compare.name) / epcs(systems.floor.name), 3),
      }),
      frames,
      reps,
      eventsPerSec: Object.fromEntries(order.map((s) => [s.name, Math.round(eps(s.name))])),
      upstreamFramesPerSec: Object.fromEntries(order.map((s) => [s.name, Math.round(fps(s.name))])),
      recordsPerRun: Object.fromEntries(order.map((s) => [s.name, runs.get(s.name)![0]!.records])),
      eventsPerCpuSecond: Object.fromEntries(order.map((s) => [s.name, Math.round(epcs(s.name))])),
      floorRatioByCpu: round(epcs(systems.gateway.name) / epcs(systems.floor.name), 3),
      relayRatioByCpu: round(epcs(systems.gateway.name) / epcs(systems.raw.name), 3),
      upstreamRenderMisses: stats.renderMisses,
    },
  };
}
