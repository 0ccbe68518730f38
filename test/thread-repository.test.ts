// The thread repository over a store several replicas share (real redis-server): a claim is a lease only one
// replica holds, writes are compare-and-set and fenced by it, and a claim that lapses is reported and fences
// every later write. With a store of its own (memory) a claim is always granted and changes nothing.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ThreadRepository } from "../src/runs/thread-repository.js";
import { closeRedisConnection, createRedisConnection, waitForRedisReady } from "../src/state/redis-connection.js";
import { RedisThreadStore } from "../src/state/redis-store.js";
import { MemoryThreadStore, StateUnavailableError, type ThreadRecord } from "../src/state/thread-store.js";
import type { Transition } from "../src/runs/transitions.js";
import { silentLogger } from "./helpers/logger.js";
import { startRedis, type RedisServer } from "./helpers/redis.js";
import { threadRecord } from "./helpers/thread-record.js";

let redis: RedisServer;
const stores: RedisThreadStore[] = [];

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  for (const store of stores) await store.close();
  await redis.stop();
});

/** Two replicas' repositories on one Redis (one key prefix), with a short lease. */
function replicas(leaseTtlMs = 600): { a: ThreadRepository; b: ThreadRepository; store: RedisThreadStore } {
  const prefix = `repo-${randomUUID()}:`;
  const open = () => {
    const store = new RedisThreadStore({ connection: { url: redis.url, logger: silentLogger, maxReconnectDelayMs: 200 }, prefix });
    stores.push(store);
    return store;
  };
  const a = new ThreadRepository({ store: open(), logger: silentLogger, replicaId: "replica-a", leaseTtlMs });
  const b = new ThreadRepository({ store: open(), logger: silentLogger, replicaId: "replica-b", leaseTtlMs });
  return { a, b, store: open() };
}

/** Writes `record` as the thread's, as admission does. */
const write = (repository: ThreadRepository, record: ThreadRecord) => repository.locked(record.threadId, (thread) => thread.write(record));

const cursorAt =
  (pipelineSequence: number): Transition =>
  (record) => ({ ...record, execution: { ...record.execution, pipelineSequence } });

describe("thread repository over a shared store", () => {
  it("grants a thread to one replica at a time, and to the other once it is given back", async () => {
    const { a, b } = replicas();
    expect(await a.claim("t1")).toEqual({ claimed: true });
    expect(await b.claim("t1")).toEqual({ claimed: false, heldBy: "replica-a" });
    // Our own live claim refuses a second one too: THREAD_BUSY holds within a replica as well.
    expect(await a.claim("t1")).toEqual({ claimed: false, heldBy: "replica-a" });
    expect(await b.claim("t2")).toEqual({ claimed: true });
    await a.unclaim("t1");
    expect(await b.claim("t1")).toEqual({ claimed: true });
    await b.unclaim("t1");
    await b.unclaim("t2");
  });

  it("writes only under a claim, compare-and-set on the version it read", async () => {
    const { a, b, store } = replicas();
    await expect(write(a, threadRecord("t1"))).rejects.toBeInstanceOf(StateUnavailableError);
    expect(await store.load("t1")).toBeUndefined();

    await a.claim("t1");
    const record = threadRecord("t1");
    await write(a, record);
    await a.update("t1", cursorAt(9));
    expect((await store.loadVersioned("t1"))?.version).toBe(2);
    await a.unclaim("t1");

    // B reads version 2, writes; a record A still holds from before is stale for A's next claim.
    await b.claim("t1");
    expect((await b.read("t1"))?.execution.pipelineSequence).toBe(9);
    await b.update("t1", cursorAt(10));
    await b.unclaim("t1");
    await a.claim("t1");
    await expect(write(a, record)).rejects.toThrow(/version|stale/i);
    expect((await store.load("t1"))?.execution.pipelineSequence).toBe(10);
    await a.unclaim("t1");
  });

  it("caches only claimed threads: an unclaimed one is read from the store each time", async () => {
    const { a, b } = replicas();
    await a.claim("t1");
    const mine = threadRecord("t1");
    a.hold("t1");
    await write(a, mine);
    expect(await a.read("t1")).toBe(mine);
    await a.unclaim("t1");
    expect(a.isLoaded("t1")).toBe(false);
    await b.claim("t1");
    await b.update("t1", cursorAt(42));
    await b.unclaim("t1");
    expect((await a.read("t1"))?.execution.pipelineSequence).toBe(42);
  });

  it("reports a claim that lapses (another replica took the thread) and fences every write after it", async () => {
    const { a, b, store } = replicas(300);
    await a.claim("t1");
    const record = threadRecord("t1");
    await write(a, record);
    const lapsed = a.claimLapsed("t1");
    expect(lapsed).toBeDefined();
    // The lease vanishes behind A's back (an operator, a failover): B takes the thread.
    const raw = createRedisConnection({ url: redis.url, logger: silentLogger });
    try {
      expect(await waitForRedisReady(raw, 5_000)).toBe(true);
      expect(await raw.del(store.leaseKey("t1"))).toBe(1);
    } finally {
      await closeRedisConnection(raw);
    }
    expect(await b.claim("t1")).toEqual({ claimed: true });
    const outcome = await Promise.race([lapsed!.then(() => "lapsed"), new Promise((resolve) => setTimeout(() => resolve("still held"), 2_000))]);
    expect(outcome).toBe("lapsed");
    await expect(a.update("t1", cursorAt(77))).rejects.toBeInstanceOf(StateUnavailableError);
    expect((await store.load("t1"))?.execution.pipelineSequence).toBe(3);
    await a.unclaim("t1");
    // A's release did not free B's lease.
    expect(await a.claim("t1")).toEqual({ claimed: false, heldBy: "replica-b" });
    await b.unclaim("t1");
  });

  it("keeps a claim alive past its TTL while the replica lives (renewed)", async () => {
    const { a, b } = replicas(300);
    await a.claim("t1");
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await b.claim("t1")).toEqual({ claimed: false, heldBy: "replica-a" });
    await a.unclaim("t1");
  });

  it("takes over the thread of a replica known to be gone, and only that replica's", async () => {
    const { a, b } = replicas(5_000);
    await a.claim("t1");
    expect(await b.claimFrom("t1", "replica-c")).toEqual({ claimed: false, heldBy: "replica-a" });
    expect(await b.claimFrom("t1", "replica-a")).toEqual({ claimed: true });
    await b.unclaim("t1");
    await a.unclaim("t1");
  });

  it("answers STATE_UNAVAILABLE for a claim while Redis is down", async () => {
    const { a } = replicas();
    await redis.kill();
    try {
      await expect(a.claim("t1")).rejects.toMatchObject({ code: "STATE_UNAVAILABLE", status: 503 });
    } finally {
      await redis.restart();
    }
  });
});

describe("thread repository over a store of its own", () => {
  it("always grants a claim; unclaim keeps a loaded thread loaded", async () => {
    const repository = new ThreadRepository({ store: new MemoryThreadStore(), logger: silentLogger });
    expect(await repository.claim("t1")).toEqual({ claimed: true });
    expect(await repository.claim("t1")).toEqual({ claimed: true });
    expect(repository.claimLapsed("t1")).toBeUndefined();
    const record = threadRecord("t1");
    repository.hold("t1");
    await write(repository, record);
    await repository.unclaim("t1");
    expect(await repository.read("t1")).toBe(record);
  });
});
