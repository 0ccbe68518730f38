// idleStreams: N concurrent runs whose upstream sends a few frames and then stays open and silent, the
// gateway heartbeating every second; hold them, sample the gateway's RSS, check heartbeats kept flowing.
// The gateway speaks HTTP/2 to the upstream, so each stream costs it one socket (the client's) and N is
// capped by its fd limit only past ~20,000 here.
import { readFileSync } from "node:fs";
import { Agent, request } from "undici";
import type { ChildHandle } from "../lib/children.js";
import type { BenchContext } from "../lib/context.js";
import { MB, round, sleep } from "../lib/stats.js";
import type { System } from "../lib/systems.js";
import { benchPrompt } from "../lib/upstream.js";

export const IDLE_TARGET = 10_000;

/** The hard RLIMIT_NOFILE children inherit (they cannot raise it past this). */
export function hardFdLimit(): number {
  const line = readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith("Max open files"));
  const hard = line?.trim().split(/\s+/)[4];
  return hard === undefined || hard === "unlimited" ? Number.POSITIVE_INFINITY : Number(hard);
}

interface Stream {
  heartbeats: number;
  open: boolean;
}

export interface IdleResult {
  /** liveKBPerStream: JS heap plus ArrayBuffer memory after a full GC (the replay log keeps its records in the latter), ÷ streams. */
  idleStreams: { count: number; rssMB: number; liveKBPerStream: number | null };
  detail: Record<string, unknown>;
}

export async function idleStreams(ctx: BenchContext, gateway: System, upstream: ChildHandle, count = IDLE_TARGET): Promise<IdleResult> {
  const fdLimit = hardFdLimit();
  // One client socket per stream plus the process's own descriptors (stdio, IPC, epoll, listener, the
  // few HTTP/2 upstream connections).
  const wanted = Math.min(count, fdLimit - 64);
  if (wanted < count) ctx.log(`  fd hard limit ${fdLimit} (not raisable here) caps the gateway at ${wanted} streams`);
  const holdSeconds = ctx.quick ? 10 : 30;
  const child = gateway.child!;
  const baseline = await child.rssBytes();
  const agent = new Agent({ connections: null, pipelining: 1, keepAliveTimeout: 120_000, headersTimeout: 120_000, bodyTimeout: 0 });
  const prompt = benchPrompt({ mode: "park" });
  const streams: Stream[] = [];
  let failures = 0;
  let firstFailure = "";
  const openOne = async (): Promise<void> => {
    const { body } = await gateway.request(prompt);
    const res = await request(gateway.url, { dispatcher: agent, method: "POST", headers: { "Content-Type": "application/json" }, body });
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${await res.body.text()}`);
    const stream: Stream = { heartbeats: 0, open: true };
    await new Promise<void>((resolve, reject) => {
      let first = true;
      res.body.on("data", (chunk: Buffer) => {
        if (first) {
          first = false;
          streams.push(stream);
          resolve();
        }
        for (let i = chunk.indexOf(": heartbeat"); i >= 0; i = chunk.indexOf(": heartbeat", i + 1)) stream.heartbeats++;
      });
      res.body.on("error", (error) => {
        stream.open = false;
        reject(error);
      });
      res.body.on("end", () => {
        stream.open = false;
        reject(new Error("stream ended"));
      });
    });
  };
  const openStarted = performance.now();
  let next = 0;
  const deadline = Date.now() + 180_000;
  const worker = async () => {
    while (next < wanted && Date.now() < deadline) {
      next++;
      await openOne().catch((error: unknown) => {
        failures++;
        firstFailure ||= String(error);
      });
    }
  };
  try {
    await Promise.all(Array.from({ length: 200 }, worker));
    const openMs = performance.now() - openStarted;
    ctx.log(`  opened ${streams.length} streams in ${(openMs / 1000).toFixed(1)} s (${failures} failed${firstFailure ? `: ${firstFailure}` : ""})`);
    const beatsBefore = streams.map((s) => s.heartbeats);
    let peak = 0;
    const samples: number[] = [];
    for (let s = 0; s < holdSeconds; s++) {
      await sleep(1000);
      const rss = await child.rssBytes();
      peak = Math.max(peak, rss);
      samples.push(round(rss / MB, 1));
    }
    const memory = await child.call<NodeJS.MemoryUsage>("memory");
    const snapshot = process.env.BENCH_IDLE_HEAP_SNAPSHOT ? await child.call<string>("heapSnapshot", process.env.BENCH_IDLE_HEAP_SNAPSHOT, 300_000) : undefined;
    if (snapshot) ctx.log(`  heap snapshot: ${snapshot}`);
    const afterGc = await child.call<NodeJS.MemoryUsage>("gcMemory", undefined, 120_000);
    const alive = streams.filter((s, i) => s.open && s.heartbeats - beatsBefore[i]! >= Math.floor(holdSeconds / 2));
    const upstreamStats = await upstream.call<{ parked: number; connections: number }>("stats");
    return {
      idleStreams: {
        count: alive.length,
        rssMB: round(peak / MB, 1),
        liveKBPerStream: alive.length > 0 ? round((afterGc.heapUsed + afterGc.arrayBuffers) / alive.length / 1024, 1) : null,
      },
      detail: {
        requested: wanted,
        fdHardLimit: Number.isFinite(fdLimit) ? fdLimit : "unlimited",
        opened: streams.length,
        failures,
        ...(firstFailure && { firstFailure }),
        openSeconds: round(openMs / 1000, 1),
        holdSeconds,
        heartbeatSeconds: 1,
        upstreamParked: upstreamStats.parked,
        upstreamProtocol: "HTTP/2 (h2c)",
        upstreamConnections: upstreamStats.connections,
        baselineRssMB: round(baseline / MB, 1),
        rssPerStreamKB: alive.length > 0 ? round((peak - baseline) / alive.length / 1024, 1) : null,
        rssSamplesMB: samples,
        // Where the RSS is: JS heap vs Buffers/ArrayBuffers (socket buffers, wasm parsers) at the end of the hold.
        endMemoryMB: Object.fromEntries(Object.entries(memory).map(([k, v]) => [k, round(v / MB, 1)])),
        // The same after a forced full GC (taken once the figures above are in): what is live per stream.
        afterGcMemoryMB: Object.fromEntries(Object.entries(afterGc).map(([k, v]) => [k, round(v / MB, 1)])),
        liveHeapPerStreamKB: alive.length > 0 ? round(afterGc.heapUsed / alive.length / 1024, 1) : null,
      },
    };
  } finally {
    await agent.destroy().catch(() => undefined);
  }
}
