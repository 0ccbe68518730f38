// Outsider checks on two gateway processes sharing one Redis: the next request right after a terminal event read
// from one replica is admitted by the other, whatever ended the run; a refused POST / leaves no lease behind.
import { randomUUID } from "node:crypto";
import type { RunAgentInput } from "@ag-ui/client";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { threadFileStem } from "../src/state/thread-key.js";
import { streamProblems } from "./helpers/checks.js";
import { allowOnce, interruptsOf, postCancel, resumeInput } from "./helpers/durable.js";
import { postRaw, sessionEventOf } from "./helpers/e2e.js";
import { finishRun, postRun, startReplicas, type Posted, type Replicas } from "./helpers/replicas.js";
import { isTerminal, type WireEvent } from "./helpers/sse.js";

let replicas: Replicas;
let redis: Redis;

beforeAll(async () => {
  replicas = await startReplicas();
  redis = new Redis(replicas.redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
}, 120_000);

afterAll(async () => {
  redis?.disconnect();
  await replicas?.close();
});

async function toTerminal(posted: Posted): Promise<WireEvent[]> {
  expect(posted.status, JSON.stringify(posted.json)).toBe(200);
  expect(await posted.live!.until(isTerminal), "a terminal event").toBeDefined();
  expect(streamProblems(posted.live!.events)).toEqual([]);
  return posted.live!.events;
}

async function nextTurnAdmittedOn(url: string, input: RunAgentInput, extra: Partial<RunAgentInput> = {}): Promise<WireEvent[]> {
  const next = await postRun(url, { ...input, runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content: "hello again" }], ...extra });
  expect(next.status === 200 ? "admitted" : next.json?.error?.code).toBe("admitted");
  return finishRun(next);
}

const leaseOf = (threadId: string) => redis.get(`agui-gateway:lease:${threadFileStem(threadId)}`);

describe("the next request on the other replica right after a terminal event", () => {
  it("a run on A cancelled through B (relayed): the next turn on B, 5 rounds", async () => {
    for (let round = 0; round < 5; round++) {
      const input = replicas.input({ prompt: "slow count" });
      const posted = await postRun(replicas.a.url, input);
      expect(posted.status).toBe(200);
      await posted.live!.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
      const executionId = sessionEventOf(posted.live!.events)["executionId"] as string;
      const cancelled = await postCancel(replicas.b.url, executionId, { threadId: input.threadId, rosInvocationId: "invocation-1" });
      expect(cancelled.json).toMatchObject({ status: "cancelled" });
      expect((await toTerminal(posted)).at(-1)?.type).toBe("RUN_ERROR");
      await nextTurnAdmittedOn(replicas.b.url, input);
    }
  });

  it("AG-UI 1.0: parked on A, re-shown on B, answered on A at once under the re-show's run id, next turn on B", async () => {
    for (let round = 0; round < 3; round++) {
      const input = { ...replicas.input({ prompt: "deploy the stack" }), protocolVersion: "1.0" };
      const [interrupt] = interruptsOf(await toTerminal(await postRun(replicas.a.url, input)));
      const reshowRunId = randomUUID();
      const reshown = interruptsOf(
        await toTerminal(await postRun(replicas.b.url, { ...input, runId: reshowRunId, messages: [...input.messages, { id: randomUUID(), role: "user", content: "again?" }] })),
      );
      expect(reshown.map((i) => i.id)).toEqual([interrupt!.id]);
      const answered = await toTerminal(await postRun(replicas.a.url, resumeInput(input, [allowOnce(interrupt!.id)], { runId: reshowRunId })));
      expect(answered.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
      await nextTurnAdmittedOn(replicas.b.url, input);
    }
  });

  it("two answers at once, one to each replica: exactly one applies, and the thread is free after", async () => {
    for (let round = 0; round < 3; round++) {
      const input = replicas.input({ prompt: "deploy the stack" });
      const [interrupt] = interruptsOf(await toTerminal(await postRun(replicas.a.url, input)));
      const posted = await Promise.all([
        postRun(replicas.a.url, resumeInput(input, [allowOnce(interrupt!.id)])),
        postRun(replicas.b.url, resumeInput(input, [allowOnce(interrupt!.id)])),
      ]);
      const outcomes: string[] = [];
      for (const p of posted) {
        if (p.status !== 200) {
          outcomes.push(`refused:${p.json.error.code}`);
          continue;
        }
        const last = (await toTerminal(p)).at(-1)!;
        outcomes.push(last.type === "RUN_FINISHED" ? `finished:${(last["outcome"] as { type: string }).type}` : `error:${String(last["code"])}`);
      }
      expect(outcomes.filter((o) => o === "finished:success"), outcomes.join(", ")).toHaveLength(1);
      await nextTurnAdmittedOn(replicas.a.url, input);
    }
  });
});

describe("a refused POST / on a shared store", () => {
  it("leaves no lease on the thread, whatever the refusal", async () => {
    const input = replicas.input({ prompt: "deploy the stack" });
    const [interrupt] = interruptsOf(await toTerminal(await postRun(replicas.a.url, input)));
    expect(await leaseOf(input.threadId), "a parked thread is not held").toBeNull();
    const refusals: [unknown, string][] = [
      [input, "DUPLICATE_RUN_ID"],
      [{ ...input, runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content: "a turn" }] }, "RESUME_REQUIRED"],
      [{ ...resumeInput(input, [allowOnce(interrupt!.id)]), forwardedProps: { iacCode: { schemaVersion: 1, rosInvocationId: "other", cwd: replicas.workspace } } }, "EXECUTION_LOST"],
      [resumeInput(replicas.input(), [allowOnce("nobody")]), "EXECUTION_LOST"],
    ];
    for (const [body, code] of refusals) {
      for (const url of [replicas.a.url, replicas.b.url]) {
        const reply = await postRaw(url, JSON.stringify(body), { "Content-Type": "application/json" });
        expect(reply.status, reply.text).toBeGreaterThanOrEqual(400);
        expect(JSON.parse(reply.text).error.code, reply.text).toBe(code);
        expect(await leaseOf((body as RunAgentInput).threadId), `no lease after ${code}`).toBeNull();
      }
    }
    // And the interrupt is still answerable at once.
    const answered = await toTerminal(await postRun(replicas.b.url, resumeInput(input, [allowOnce(interrupt!.id)])));
    expect(answered.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });
});

describe("a refused POST / on a thread whose replica died mid-run (shared store)", () => {
  it("is refused without a kernel call or a record write: the orphan is left to the next admitted request", async () => {
    const doomed = await replicas.spawn();
    const input = replicas.input({ prompt: "slow count" });
    const posted = await postRun(doomed.url, input);
    expect(posted.status).toBe(200);
    await posted.live!.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
    await doomed.kill("SIGKILL");
    await posted.live!.rest();
    // Wait (bounded) for the dead replica's lease to lapse: from now on any replica may claim the thread.
    const deadline = Date.now() + 10_000;
    while ((await leaseOf(input.threadId)) !== null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await leaseOf(input.threadId)).toBeNull();

    const recordKey = `agui-gateway:thread:${threadFileStem(input.threadId)}`;
    const before = await redis.hgetall(recordKey);
    expect(Object.keys(before).length, "the thread's record is in Redis").toBeGreaterThan(0);
    const cancels = replicas.kernel.cancelled.length;
    const calls = replicas.kernel.requests.length;
    // The very body of the run that was going on: a replay.
    const replay = await postRaw(replicas.b.url, JSON.stringify(input), { "Content-Type": "application/json" });
    expect(replay.status, replay.text).toBe(409);
    expect(JSON.parse(replay.text).error.code).toBe("DUPLICATE_RUN_ID");
    expect({
      kernelCalls: replicas.kernel.requests.slice(calls).map((r) => r.method),
      cancels: replicas.kernel.cancelled.length - cancels,
      recordChanged: JSON.stringify(await redis.hgetall(recordKey)) !== JSON.stringify(before),
    }).toEqual({ kernelCalls: [], cancels: 0, recordChanged: false });
  }, 30_000);
});

describe("a resume refused for its payload on one replica", () => {
  it("leaves the interrupted run's id to the corrected retry on the other, sent at once", async () => {
    for (let round = 0; round < 3; round++) {
      const input = replicas.input({ prompt: "deploy the stack" });
      const [interrupt] = interruptsOf(await toTerminal(await postRun(replicas.a.url, input)));
      const mistyped = await toTerminal(
        await postRun(replicas.a.url, resumeInput(input, [{ interruptId: interrupt!.id, status: "resolved", payload: { decision: "maybe" } }], { runId: input.runId })),
      );
      expect(mistyped.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "RESUME_PAYLOAD_INVALID" });
      const corrected = await postRun(replicas.b.url, resumeInput(input, [allowOnce(interrupt!.id)], { runId: input.runId }));
      expect(corrected.status === 200 ? "admitted" : corrected.json?.error?.code).toBe("admitted");
      expect((await toTerminal(corrected)).at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    }
  });
});

describe("a run that ends while Redis does not answer", () => {
  it("ends RUN_ERROR STATE_PERSISTENCE_FAILED, never RUN_FINISHED; the thread is admitted again once Redis answers", async () => {
    const input = replicas.input({ prompt: "brief slow count" });
    const posted = await postRun(replicas.a.url, input);
    expect(posted.status).toBe(200);
    await posted.live!.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    replicas.redis.pause();
    let events: WireEvent[];
    try {
      events = await toTerminal(posted);
    } finally {
      replicas.redis.resume();
    }
    expect(events.at(-1), JSON.stringify(events.at(-1))).toMatchObject({ type: "RUN_ERROR", code: "STATE_PERSISTENCE_FAILED" });
    let last: unknown;
    const deadline = Date.now() + 15_000;
    for (;;) {
      // Same script as the first turn (same iac-code session id).
      const next = await postRun(replicas.b.url, { ...input, runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content: "brief slow again" }] });
      if (next.status === 200) {
        const ended = (await finishRun(next)).at(-1);
        expect(ended, JSON.stringify(ended)).toMatchObject({ type: "RUN_FINISHED" });
        break;
      }
      last = next.json;
      expect(Date.now() < deadline, JSON.stringify(last)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 40_000);
});

describe("a replica starting up on a shared store", () => {
  it("claims only the threads it recovers: none of the parked ones another replica is answering", async () => {
    // One orphan (its replica SIGKILLed mid-run, its lease lapsed): the start-up's to recover.
    const doomed = await replicas.spawn();
    const orphan = replicas.input({ prompt: "slow count" });
    const posted = await postRun(doomed.url, orphan);
    expect(posted.status).toBe(200);
    await posted.live!.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    await doomed.kill("SIGKILL");
    await posted.live!.rest();
    const deadline = Date.now() + 10_000;
    while ((await leaseOf(orphan.threadId)) !== null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await leaseOf(orphan.threadId)).toBeNull();
    const orphanRecord = async () => JSON.parse((await redis.hget(`agui-gateway:thread:${threadFileStem(orphan.threadId)}`, "record"))!);
    const orphanTask = (await orphanRecord()).execution.taskId as string;
    expect(orphanTask).toEqual(expect.any(String));
    // Twenty threads parked at an interrupt on B: nothing to recover there.
    const parked = await Promise.all(Array.from({ length: 20 }, async () => {
      const input = replicas.input({ prompt: "deploy the stack" });
      expect((await toTerminal(await postRun(replicas.b.url, input))).at(-1)).toMatchObject({ outcome: { type: "interrupt" } });
      return threadFileStem(input.threadId);
    }));

    // Every lease key Redis writes from now on (keyspace notifications).
    await redis.config("SET", "notify-keyspace-events", "K$g");
    const watcher = new Redis(replicas.redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await watcher.connect();
    const touched = new Set<string>();
    watcher.on("pmessage", (_pattern: string, channel: string) => touched.add(channel.slice(channel.indexOf("lease:") + "lease:".length)));
    await watcher.psubscribe("__keyspace@0__:agui-gateway:lease:*");
    try {
      const fresh = await replicas.spawn();
      const recoveredBy = Date.now() + 15_000;
      while (!fresh.stderr().includes("cancelled the A2A tasks of runs that were active") && Date.now() < recoveredBy) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect((await orphanRecord()).execution.taskId, "the orphan was recovered at start-up").toBeNull();
      expect(replicas.kernel.cancelled).toContain(orphanTask);
      expect(touched.has(threadFileStem(orphan.threadId)), "the orphan's lease was taken (the watch sees leases)").toBe(true);
      expect(parked.filter((stem) => touched.has(stem)), "parked threads whose lease the start-up took").toEqual([]);
    } finally {
      watcher.disconnect();
      await redis.config("SET", "notify-keyspace-events", "");
    }
  }, 60_000);
});
