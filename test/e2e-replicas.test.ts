// Two gateway processes (the real CLI) sharing one real redis-server (--state-store, --lease-ttl 2) in front of
// one scripted A2A kernel, as issue #17 item 6 asks: a thread admits one run whichever replica is asked, run ids
// are single-use across replicas, an interrupt parked by a replica that was SIGKILLed is resumed once elsewhere,
// a cancel reaches the run wherever it streams, and a dead replica's lease expires (its orphan task cancelled).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contextIdForThread } from "../src/a2a/index.js";
import { allowOnce, cancelCount, dataPartsTo, interruptsOf, postCancel, resumeInput, runErrorOf } from "./helpers/durable.js";
import { postRaw, runWithHttpAgent, sessionEventOf, typesOf } from "./helpers/e2e.js";
import { LEASE_TTL_SECONDS, finishRun, postRun, startReplicas, type Posted, type Replicas } from "./helpers/replicas.js";

let replicas: Replicas;

beforeAll(async () => {
  replicas = await startReplicas();
}, 120_000);

afterAll(async () => {
  await replicas?.close();
});

/** The turns (new tasks) the kernel was sent on a thread's context. */
function turnsOn(threadId: string): number {
  const contextId = contextIdForThread(threadId);
  return replicas.kernel.requests.filter((r) => {
    const message = (r.params as { message?: { contextId?: string; taskId?: string } } | undefined)?.message;
    return r.method === "SendStreamingMessage" && message?.contextId === contextId && message.taskId === undefined;
  }).length;
}

/** A slow run's stream, read until its session is announced (the execution id a cancel needs). */
async function slowRun(url: string, threadId?: string) {
  const input = replicas.input({ prompt: "slow count", ...(threadId !== undefined && { threadId }) });
  const posted = await postRun(url, input);
  expect(posted.status).toBe(200);
  await posted.live!.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
  const session = sessionEventOf(posted.live!.events);
  return { input, posted, executionId: session["executionId"] as string, taskId: session["taskId"] as string };
}

// The kernel keeps one session per thread: a thread that ran a slow turn goes on with slow turns.
const BRIEF = "brief slow count";

const cancelBody = (threadId: string) => ({ threadId, rosInvocationId: "invocation-1" });

describe("admission across replicas", () => {
  it("100 concurrent POSTs on one new thread, half to each replica: one 200, 99 THREAD_BUSY envelopes", async () => {
    const { a, b } = replicas;
    const first = replicas.input({ prompt: "slow count" });
    const posts = Array.from({ length: 100 }, (_, i) => ({ replica: i % 2 === 0 ? "A" : "B", input: { ...first, runId: `run-${i}` } }));
    const answers = await Promise.all(
      posts.map(async (p) => ({ replica: p.replica, ...(await postRun(p.replica === "A" ? a.url : b.url, p.input)) })),
    );

    const admitted = answers.filter((x) => x.status === 200);
    expect(admitted).toHaveLength(1);
    const refused = answers.filter((x) => x.status === 409 && x.json?.error?.code === "THREAD_BUSY");
    expect(refused).toHaveLength(99);
    // Both processes refused: each got 50, one of them also the run.
    expect(refused.filter((x) => x.replica === "A").length).toBeGreaterThanOrEqual(49);
    expect(refused.filter((x) => x.replica === "B").length).toBeGreaterThanOrEqual(49);
    expect(turnsOn(first.threadId)).toBe(1);

    // Stopped on the replica that runs it; the thread is then free on the other one.
    const run = admitted[0]!;
    await run.live!.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    const executionId = sessionEventOf(run.live!.events)["executionId"] as string;
    const winner = run.replica === "A" ? a.url : b.url;
    expect(await postCancel(winner, executionId, cancelBody(first.threadId))).toMatchObject({ status: 200, json: { status: "cancelled" } });
    expect(runErrorOf(await finishRun(run)).code).toBe("CANCELLED");
    const next = await runWithHttpAgent(run.replica === "A" ? b.url : a.url, replicas.input({ threadId: first.threadId, prompt: BRIEF }));
    expect(next.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(turnsOn(first.threadId)).toBe(2);
  }, 30_000);

  it("a run id used on A is refused on B: DUPLICATE_RUN_ID for the same body, RUN_ID_CONFLICT otherwise, also mid-run", async () => {
    const { a, b } = replicas;
    // Raw POSTs: a replay is the same bytes (HttpAgent would add its own fields to the body).
    const done = replicas.input({ prompt: BRIEF });
    const ran = await finishRun(await postRun(a.url, done));
    expect(ran.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });

    expect(await postRaw(b.url, done)).toMatchObject({ status: 409, json: { error: { code: "DUPLICATE_RUN_ID" } } });
    const changed = { ...done, messages: [{ id: "message-2", role: "user", content: "Something else" }] };
    expect(await postRaw(b.url, changed)).toMatchObject({ status: 409, json: { error: { code: "RUN_ID_CONFLICT" } } });

    // While A streams, B reads the thread without owning it: the run-id checks still answer before THREAD_BUSY.
    const slow = await slowRun(a.url, done.threadId);
    expect(await postRaw(b.url, slow.input)).toMatchObject({ status: 409, json: { error: { code: "DUPLICATE_RUN_ID" } } });
    expect(await postRaw(b.url, { ...slow.input, messages: changed.messages })).toMatchObject({
      status: 409,
      json: { error: { code: "RUN_ID_CONFLICT" } },
    });
    const busy = await postRaw(b.url, replicas.input({ threadId: done.threadId }));
    expect(busy).toMatchObject({ status: 409, json: { error: { code: "THREAD_BUSY" } } });
    expect(await postCancel(a.url, slow.executionId, cancelBody(done.threadId))).toMatchObject({ status: 200 });
    expect(runErrorOf(await finishRun(slow.posted)).code).toBe("CANCELLED");
    // The cancelled run's id stays used, on both replicas.
    expect(await postRaw(b.url, slow.input)).toMatchObject({ status: 409, json: { error: { code: "DUPLICATE_RUN_ID" } } });
    expect(await postRaw(a.url, done)).toMatchObject({ status: 409, json: { error: { code: "DUPLICATE_RUN_ID" } } });
    expect(turnsOn(done.threadId)).toBe(2);
  }, 30_000);
});

describe("an interrupt parked by a replica that was SIGKILLed", () => {
  it("is resumed once by whichever replica gets the answer first; every replay is RESUME_ALREADY_APPLIED", async () => {
    const { a, b, kernel } = replicas;
    const doomed = await replicas.spawn();
    const input = replicas.input({ prompt: "deploy the stack" });
    const parked = await runWithHttpAgent(doomed.url, input);
    const [interrupt] = interruptsOf(parked.events);
    const taskId = sessionEventOf(parked.events)["taskId"] as string;
    expect(await doomed.kill("SIGKILL")).toEqual({ code: null, signal: "SIGKILL" });

    // The same answer reaches both survivors at once (a client retrying elsewhere): the kernel gets it once.
    const both = await Promise.all([a.url, b.url].map((url) => postRun(url, resumeInput(input, [allowOnce(interrupt!.id)]))));
    const streams = await Promise.all(both.filter((p) => p.status === 200).map(finishRun));
    const succeeded = streams.filter((events) => events.at(-1)?.type === "RUN_FINISHED");
    expect(succeeded).toHaveLength(1);
    expect(succeeded[0]!.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    // The other one was either busy (the resume still ran) or too late (it had been applied).
    for (const other of both.filter((p) => p.status !== 200)) expect(other).toMatchObject({ status: 409, json: { error: { code: "THREAD_BUSY" } } });
    for (const other of streams.filter((events) => events !== succeeded[0])) {
      expect(typesOf(other)).toEqual(["RUN_STARTED", "RUN_ERROR"]);
      expect(runErrorOf(other).code).toBe("RESUME_ALREADY_APPLIED");
    }
    expect(dataPartsTo(kernel, taskId)).toEqual([expect.objectContaining({ inputId: interrupt!.id, decision: "allow_once" })]);

    for (const url of [b.url, a.url]) {
      const replay = await runWithHttpAgent(url, resumeInput(input, [allowOnce(interrupt!.id)]));
      expect(typesOf(replay.events)).toEqual(["RUN_STARTED", "RUN_ERROR"]);
      expect(runErrorOf(replay.events).code).toBe("RESUME_ALREADY_APPLIED");
    }
    expect(dataPartsTo(kernel, taskId)).toHaveLength(1);
  }, 30_000);
});

describe("cancel across replicas", () => {
  it("a cancel sent to B stops the run streaming from A: one terminal event there, one CancelTask upstream", async () => {
    const { a, b, kernel } = replicas;
    const slow = await slowRun(a.url);
    const cancelled = await postCancel(b.url, slow.executionId, cancelBody(slow.input.threadId));
    expect(cancelled).toEqual({ status: 200, json: { executionId: slow.executionId, status: "cancelled" } });
    const events = await finishRun(slow.posted);
    expect(runErrorOf(events).code).toBe("CANCELLED");
    expect(cancelCount(kernel, slow.taskId)).toBe(1);
    // Asked again, on either replica, it is over.
    for (const url of [b.url, a.url]) {
      const again = await postCancel(url, slow.executionId, cancelBody(slow.input.threadId));
      expect(again).toMatchObject({ status: 200, json: { status: "already_terminal" } });
    }
    expect(cancelCount(kernel, slow.taskId)).toBe(1);
  }, 30_000);

  it("when the replica running the thread is gone, B takes its lease over and cancels the task itself", async () => {
    const { a, b, kernel } = replicas;
    const doomed = await replicas.spawn();
    const slow = await slowRun(doomed.url);
    await doomed.kill("SIGKILL");
    await slow.posted.live!.rest();
    const cancelled = await postCancel(b.url, slow.executionId, cancelBody(slow.input.threadId));
    expect(cancelled).toEqual({ status: 200, json: { executionId: slow.executionId, status: "cancelled" } });
    expect(cancelCount(kernel, slow.taskId)).toBeGreaterThanOrEqual(1);
    // The dead replica's lease was broken, not left to expire: the thread takes a new turn at once.
    const next = await runWithHttpAgent(a.url, replicas.input({ threadId: slow.input.threadId, prompt: BRIEF }));
    expect(next.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  }, 30_000);
});

describe("a replica that dies mid-run", () => {
  it("holds the thread until its lease expires; the next admission cancels the orphaned task first", async () => {
    const { b, kernel } = replicas;
    const doomed = await replicas.spawn();
    const slow = await slowRun(doomed.url);
    await doomed.kill("SIGKILL");
    const killedAt = Date.now();
    await slow.posted.live!.rest();
    expect(cancelCount(kernel, slow.taskId)).toBe(0);

    const again = () => replicas.input({ threadId: slow.input.threadId, prompt: BRIEF });
    expect(await postRaw(b.url, again())).toMatchObject({ status: 409, json: { error: { code: "THREAD_BUSY" } } });
    // Retried until admitted, bounded by three lease lifetimes.
    let admitted: Posted | undefined;
    while (admitted === undefined && Date.now() - killedAt < 3 * LEASE_TTL_SECONDS * 1000) {
      const posted = await postRun(b.url, again());
      if (posted.status === 200) admitted = posted;
      else {
        expect(posted).toMatchObject({ status: 409, json: { error: { code: "THREAD_BUSY" } } });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    expect(admitted, "admitted once the dead replica's lease expired").toBeDefined();
    // The lease was renewed at most a third of its TTL before the kill.
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual((LEASE_TTL_SECONDS * 1000 * 2) / 3 - 100);
    const events = await finishRun(admitted!);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(cancelCount(kernel, slow.taskId)).toBe(1);
    expect(sessionEventOf(events)["taskId"]).not.toBe(slow.taskId);
  }, 30_000);
});
