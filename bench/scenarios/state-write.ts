// stateWriteMedianMs: one FileThreadStore.save (temp file, fsync, rename, fsync dir) of a thread record
// holding one pending permission interrupt — the write a gateway makes before it announces an interrupt.
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import pino from "pino";
import type { BenchContext } from "../lib/context.js";
import { median, quantile, round } from "../lib/stats.js";
import type { ThreadRecord } from "../../src/state/thread-store.js";

function interruptedRecord(threadId: string, contextId: string, cwd: string): ThreadRecord {
  const inputId = "permission-0a1b2c3d4e5f60718293a4b5c6d7e8f9";
  return {
    schemaVersion: 1,
    threadId,
    contextId,
    cwd,
    userId: null,
    iacCodeSessionId: "8d2c7e1a-3b4f-4c5d-9e6f-0a1b2c3d4e5f",
    execution: {
      executionId: randomUUID(),
      rosInvocationId: "bench-invocation",
      taskId: "task-bench-1",
      lastTaskId: "task-bench-1",
      pipelineSequence: 0,
      pipelineOpenSteps: [],
      pending: {
        [inputId]: {
          value: {
            schemaVersion: 1, kind: "permission", requestTaskId: "task-bench-1", contextId, inputId, toolUseId: "call_a1",
            toolName: "bash", title: "Run shell command", purpose: "Needed for the task", effect: "local_execution",
            target: "workspace; command: touch a.txt", isReadOnly: false, prompt: "Run shell command - allow once?",
            safeSummary: 'bash: {"command":"touch a.txt"}', options: [{ id: "allow_once", label: "Allow once" }, { id: "deny", label: "Deny" }],
            language: "en", required: true,
          },
          sideband: false,
          expiresAt: new Date(Date.now() + 540_000).toISOString(),
        },
      },
    },
    runDigests: [{ runId: randomUUID(), digest: "a".repeat(64) }, { runId: randomUUID(), digest: "b".repeat(64) }],
    appliedResumeDigests: [],
    terminalExecutionIds: [randomUUID()],
  };
}

/** Median ms of 200 writes (after 10 unmeasured) of `save`. */
async function timedWrites(save: () => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < 210; i++) {
    const started = performance.now();
    await save();
    if (i >= 10) samples.push(performance.now() - started);
  }
  return samples;
}

export async function stateWrite(ctx: BenchContext): Promise<{ stateWriteMedianMs: number; detail: Record<string, unknown> }> {
  const { FileThreadStore } = (await import(pathToFileURL(ctx.build.fileStore).href)) as typeof import("../../src/state/file-store.js");
  const dir = await ctx.scratch("state-write");
  const store = new FileThreadStore({ dir });
  const threadId = `bench-${randomUUID()}`;
  const record = interruptedRecord(threadId, "agui-" + "0".repeat(40), ctx.workspace);
  const samples = await timedWrites(() => store.save(record));
  const loaded = await store.load(threadId);
  if (!loaded || Object.keys(loaded.execution.pending).length !== 1) throw new Error("state write: the record did not round-trip");
  return { stateWriteMedianMs: round(median(samples), 3), detail: { writes: samples.length, p90Ms: round(quantile(samples, 0.9), 3), dir } };
}

/**
 * stateWriteRedisMedianMs: the same record written the way a gateway on Redis writes it: a compare-and-set on the
 * version it holds, fenced by the thread's lease (one Lua script round trip on loopback).
 */
export async function stateWriteRedis(ctx: BenchContext, url: string): Promise<{ stateWriteRedisMedianMs: number; detail: Record<string, unknown> }> {
  const { RedisThreadStore } = (await import(pathToFileURL(ctx.build.redisStore).href)) as typeof import("../../src/state/redis-store.js");
  const store = new RedisThreadStore({ connection: { url, logger: pino({ level: "silent" }) }, prefix: `bench-${randomUUID()}:` });
  try {
    const threadId = `bench-${randomUUID()}`;
    const record = interruptedRecord(threadId, "agui-" + "0".repeat(40), ctx.workspace);
    const lease = await store.acquireLease(threadId, "bench", 60_000);
    if (!("token" in lease)) throw new Error("state write: the bench could not take its own thread's lease");
    let version = 0;
    const samples = await timedWrites(async () => {
      version = await store.saveVersioned(record, version, lease.token);
    });
    const loaded = await store.load(threadId);
    if (!loaded || Object.keys(loaded.execution.pending).length !== 1) throw new Error("state write (Redis): the record did not round-trip");
    return { stateWriteRedisMedianMs: round(median(samples), 3), detail: { writes: samples.length, p90Ms: round(quantile(samples, 0.9), 3) } };
  } finally {
    await store.close();
  }
}
