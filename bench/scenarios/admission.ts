// admissionMedianMs: POST / → response headers (the first byte the client sees) for a trivial upstream
// turn, on a gateway with a durable state dir, so the admission write (fsync included) is in it.
// admissionRedisMedianMs: the same on a gateway whose state is in Redis on loopback (lease + compare-and-set
// write), measured in alternating batches with the file-store gateway so machine load hits both alike.
import { Agent } from "undici";
import { readSse } from "../lib/client.js";
import type { BenchContext } from "../lib/context.js";
import { median, quantile, round } from "../lib/stats.js";
import type { System } from "../lib/systems.js";
import { benchPrompt } from "../lib/upstream.js";

/** Headers latency of `runs` trivial turns after `warmup` unmeasured ones. */
async function admissionSamples(gateway: System, runs: number, warmup: number): Promise<number[]> {
  const agent = new Agent();
  const prompt = benchPrompt({ mode: "trivial" });
  const samples: number[] = [];
  try {
    for (let i = 0; i < runs + warmup; i++) {
      const { body } = await gateway.request(prompt);
      const result = await readSse(gateway.url, body, { agent });
      if (result.status !== 200 || !result.tail.includes('"RUN_FINISHED"')) throw new Error(`${gateway.name} admission run ${i}: HTTP ${result.status} …${result.tail.slice(-200)}`);
      if (i >= warmup) samples.push(result.headersMs);
    }
  } finally {
    await agent.close();
  }
  return samples;
}

export async function admission(_ctx: BenchContext, gateway: System): Promise<{ admissionMedianMs: number; detail: Record<string, unknown> }> {
  const runs = 200;
  const samples = await admissionSamples(gateway, runs, 10);
  return { admissionMedianMs: round(median(samples), 3), detail: { runs, p90Ms: round(quantile(samples, 0.9), 3) } };
}

/** File store and Redis store gateways in alternating batches of 50 turns: the medians of each, and their difference. */
export async function admissionFileVsRedis(
  ctx: BenchContext,
  file: System,
  redis: System,
): Promise<{ admissionMedianMs: number; admissionRedisMedianMs: number; detail: Record<string, unknown> }> {
  const pairs = ctx.quick ? 3 : 6;
  const fileSamples: number[] = [];
  const redisSamples: number[] = [];
  await admissionSamples(redis, 0, 10);
  await admissionSamples(file, 0, 10);
  for (let pair = 0; pair < pairs; pair++) {
    fileSamples.push(...(await admissionSamples(file, 50, 0)));
    redisSamples.push(...(await admissionSamples(redis, 50, 0)));
  }
  const fileMedian = median(fileSamples);
  const redisMedian = median(redisSamples);
  return {
    admissionMedianMs: round(fileMedian, 3),
    admissionRedisMedianMs: round(redisMedian, 3),
    detail: {
      runsEach: fileSamples.length,
      alternatingBatches: pairs,
      fileP90Ms: round(quantile(fileSamples, 0.9), 3),
      redisP90Ms: round(quantile(redisSamples, 0.9), 3),
      redisMinusFileMs: round(redisMedian - fileMedian, 3),
    },
  };
}
