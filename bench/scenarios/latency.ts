// p99AddedLatencyMs: the upstream writes one text delta per millisecond stamped with its wall-clock send
// time; the client stamps arrival. Gateway latency minus raw-relay latency, p99, on the same machine.
import { Agent } from "undici";
import { readSse } from "../lib/client.js";
import type { BenchContext } from "../lib/context.js";
import { quantile, round } from "../lib/stats.js";
import type { System } from "../lib/systems.js";
import { benchPrompt, latencyReader } from "../lib/upstream.js";

async function latencies(system: System, frames: number, agent: Agent): Promise<number[]> {
  const { body } = await system.request(benchPrompt({ mode: "paced", frames, intervalMs: 1 }));
  const samples: number[] = [];
  const result = await readSse(system.url, body, {
    agent,
    onText: latencyReader((ms) => samples.push(ms)),
  });
  if (result.status !== 200) throw new Error(`${system.name}: HTTP ${result.status}`);
  if (samples.length < frames * 0.99) throw new Error(`${system.name}: only ${samples.length} of ${frames} stamped events arrived`);
  return samples;
}

export interface LatencyResult {
  p99AddedLatencyMs: number;
  detail: Record<string, unknown>;
}

export async function latency(ctx: BenchContext, systems: { raw: System; gateway: System }): Promise<LatencyResult> {
  const frames = ctx.quick ? 5_000 : 20_000;
  const agent = new Agent();
  try {
    const summary: Record<string, { p50: number; p99: number; steadyP99: number; max: number; events: number }> = {};
    const p99: Record<string, number> = {};
    for (const system of [systems.raw, systems.gateway]) {
      await latencies(system, 300, agent);
      const samples = await latencies(system, frames, agent);
      summary[system.name] = {
        p50: round(quantile(samples, 0.5), 3),
        p99: round(quantile(samples, 0.99), 3),
        // Without the first 100 events: what is left once the run's start-up writes (admission, task id) are behind it.
        steadyP99: round(quantile(samples.slice(100), 0.99), 3),
        max: round(Math.max(...samples), 3),
        events: samples.length,
      };
      p99[system.name] = quantile(samples, 0.99);
      ctx.log(`  ${system.name.padEnd(14)} p50 ${summary[system.name]!.p50} ms, p99 ${summary[system.name]!.p99} ms over ${samples.length} events`);
    }
    return { p99AddedLatencyMs: round(p99[systems.gateway.name]! - p99[systems.raw.name]!, 3), detail: { ratePerSec: 1000, frames, ...summary } };
  } finally {
    await agent.close();
  }
}
