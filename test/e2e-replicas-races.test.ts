// The narrow windows between replicas (issue #17), on a real redis-server, one scripted kernel and two real
// gateway processes: a follow-up that reaches the other replica the instant a run ended, a relayed cancel that
// arrives after its owner let the thread go (or that names the wrong execution), a lease that lapses while a run
// only streams text, and a lease Redis granted after the replica had given up on it.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeRedisConnection, createRedisConnection, waitForRedisReady } from "../src/state/redis-connection.js";
import { RedisRelay } from "../src/state/redis-relay.js";
import { threadFileStem } from "../src/state/thread-key.js";
import { allowOnce, cancelCount, interruptsOf, resumeInput, runErrorOf } from "./helpers/durable.js";
import { runWithHttpAgent, sessionEventOf } from "./helpers/e2e.js";
import { silentLogger } from "./helpers/logger.js";
import { finishRun, postRun, replicaIdOf, startReplicas, storeHealth, type Replicas } from "./helpers/replicas.js";

let replicas: Replicas;
let redis: ReturnType<typeof createRedisConnection>;
let relay: RedisRelay;

beforeAll(async () => {
  replicas = await startReplicas();
  redis = createRedisConnection({ url: replicas.redis.url, logger: silentLogger });
  expect(await waitForRedisReady(redis, 5_000)).toBe(true);
  // Another replica as far as the relay can tell: the test asks the gateways directly.
  relay = new RedisRelay({ url: replicas.redis.url, logger: silentLogger, ownerId: `test-${randomUUID()}` });
  await relay.whenSubscribed();
}, 120_000);

afterAll(async () => {
  await relay?.close();
  if (redis) await closeRedisConnection(redis);
  await replicas?.close();
});

const leaseKey = (threadId: string) => `agui-gateway:lease:${threadFileStem(threadId)}`;

describe("hand-overs between replicas", () => {
  it("a follow-up turn posted to the other replica the instant a run ended is admitted, every time", async () => {
    const { a, b } = replicas;
    const threadId = randomUUID();
    for (let turn = 0; turn < 10; turn++) {
      const [here, there] = turn % 2 === 0 ? [a, b] : [b, a];
      const ran = await finishRun(await postRun(here.url, replicas.input({ threadId, prompt: `question ${turn}` })));
      expect(ran.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
      // No pause: the run's last write and the lease release may still be on their way.
      const next = await postRun(there.url, replicas.input({ threadId, prompt: `question ${turn}b` }));
      expect(next.status, JSON.stringify(next.json)).toBe(200);
      expect((await finishRun(next)).at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    }
  }, 60_000);

  it("a relayed cancel that reaches a replica no longer running the thread is answered notOwner, and changes nothing", async () => {
    const { a, b, kernel } = replicas;
    const first = replicas.input({ prompt: "deploy the stack" });
    const parked = await runWithHttpAgent(a.url, first);
    const interrupts = interruptsOf(parked.events);
    const session = sessionEventOf(parked.events);
    const taskId = session["taskId"] as string;
    const asked = { executionId: session["executionId"], threadId: first.threadId, rosInvocationId: "invocation-1" };

    // A parked its run and let the thread go; a cancel relayed to it now (it was the owner a moment ago) is not its to do.
    expect(await relay.request(replicaIdOf(a), "cancel", asked, 5_000)).toEqual({ answered: true, reply: { notOwner: true } });
    expect(cancelCount(kernel, taskId)).toBe(0);
    // The interrupt is intact: answered on B, it completes.
    const resumed = await runWithHttpAgent(b.url, resumeInput(first, [allowOnce(interrupts[0]!.id)]));
    expect(resumed.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  }, 30_000);

  it("a relayed cancel naming the wrong execution of a live run is not_found, and the run goes on", async () => {
    const { a, kernel } = replicas;
    const input = replicas.input({ prompt: "brief slow count" });
    const run = await postRun(a.url, input);
    expect(run.status).toBe(200);
    await run.live!.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    const taskId = sessionEventOf(run.live!.events)["taskId"] as string;
    const forged = { executionId: randomUUID(), threadId: input.threadId, rosInvocationId: "invocation-1" };
    expect(await relay.request(replicaIdOf(a), "cancel", forged, 5_000)).toEqual({ answered: true, reply: { outcome: "not_found" } });
    expect((await finishRun(run)).at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(cancelCount(kernel, taskId)).toBe(0);
  }, 30_000);
});

describe("leases", () => {
  it("a run whose lease lapses while it streams text ends STATE_PERSISTENCE_FAILED, and its task is cancelled", async () => {
    const { a, kernel } = replicas;
    const input = replicas.input({ prompt: "slow count" });
    const run = await postRun(a.url, input);
    expect(run.status).toBe(200);
    await run.live!.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    const taskId = sessionEventOf(run.live!.events)["taskId"] as string;
    // The lease vanishes (an operator, a failover): A's next renewal finds it gone.
    expect(await redis.del(leaseKey(input.threadId))).toBe(1);
    const events = await finishRun(run);
    expect(runErrorOf(events).code).toBe("STATE_PERSISTENCE_FAILED");
    await expect.poll(() => cancelCount(kernel, taskId)).toBe(1);
  }, 30_000);

  it("a lease in this replica's name that no run of it holds (granted after the replica gave up) does not block the thread", async () => {
    const { a } = replicas;
    const input = replicas.input({ prompt: "hello" });
    await redis.set(leaseKey(input.threadId), `${replicaIdOf(a)}/granted-too-late`, "PX", 60_000);
    const ran = await finishRun(await postRun(a.url, input));
    expect(ran.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    // The run's own lease went with its end, and the stray one did not come back.
    await expect.poll(() => redis.exists(leaseKey(input.threadId))).toBe(0);
  }, 30_000);
});

describe("a Redis that is connected but does not answer", () => {
  it("admissions are 503 STATE_UNAVAILABLE within the command timeout, /health says failing, and all is well once it answers", async () => {
    const { a } = replicas;
    replicas.redis.pause();
    try {
      const started = Date.now();
      const refused = await postRun(a.url, replicas.input({ prompt: "hello" }));
      expect(refused).toMatchObject({ status: 503, json: { error: { code: "STATE_UNAVAILABLE" } } });
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(await storeHealth(a.url)).toEqual({ kind: "redis", status: "failing" });
    } finally {
      replicas.redis.resume();
    }
    const ran = await finishRun(await postRun(a.url, replicas.input({ prompt: "hello" })));
    expect(ran.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(await storeHealth(a.url)).toEqual({ kind: "redis", status: "ready" });
  }, 30_000);
});
