// tracingRatio: what OpenTelemetry tracing costs a run. Two gateways on durable state dirs, one with tracing off and
// one exporting every span over OTLP/HTTP to a collector in this process (it takes and drops them), run the same
// trivial turns in alternating batches: runs per second with tracing on ÷ off, and the CPU each spends per run. A
// burst stream through both shows the cost per event (spans are per call, not per frame, so it should be none).
// With --compare-dist=<a build from before tracing> that build runs the same batches too: offVsBaseRatio is what
// the tracing code costs while it is off.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "undici";
import { readSse } from "../lib/client.js";
import type { BenchContext } from "../lib/context.js";
import { median, quantile, round } from "../lib/stats.js";
import type { System } from "../lib/systems.js";
import { benchPrompt } from "../lib/upstream.js";
import { burst } from "./throughput.js";

export interface TracingResult {
  tracingRatio: number;
  detail: Record<string, unknown>;
}

/** A collector that answers every export with 200 and keeps only counts. */
export async function startDiscardCollector(): Promise<{ tracesUrl: string; exports: () => number; bytes: () => number; close(): Promise<void> }> {
  let exports = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on("data", (chunk: Buffer) => (bytes += chunk.length));
    req.on("end", () => {
      exports++;
      res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    tracesUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    exports: () => exports,
    bytes: () => bytes,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** `runs` trivial turns one after another: each one's wall time, and the gateway's CPU over the batch. */
async function turns(gateway: System, runs: number, agent: Agent): Promise<{ ms: number[]; cpuMs: number }> {
  const prompt = benchPrompt({ mode: "trivial" });
  const ms: number[] = [];
  const cpuBefore = (await gateway.child?.cpuMs()) ?? 0;
  for (let i = 0; i < runs; i++) {
    const { body } = await gateway.request(prompt);
    const result = await readSse(gateway.url, body, { agent });
    if (result.status !== 200 || !result.tail.includes('"RUN_FINISHED"')) throw new Error(`${gateway.name} run ${i}: HTTP ${result.status} …${result.tail.slice(-200)}`);
    ms.push(result.ms);
  }
  return { ms, cpuMs: ((await gateway.child?.cpuMs()) ?? 0) - cpuBefore };
}

type Which = "off" | "on" | "base";

export async function tracingCost(
  ctx: BenchContext,
  systems: { off: System; on: System; base?: System },
  collector: { exports: () => number; bytes: () => number },
): Promise<TracingResult> {
  const batches = ctx.quick ? 6 : 10;
  const perBatch = 50;
  const agent = new Agent({ keepAliveTimeout: 10_000 });
  const order: Which[] = systems.base ? ["off", "on", "base"] : ["off", "on"];
  const samples: Record<Which, number[]> = { off: [], on: [], base: [] };
  const cpu: Record<Which, number> = { off: 0, on: 0, base: 0 };
  const eventsPerSec = { off: [] as number[], on: [] as number[] };
  try {
    // Warm-up: JIT, connection pools, the exporter's first batch.
    for (const which of order) await turns(systems[which]!, 20, agent);
    for (let batch = 0; batch < batches; batch++) {
      // Who goes first rotates, so drift on a shared machine favours none.
      for (let i = 0; i < order.length; i++) {
        const which = order[(i + batch) % order.length]!;
        const r = await turns(systems[which]!, perBatch, agent);
        samples[which].push(...r.ms);
        cpu[which] += r.cpuMs;
      }
    }
    const frames = ctx.quick ? 20_000 : 50_000;
    for (let rep = 0; rep < 3; rep++) {
      for (const which of rep % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const)) {
        eventsPerSec[which].push((await burst(ctx, systems[which], frames, agent)).eventsPerSec);
      }
    }
  } finally {
    await agent.close();
  }
  const runs = batches * perBatch;
  const runsPerSec = (ms: number[]) => 1000 / median(ms);
  const result: TracingResult = {
    tracingRatio: round(runsPerSec(samples.on) / runsPerSec(samples.off), 3),
    detail: {
      runsEach: runs,
      alternatingBatches: batches,
      runMedianMs: { off: round(median(samples.off), 3), on: round(median(samples.on), 3) },
      runP90Ms: { off: round(quantile(samples.off, 0.9), 3), on: round(quantile(samples.on, 0.9), 3) },
      cpuMsPerRun: { off: round(cpu.off / runs, 3), on: round(cpu.on / runs, 3) },
      cpuRatio: round(cpu.on / cpu.off, 3),
      ...(systems.base && {
        offVsBaseRatio: round(runsPerSec(samples.off) / runsPerSec(samples.base), 3),
        baseRunMedianMs: round(median(samples.base), 3),
        baseCpuMsPerRun: round(cpu.base / runs, 3),
        offVsBaseCpuRatio: round(cpu.off / cpu.base, 3),
      }),
      burstEventsPerSec: { off: Math.round(median(eventsPerSec.off)), on: Math.round(median(eventsPerSec.on)) },
      burstRatio: round(median(eventsPerSec.on) / median(eventsPerSec.off), 3),
      collectorExports: collector.exports(),
      collectorBytes: collector.bytes(),
    },
  };
  const detail = result.detail as { runMedianMs: { off: number; on: number }; cpuMsPerRun: { off: number; on: number }; burstRatio: number };
  ctx.log(
    `  tracing off ${detail.runMedianMs.off} ms/run (cpu ${detail.cpuMsPerRun.off} ms), on ${detail.runMedianMs.on} ms/run (cpu ${detail.cpuMsPerRun.on} ms); ` +
      `runs/s on ÷ off ${result.tracingRatio}, burst events/s on ÷ off ${detail.burstRatio}` +
      (systems.base ? `; off ÷ the build before tracing ${String(result.detail.offVsBaseRatio)} (cpu ${String(result.detail.offVsBaseCpuRatio)})` : ""),
  );
  return result;
}
