// pipelineEventsPerSec: createAguiPipeline alone, in this process (one core), over the recorded frames of
// the bench turn, JSON-parsed once up front. Best of several iterations: on a shared machine the best run
// is the one least interrupted by other processes, i.e. the closest to "one core".
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import { from } from "rxjs";
import type { BenchContext } from "../lib/context.js";
import { median, round } from "../lib/stats.js";
import { renderTurn } from "../lib/stream.js";
import type { A2AStreamResponse } from "../../operators/types.js";

export async function pipeline(ctx: BenchContext): Promise<{ pipelineEventsPerSec: number; detail: Record<string, unknown> }> {
  const { createAguiPipeline } = (await import(pathToFileURL(ctx.build.operators).href)) as typeof import("../../operators/index.js");
  const frameCount = ctx.quick ? 100_000 : 200_000;
  const iterations = ctx.quick ? 12 : 20;
  const contextId = "agui-" + "1".repeat(40);
  const text = renderTurn({ frames: frameCount, contextId }).body.toString("utf8");
  const frames: A2AStreamResponse[] = [];
  for (const record of text.split("\n\n")) {
    if (record.startsWith("data: ")) frames.push((JSON.parse(record.slice(6)) as { result: A2AStreamResponse }).result);
  }
  const once = () =>
    new Promise<{ events: number; ms: number }>((resolve, reject) => {
      let events = 0;
      let last = "";
      const started = performance.now();
      from(frames)
        .pipe(
          createAguiPipeline({
            threadId: `bench-${randomUUID()}`,
            runId: randomUUID(),
            contextId,
            session: { executionId: randomUUID(), rosInvocationId: "bench-invocation" },
            heartbeat: false,
          }),
        )
        .subscribe({
          next: (event) => {
            events++;
            last = event.type;
          },
          error: reject,
          complete: () => (last === "RUN_FINISHED" ? resolve({ events, ms: performance.now() - started }) : reject(new Error(`pipeline ended with ${last}`))),
        });
    });
  const rates: number[] = [];
  let events = 0;
  for (let i = 0; i < iterations + 1; i++) {
    const run = await once();
    events = run.events;
    if (i > 0) rates.push(run.events / (run.ms / 1000));
  }
  return {
    pipelineEventsPerSec: Math.round(Math.max(...rates)),
    detail: { frames: frames.length, eventsPerRun: events, iterations, medianEventsPerSec: Math.round(median(rates)), bestMs: round((events / Math.max(...rates)) * 1000, 1) },
  };
}
