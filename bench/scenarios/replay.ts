// What event ids and the per-run replay log cost, and what a reconnect gets from them:
// - replayCostRatio: events/s of the gateway keeping the default replay (10,000 events / 4 MiB per run) ÷ the same
//   gateway keeping one event per run (`--replay-events 1`, nothing a reconnect could use), on the 100k-frame turn,
//   in one rotation with the floor relay; the median of the per-repetition ratios.
// - replayMemoryPerRunKB: the live heap plus external memory (where the log keeps its records) of N runs held
//   mid-stream (each past the 10,000-event bound, its client caught up and connected), with the default replay ÷ N,
//   minus the same with `--replay-events 1`.
// - reconnectFirstEventMs: the 100k-frame turn read by a client that cuts its connection after a random number of
//   records and reconnects with Last-Event-ID; request sent → first record of the answer, p50/p99 over all cuts.
// - redisRunRatio / redisReconnectMs (with a redis-server): events/s with `--state-store redis://…` (every record
//   also XADDed) ÷ the file store; and the reconnect time when every reconnect lands on a second gateway sharing
//   the Redis (the rest of the run read from the Redis copy, then tailed).
import { randomInt } from "node:crypto";
import { Agent, request } from "undici";
import type { BenchContext } from "../lib/context.js";
import { followWithCuts, type FollowResult } from "../lib/reconnect.js";
import { median, quantile, round } from "../lib/stats.js";
import type { System } from "../lib/systems.js";
import { benchPrompt } from "../lib/upstream.js";
import { burst, THROUGHPUT_FRAMES, type BurstRun } from "./throughput.js";

/** The default per-run bound on events: a run held past it has a full log. */
const REPLAY_EVENTS = 10_000;

/** Same-rotation events/s of several systems on the 100k-frame turn; per system the runs in rotation order. */
async function rotation(ctx: BenchContext, systems: System[], reps: number): Promise<Map<string, BurstRun[]>> {
  const agent = new Agent({ keepAliveTimeout: 10_000 });
  const runs = new Map<string, BurstRun[]>(systems.map((s) => [s.name, []]));
  try {
    for (const system of systems) await burst(ctx, system, 20_000, agent);
    for (let rep = 0; rep < reps; rep++) {
      for (let i = 0; i < systems.length; i++) {
        const system = systems[(i + rep) % systems.length]!;
        const run = await burst(ctx, system, THROUGHPUT_FRAMES, agent);
        runs.get(system.name)!.push(run);
        ctx.log(`  ${system.name.padEnd(24)} ${run.records} records in ${run.ms.toFixed(0)} ms = ${Math.round(run.eventsPerSec).toLocaleString("en")} events/s (cpu ${run.cpuMs?.toFixed(0)} ms)`);
      }
    }
  } finally {
    await agent.close();
  }
  return runs;
}

const eps = (runs: BurstRun[]) => median(runs.map((r) => r.eventsPerSec));
const epcs = (runs: BurstRun[]) => median(runs.map((r) => r.records / ((r.cpuMs ?? Number.NaN) / 1000)));
/** Median over repetitions of a ÷ b in the same repetition (the machine's drift cancels within one). */
const pairedRatio = (a: BurstRun[], b: BurstRun[], of: (r: BurstRun) => number) => median(a.map((r, i) => of(r) / of(b[i]!)));

export async function replayCost(ctx: BenchContext, systems: { floor: System; replay: System; tiny: System }): Promise<{ replayCostRatio: number; detail: Record<string, unknown> }> {
  const reps = ctx.quick ? 7 : 11;
  const runs = await rotation(ctx, [systems.floor, systems.replay, systems.tiny], reps);
  const floor = runs.get(systems.floor.name)!;
  const replay = runs.get(systems.replay.name)!;
  const tiny = runs.get(systems.tiny.name)!;
  return {
    replayCostRatio: round(pairedRatio(replay, tiny, (r) => r.eventsPerSec), 3),
    detail: {
      frames: THROUGHPUT_FRAMES,
      reps,
      eventsPerSec: { floor: Math.round(eps(floor)), replay: Math.round(eps(replay)), replayEvents1: Math.round(eps(tiny)) },
      floorRatio: { replay: round(eps(replay) / eps(floor), 3), replayEvents1: round(eps(tiny) / eps(floor), 3) },
      /** The same ratio in events per CPU-second of the gateway process. */
      replayCostRatioByCpu: round(pairedRatio(replay, tiny, (r) => r.records / (r.cpuMs ?? Number.NaN)), 3),
      eventsPerCpuSecond: { floor: Math.round(epcs(floor)), replay: Math.round(epcs(replay)), replayEvents1: Math.round(epcs(tiny)) },
    },
  };
}

interface HeldRun {
  records: number;
  /** Bytes of the records as sent, cumulated per record (what the log counts). */
  ends: number[];
  abort: AbortController;
}

/** Opens `count` runs that each stream `frames` frames and then stay open; resolves once every client has caught up. */
async function holdRuns(gateway: System, frames: number, count: number, agent: Agent): Promise<{ held: HeldRun[]; settleMs: number }> {
  const held: HeldRun[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: count }, async () => {
      const { body } = await gateway.request(benchPrompt({ mode: "hold", frames }));
      const run: HeldRun = { records: 0, ends: [], abort: new AbortController() };
      held.push(run);
      const res = await request(gateway.url, {
        dispatcher: agent,
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body,
        signal: run.abort.signal,
        bodyTimeout: 0,
        headersTimeout: 60_000,
      });
      if (res.statusCode !== 200) throw new Error(`${gateway.name}: HTTP ${res.statusCode} ${await res.body.text()}`);
      let bytes = 0;
      // Read to the end of what comes (a record never has a blank line inside; a chunk may split "\n\n").
      let lastWasLf = false;
      void (async () => {
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          if (lastWasLf && chunk[0] === 0x0a) {
            run.records++;
            run.ends.push(bytes + 1);
          }
          for (let i = chunk.indexOf("\n\n"); i >= 0; i = chunk.indexOf("\n\n", i + 2)) {
            run.records++;
            run.ends.push(bytes + i + 2);
          }
          lastWasLf = chunk[chunk.length - 1] === 0x0a;
          bytes += chunk.length;
        }
      })().catch(() => undefined);
    }),
  );
  // Caught up: nothing new for a second (the upstream wrote everything it holds; the gateway has sent it on).
  let last = -1;
  for (let i = 0; i < 120; i++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = held.reduce((n, r) => n + r.records, 0);
    if (now === last) break;
    last = now;
  }
  return { held, settleMs: performance.now() - started };
}

export async function replayMemory(ctx: BenchContext, systems: { replay: System; tiny: System }): Promise<{ replayMemoryPerRunKB: number; detail: Record<string, unknown> }> {
  const count = ctx.quick ? 50 : 100;
  const frames = 12_000;
  const measure = async (gateway: System) => {
    const child = gateway.child!;
    const agent = new Agent({ keepAliveTimeout: 10_000, connections: count + 10 });
    try {
      // Warm-up: one run held and released, so the code paths are loaded before the baseline heap is taken.
      const warm = await holdRuns(gateway, 2_000, 2, agent);
      for (const r of warm.held) r.abort.abort();
      await new Promise((resolve) => setTimeout(resolve, 500));
      const before = await child.call<NodeJS.MemoryUsage>("gcMemory", undefined, 120_000);
      const { held, settleMs } = await holdRuns(gateway, frames, count, agent);
      const after = await child.call<NodeJS.MemoryUsage>("gcMemory", undefined, 120_000);
      const records = held.map((r) => r.records);
      // What a full log holds by its own count: the last 10,000 records' bytes (or all of them).
      const logBytes = held.map((r) => r.ends.at(-1)! - (r.ends.length > REPLAY_EVENTS ? r.ends[r.ends.length - REPLAY_EVENTS - 1]! : 0));
      for (const r of held) r.abort.abort();
      ctx.log(`  ${gateway.name}: ${count} runs held at ${median(records)} records each (settled in ${(settleMs / 1000).toFixed(1)} s), heap ${(before.heapUsed / 2 ** 20).toFixed(1)} → ${(after.heapUsed / 2 ** 20).toFixed(1)} MiB after GC`);
      return {
        heapPerRunKB: (after.heapUsed - before.heapUsed) / count / 1024,
        externalPerRunKB: (after.external - before.external) / count / 1024,
        rssPerRunKB: (after.rss - before.rss) / count / 1024,
        recordsPerRun: median(records),
        logKBPerRun: median(logBytes) / 1024,
      };
    } finally {
      await agent.destroy().catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  };
  const replay = await measure(systems.replay);
  const tiny = await measure(systems.tiny);
  const perRun = replay.heapPerRunKB + replay.externalPerRunKB - (tiny.heapPerRunKB + tiny.externalPerRunKB);
  return {
    replayMemoryPerRunKB: round(perRun, 1),
    detail: {
      runs: count,
      framesPerRun: frames,
      recordsPerRun: replay.recordsPerRun,
      /** What the log itself counts against its 4 MiB bound: bytes of the records it keeps. */
      logKBPerRun: round(replay.logKBPerRun, 1),
      memoryPerLogByte: round((perRun * 1024) / replay.logKBPerRun / 1024, 2),
      heapPerRunKB: { replay: round(replay.heapPerRunKB, 1), replayEvents1: round(tiny.heapPerRunKB, 1) },
      externalPerRunKB: { replay: round(replay.externalPerRunKB, 1), replayEvents1: round(tiny.externalPerRunKB, 1) },
      rssPerRunKB: { replay: round(replay.rssPerRunKB, 1), replayEvents1: round(tiny.rssPerRunKB, 1) },
    },
  };
}

export interface ReconnectFigures {
  p50: number;
  p99: number;
  samples: number;
}

/**
 * Reads 100k-frame turns through `start`, cutting and reconnecting to `reconnect` at random points, until `wanted`
 * reconnects were timed (at most `maxRuns` turns). A run whose reconnect is refused (its cursor no longer kept) ends
 * there and the next one starts.
 */
export async function reconnects(
  ctx: BenchContext,
  start: System,
  reconnect: System,
  wanted: number,
  maxRuns: number,
  meanCut: number,
): Promise<{ figures: ReconnectFigures; detail: Record<string, unknown> }> {
  const agent = new Agent({ keepAliveTimeout: 10_000 });
  const results: FollowResult[] = [];
  let timed = 0;
  try {
    for (let i = 0; i < maxRuns && timed < wanted; i++) {
      const { body, contextId } = await start.request(benchPrompt({ mode: "burst", frames: THROUGHPUT_FRAMES }));
      await ctx.upstream.call("prepare", { contextId, frames: THROUGHPUT_FRAMES }, 120_000);
      const result = await followWithCuts({
        url: start.url,
        reconnectUrl: reconnect.url,
        body,
        agent,
        cutAfter: () => randomInt(1, 2 * meanCut),
        maxConnections: 200,
      });
      results.push(result);
      timed += result.samples.length;
      const ms = result.samples.map((s) => s.firstRecordMs);
      ctx.log(
        `  run ${i + 1}: ${result.connections} connections, ${result.samples.length} reconnects (p50 ${median(ms).toFixed(2)} ms, max ${Math.max(...ms).toFixed(2)} ms), ` +
          `last seq ${result.lastSeq}${result.finished ? ", finished" : ""}${result.refused.length ? `, refused ${result.refused.map((r) => `${r.status} ${r.code} after ${r.afterSeq}`).join(" ")}` : ""}${result.violations.length ? `, ${result.violations.length} violations` : ""}`,
      );
    }
  } finally {
    await agent.close();
  }
  const samples = results.flatMap((r) => r.samples);
  const ms = samples.map((s) => s.firstRecordMs);
  const headers = samples.map((s) => s.headersMs);
  const refused = results.flatMap((r) => r.refused);
  const violations = results.flatMap((r) => r.violations);
  if (violations.length > 0) throw new Error(`reconnect answers broke the ids' promise: ${violations.slice(0, 3).join("; ")}`);
  const reconnectsSent = samples.length + refused.length;
  return {
    figures: { p50: round(quantile(ms, 0.5), 2), p99: round(quantile(ms, 0.99), 2), samples: ms.length },
    detail: {
      runs: results.length,
      framesPerRun: THROUGHPUT_FRAMES,
      meanRecordsBetweenCuts: meanCut,
      samples: ms.length,
      firstRecordMs: { p50: round(quantile(ms, 0.5), 2), p90: round(quantile(ms, 0.9), 2), p99: round(quantile(ms, 0.99), 2), max: round(Math.max(...ms), 2) },
      headersMs: { p50: round(quantile(headers, 0.5), 2), p99: round(quantile(headers, 0.99), 2) },
      finishedRuns: results.filter((r) => r.finished).length,
      refused: refused.length,
      refusedShare: round(refused.length / Math.max(1, reconnectsSent), 3),
      /** How far a refused cursor was into its run. */
      ...(refused.length > 0 && { refusedAfterSeq: refused.map((r) => r.afterSeq) }),
      ...(refused.length > 0 && { refusedCodes: [...new Set(refused.map((r) => `${r.status} ${r.code}`))] }),
    },
  };
}

export async function reconnectLocal(ctx: BenchContext, gateway: System): Promise<{ reconnectFirstEventMs: ReconnectFigures; detail: Record<string, unknown> }> {
  const { figures, detail } = await reconnects(ctx, gateway, gateway, ctx.quick ? 100 : 300, ctx.quick ? 40 : 100, 5_000);
  return { reconnectFirstEventMs: figures, detail };
}

export async function redisRun(ctx: BenchContext, systems: { file: System; redis: System }): Promise<{ redisRunRatio: number; detail: Record<string, unknown> }> {
  const reps = ctx.quick ? 5 : 9;
  const runs = await rotation(ctx, [systems.file, systems.redis], reps);
  const file = runs.get(systems.file.name)!;
  const redis = runs.get(systems.redis.name)!;
  return {
    redisRunRatio: round(pairedRatio(redis, file, (r) => r.eventsPerSec), 3),
    detail: {
      frames: THROUGHPUT_FRAMES,
      reps,
      eventsPerSec: { fileStore: Math.round(eps(file)), redis: Math.round(eps(redis)) },
      redisRunRatioByCpu: round(pairedRatio(redis, file, (r) => r.records / (r.cpuMs ?? Number.NaN)), 3),
    },
  };
}

export async function redisReconnect(ctx: BenchContext, systems: { a: System; b: System }): Promise<{ redisReconnectMs: ReconnectFigures; detail: Record<string, unknown> }> {
  const { figures, detail } = await reconnects(ctx, systems.a, systems.b, ctx.quick ? 100 : 300, ctx.quick ? 40 : 100, 5_000);
  return { redisReconnectMs: figures, detail };
}
