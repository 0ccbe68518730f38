// admissionMedianMs: POST / → response headers (the first byte the client sees) for a trivial upstream
// turn, on a gateway with a durable state dir, so the admission write (fsync included) is in it.
// admissionCpuMsPerRun: the gateway's CPU time per trivial run (admission, its three durable writes, the stream and
// its end) with the file store, runs arriving 100 at a time: what a crowd of short runs costs the process; the
// detail adds its main thread's busy time per run (what holds up the other streams; the CPU time also counts the
// thread pool's file-system calls and the collector's helper threads).
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

/** Gateway CPU and main-thread busy milliseconds per trivial run: `runs` of them, `concurrency` in flight at once, after a warm-up. */
export async function admissionCpuPerRun(gateway: System, runs = 1_500, concurrency = 100): Promise<{ cpuMsPerRun: number; busyMsPerRun: number }> {
  const agent = new Agent({ connections: concurrency });
  const prompt = benchPrompt({ mode: "trivial" });
  const runAll = async (count: number) => {
    let next = 0;
    const worker = async () => {
      while (next < count) {
        next++;
        const { body } = await gateway.request(prompt);
        const result = await readSse(gateway.url, body, { agent });
        if (result.status !== 200 || !result.tail.includes('"RUN_FINISHED"')) throw new Error(`${gateway.name} trivial run: HTTP ${result.status} …${result.tail.slice(-200)}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  };
  try {
    await runAll(concurrency * 2);
    const child = gateway.child!;
    const [cpuBefore, busyBefore] = [await child.cpuMs(), await child.busyMs()];
    await runAll(runs);
    const [cpuAfter, busyAfter] = [await child.cpuMs(), await child.busyMs()];
    return { cpuMsPerRun: round((cpuAfter - cpuBefore) / runs, 3), busyMsPerRun: round((busyAfter - busyBefore) / runs, 3) };
  } finally {
    await agent.close();
  }
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
