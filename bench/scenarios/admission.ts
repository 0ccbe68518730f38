// admissionMedianMs: POST / → response headers (the first byte the client sees) for a trivial upstream
// turn, on a gateway with a durable state dir, so the admission write (fsync included) is in it.
import { Agent } from "undici";
import { readSse } from "../lib/client.js";
import type { BenchContext } from "../lib/context.js";
import { median, quantile, round } from "../lib/stats.js";
import type { System } from "../lib/systems.js";
import { benchPrompt } from "../lib/upstream.js";

export async function admission(ctx: BenchContext, gateway: System): Promise<{ admissionMedianMs: number; detail: Record<string, unknown> }> {
  const runs = 200;
  const agent = new Agent();
  const prompt = benchPrompt({ mode: "trivial" });
  const samples: number[] = [];
  try {
    for (let i = 0; i < runs + 10; i++) {
      const { body } = await gateway.request(prompt);
      const result = await readSse(gateway.url, body, { agent });
      if (result.status !== 200 || !result.tail.includes('"RUN_FINISHED"')) throw new Error(`admission run ${i}: HTTP ${result.status} …${result.tail.slice(-200)}`);
      if (i >= 10) samples.push(result.headersMs);
    }
  } finally {
    await agent.close();
  }
  return { admissionMedianMs: round(median(samples), 3), detail: { runs, p90Ms: round(quantile(samples, 0.9), 3) } };
}
