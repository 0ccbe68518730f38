// The shared store's own guarantees, on real redis-servers: compare-and-set, fencing by lease, lease lifetimes,
// passwords that never reach the logs, failing fast (not hanging) while Redis is gone, and the relay between replicas.
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import pino, { type Logger } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMetrics, metricsText, stateStoreObserver } from "../src/ops/metrics.js";
import { serializeThreadRecord } from "../src/state/record-text.js";
import {
  closeRedisConnection,
  createRedisConnection,
  redactRedisUrl,
  redisReadiness,
  waitForRedisReady,
} from "../src/state/redis-connection.js";
import { RedisRelay } from "../src/state/redis-relay.js";
import { LeaseLostError, RedisThreadStore, StaleRecordError } from "../src/state/redis-store.js";
import { StateUnavailableError, isSharedThreadStore } from "../src/state/thread-store.js";
import { silentLogger } from "./helpers/logger.js";
import { startRedis, type RedisServer } from "./helpers/redis.js";
import { threadRecord } from "./helpers/thread-record.js";

const PASSWORD = "s3cret-pa55word-that-must-not-leak";

let redis: RedisServer;
let secured: RedisServer;
const opened: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  [redis, secured] = await Promise.all([startRedis(), startRedis({ requirepass: PASSWORD })]);
});

afterAll(async () => {
  for (const item of opened.reverse()) await item.close();
  await Promise.all([redis.stop(), secured.stop()]);
});

/** A store with its own connection and a fresh prefix, closed in afterAll. */
async function newStore(options: { url?: string; password?: string; logger?: Logger; commandTimeoutMs?: number } = {}) {
  const store = new RedisThreadStore({
    connection: {
      url: options.url ?? redis.url,
      logger: options.logger ?? silentLogger,
      ...(options.password !== undefined && { password: options.password }),
      ...(options.commandTimeoutMs !== undefined && { commandTimeoutMs: options.commandTimeoutMs }),
      maxReconnectDelayMs: 200,
    },
    prefix: `test-${randomUUID()}:`,
  });
  opened.push(store);
  return store;
}

function capturedLogger(): { logger: Logger; text: () => string } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: pino({ level: "debug" }, sink), text: () => lines.join("") };
}

async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("RedisThreadStore versions", () => {
  it("is a shared store; the first write is version 1 and each write adds one", async () => {
    const store = await newStore();
    expect(isSharedThreadStore(store)).toBe(true);
    expect(await store.loadVersioned("t")).toBeUndefined();
    expect(await store.saveVersioned(threadRecord("t"), 0)).toBe(1);
    expect(await store.saveVersioned(threadRecord("t", { cwd: "/w2" }), 1)).toBe(2);
    await store.save(threadRecord("t", { cwd: "/w3" }));
    expect(await store.loadVersioned("t")).toEqual({ record: threadRecord("t", { cwd: "/w3" }), version: 3 });
  });

  it("lets exactly one of two writers with the same expected version win", async () => {
    const store = await newStore();
    // Another replica: its own connection, the same keys.
    const replica = new RedisThreadStore({ connection: { url: redis.url, logger: silentLogger }, prefix: store.prefix });
    opened.push(replica);
    await store.saveVersioned(threadRecord("race"), 0);
    const a = threadRecord("race", { cwd: "/from-a" });
    const b = threadRecord("race", { cwd: "/from-b" });
    const results = await Promise.allSettled([store.saveVersioned(a, 1), replica.saveVersioned(b, 1)]);
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(won).toEqual([{ status: "fulfilled", value: 2 }]);
    expect(lost[0]!.reason).toBeInstanceOf(StaleRecordError);
    const winner = results[0]!.status === "fulfilled" ? a : b;
    expect(await store.loadVersioned("race")).toEqual({ record: winner, version: 2 });
  });

  it("refuses to create a record that exists, and a stale version, leaving the record as it was", async () => {
    const store = await newStore();
    await store.saveVersioned(threadRecord("t"), 0);
    await expect(store.saveVersioned(threadRecord("t", { cwd: "/x" }), 0)).rejects.toBeInstanceOf(StaleRecordError);
    await store.saveVersioned(threadRecord("t", { cwd: "/y" }), 1);
    await expect(store.saveVersioned(threadRecord("t", { cwd: "/x" }), 1)).rejects.toThrow(/version 2, not 1/);
    expect(await store.loadVersioned("t")).toEqual({ record: threadRecord("t", { cwd: "/y" }), version: 2 });
  });

  it("refuses secrets on the versioned path too, before Redis sees them", async () => {
    const store = await newStore();
    const r = threadRecord("secret");
    Object.assign(r.execution.pending["input-1"]!.value, { llmApiKey: "sk-test-secret" });
    await expect(store.saveVersioned(r, 0)).rejects.toThrow(/llmApiKey/);
    expect(await store.loadVersioned("secret")).toBeUndefined();
  });

  it("makes a thread with an unreadable version unavailable", async () => {
    const store = await newStore();
    const text = serializeThreadRecord(threadRecord("v"));
    const client = createRedisConnection({ url: redis.url, logger: silentLogger });
    opened.push({ close: () => closeRedisConnection(client) });
    await waitForRedisReady(client, 5_000);
    for (const version of ["0", "1.5", "x", "-1"]) {
      await client.hset(store.threadKey("v"), "record", text, "version", version);
      await expect(store.load("v")).rejects.toBeInstanceOf(StateUnavailableError);
      await expect(store.saveVersioned(threadRecord("v"), 1)).rejects.toBeInstanceOf(StateUnavailableError);
    }
    await client.del(store.threadKey("v"));
    await client.hset(store.threadKey("v"), "record", text);
    await expect(store.load("v")).rejects.toThrow(/version/);
    await client.del(store.threadKey("v"));
    await client.set(store.threadKey("v"), "a string, not a hash");
    await expect(store.load("v")).rejects.toBeInstanceOf(StateUnavailableError);
  });

  it("lists only its own prefix's threads, even when the prefix has glob characters", async () => {
    const client = createRedisConnection({ url: redis.url, logger: silentLogger });
    opened.push({ close: () => closeRedisConnection(client) });
    await waitForRedisReady(client, 5_000);
    const base = randomUUID();
    const globby = new RedisThreadStore({ client, prefix: `${base}*[a]?:` });
    const plain = new RedisThreadStore({ client, prefix: `${base}xax:` });
    await globby.save(threadRecord("mine"));
    await plain.save(threadRecord("theirs"));
    expect(await globby.threadIds()).toEqual(["mine"]);
    expect(await plain.threadIds()).toEqual(["theirs"]);
  });
});

describe("RedisThreadStore leases", () => {
  it("gives a thread to one owner at a time and names the holder to the others", async () => {
    const store = await newStore();
    const first = await store.acquireLease("t", "replica-a", 10_000);
    expect(first).toEqual({ token: expect.stringMatching(/^replica-a\//) });
    expect(await store.acquireLease("t", "replica-b", 10_000)).toEqual({ heldBy: "replica-a" });
    expect(await store.acquireLease("t", "replica-a", 10_000)).toEqual({ heldBy: "replica-a" });
    expect(await store.leaseHolder("t")).toBe("replica-a");
    expect(await store.leaseHolder("other-thread")).toBeUndefined();
    // Owner ids may contain "/": the random part after the last one never does.
    expect(await store.acquireLease("u", "pod/ns/replica-c", 10_000)).toEqual({ token: expect.any(String) });
    expect(await store.leaseHolder("u")).toBe("pod/ns/replica-c");
  });

  it("expires after its TTL unless renewed", async () => {
    const store = await newStore();
    const lease = await store.acquireLease("t", "replica-a", 300);
    if (!("token" in lease)) throw new Error("expected the lease");
    expect((await store.readLease("t"))?.remainingMs).toBeLessThanOrEqual(300);
    await eventually(async () => (await store.leaseHolder("t")) === undefined, 3_000);
    expect(await store.renewLease("t", lease.token, 10_000)).toBe(false);
    expect(await store.acquireLease("t", "replica-b", 10_000)).toEqual({ token: expect.stringMatching(/^replica-b\//) });
  });

  it("renews and releases only for the holder's token", async () => {
    const store = await newStore();
    const lease = await store.acquireLease("t", "replica-a", 500);
    if (!("token" in lease)) throw new Error("expected the lease");
    const forged = `replica-a/${randomUUID()}`;
    expect(await store.renewLease("t", forged, 60_000)).toBe(false);
    expect(await store.releaseLease("t", forged)).toBe(false);
    expect(await store.renewLease("t", lease.token, 60_000)).toBe(true);
    expect((await store.readLease("t"))?.remainingMs).toBeGreaterThan(30_000);
    expect(await store.releaseLease("t", lease.token)).toBe(true);
    expect(await store.leaseHolder("t")).toBeUndefined();
    expect(await store.releaseLease("t", lease.token)).toBe(false);
    expect(await store.renewLease("t", lease.token, 60_000)).toBe(false);
  });

  it("breaks a dead owner's lease only with the token it read", async () => {
    const store = await newStore();
    await store.acquireLease("t", "dead-replica", 60_000);
    const seen = await store.readLease("t");
    expect(seen).toMatchObject({ ownerId: "dead-replica", token: expect.stringMatching(/^dead-replica\//) });
    expect(await store.breakLease("t", `dead-replica/${randomUUID()}`)).toBe(false);
    expect(await store.breakLease("t", seen!.token)).toBe(true);
    expect(await store.acquireLease("t", "replica-b", 60_000)).toEqual({ token: expect.any(String) });
  });

  it("fences writes: a stale token fails with LeaseLostError and leaves the record unchanged", async () => {
    const store = await newStore();
    const old = await store.acquireLease("t", "replica-a", 60_000);
    if (!("token" in old)) throw new Error("expected the lease");
    expect(await store.saveVersioned(threadRecord("t"), 0, old.token)).toBe(1);
    // replica-a stalls; its lease is broken and replica-b takes the thread over.
    await store.breakLease("t", old.token);
    const current = await store.acquireLease("t", "replica-b", 60_000);
    if (!("token" in current)) throw new Error("expected the lease");
    const before = await store.loadVersioned("t");
    await expect(store.saveVersioned(threadRecord("t", { cwd: "/stale" }), 1, old.token)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.remove("t", old.token)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await store.loadVersioned("t")).toEqual(before);
    expect(await store.saveVersioned(threadRecord("t", { cwd: "/new-owner" }), 1, current.token)).toBe(2);
    // With no lease at all, a fenced write fails the same way.
    await store.releaseLease("t", current.token);
    await expect(store.saveVersioned(threadRecord("t"), 2, current.token)).rejects.toBeInstanceOf(LeaseLostError);
    await store.remove("t");
    expect(await store.load("t")).toBeUndefined();
  });
});

describe("Redis connection", () => {
  it("authenticates with the password in the URL or in the option (the option wins)", async () => {
    const fromUrl = await newStore({ url: `redis://:${encodeURIComponent(PASSWORD)}@127.0.0.1:${secured.port}` });
    const fromOption = await newStore({ url: secured.url, password: PASSWORD });
    const optionWins = await newStore({ url: `redis://:wrong@127.0.0.1:${secured.port}`, password: PASSWORD });
    for (const store of [fromUrl, fromOption, optionWins]) {
      await eventually(() => store.readiness() === "ready");
      await store.save(threadRecord("t"));
      expect(await store.load("t")).toEqual(threadRecord("t"));
    }
    const without = await newStore({ url: secured.url });
    await expect(without.load("t")).rejects.toBeInstanceOf(StateUnavailableError);
    expect(without.readiness()).not.toBe("ready");
  });

  it("never logs the password, not even when it is refused", async () => {
    const { logger, text } = capturedLogger();
    const wrong = "wrong-pa55word-also-secret";
    const refused = await newStore({ url: `redis://user:${wrong}@127.0.0.1:${secured.port}`, logger });
    const accepted = await newStore({ url: `redis://:${PASSWORD}@127.0.0.1:${secured.port}`, logger });
    await expect(refused.load("t")).rejects.toBeInstanceOf(StateUnavailableError);
    await eventually(() => accepted.readiness() === "ready");
    await eventually(() => /redis connection error/.test(text()));
    await refused.close();
    await accepted.close();
    const logged = text();
    expect(logged).toContain("redis://user:***@127.0.0.1");
    expect(logged).not.toContain(PASSWORD);
    expect(logged).not.toContain(wrong);
  });

  it("redacts URLs for logs", () => {
    expect(redactRedisUrl("redis://:pw@host:6380/2")).toBe("redis://:***@host:6380/2");
    expect(redactRedisUrl("rediss://user:pw@host")).toBe("rediss://user:***@host");
    expect(redactRedisUrl("redis://user@host?password=pw")).toBe("redis://user@host");
    expect(redactRedisUrl("redis://host:6379")).toBe("redis://host:6379");
    expect(redactRedisUrl("::not a url pw")).toBe("<invalid redis url>");
  });

  it("refuses URLs that are not redis:// or rediss://", () => {
    expect(() => createRedisConnection({ url: "http://:pw@host", logger: silentLogger })).toThrow(/redis:\/\/ or rediss:\/\/ URL: http:\/\/:\*\*\*@host/);
  });
});

describe("RedisThreadStore when Redis goes away", () => {
  it("fails fast with StateUnavailableError while Redis is down, then works again after a restart", async () => {
    const server = await startRedis();
    opened.push({ close: () => server.stop() });
    const seen: Array<[string, boolean]> = [];
    const store = new RedisThreadStore({
      connection: { url: server.url, logger: silentLogger, maxReconnectDelayMs: 100 },
      observe: (op, _seconds, ok) => void seen.push([op, ok]),
    });
    opened.push(store);
    await store.save(threadRecord("t"));
    expect(store.readiness()).toBe("ready");

    // Killed with writes in flight: every one settles, none hangs.
    const started = Date.now();
    const inFlight = Array.from({ length: 50 }, (_, i) => store.save(threadRecord("t", { cwd: `/w${i}` })));
    // Settled from the start: a save that fails while the kill is awaited is not an unhandled rejection.
    const outcomes = Promise.allSettled(inFlight);
    await server.kill();
    for (const outcome of await outcomes) if (outcome.status === "rejected") expect(outcome.reason).toBeInstanceOf(StateUnavailableError);
    await expect(store.load("t")).rejects.toBeInstanceOf(StateUnavailableError);
    await expect(store.saveVersioned(threadRecord("t"), 1)).rejects.toBeInstanceOf(StateUnavailableError);
    await expect(store.acquireLease("t", "replica-a", 1_000)).rejects.toBeInstanceOf(StateUnavailableError);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(store.readiness()).toBe("down");
    expect(seen).toContainEqual(["load", false]);

    await server.restart();
    await eventually(() => store.readiness() === "ready", 5_000);
    // The restarted server kept nothing (no persistence): the same store object writes afresh.
    expect(await store.loadVersioned("t")).toBeUndefined();
    expect(await store.saveVersioned(threadRecord("t"), 0)).toBe(1);
    expect(await store.load("t")).toEqual(threadRecord("t"));
  });

  it("times out commands to a server that stopped answering, and recovers when it answers again", async () => {
    const server = await startRedis();
    opened.push({ close: () => server.stop() });
    const store = new RedisThreadStore({ connection: { url: server.url, logger: silentLogger, commandTimeoutMs: 300 } });
    opened.push(store);
    await store.save(threadRecord("t"));
    server.pause();
    try {
      const started = Date.now();
      await expect(store.load("t")).rejects.toBeInstanceOf(StateUnavailableError);
      await expect(store.saveVersioned(threadRecord("t"), 1)).rejects.toThrow(/timed out/);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      server.resume();
    }
    await eventually(async () => (await store.load("t").catch(() => undefined)) !== undefined);
    // The timed-out write was already on the wire and lands once the server wakes: a failed write's outcome is
    // unknown, and the version is how a caller finds out (reload before retrying).
    expect(await store.loadVersioned("t")).toEqual({ record: threadRecord("t"), version: 2 });
  });

  it("feeds the state_store metrics through the observe hook", async () => {
    const metrics = createMetrics();
    const store = new RedisThreadStore({
      connection: { url: redis.url, logger: silentLogger },
      prefix: `test-${randomUUID()}:`,
      observe: stateStoreObserver(metrics),
    });
    opened.push(store);
    await eventually(() => store.readiness() === "ready");
    await store.save(threadRecord("t"));
    await store.load("t");
    await expect(store.saveVersioned(threadRecord("t"), 7)).rejects.toBeInstanceOf(StaleRecordError);
    const unreachable = new RedisThreadStore({
      connection: { url: "redis://127.0.0.1:1", logger: silentLogger },
      observe: stateStoreObserver(metrics),
    });
    opened.push(unreachable);
    await expect(unreachable.load("t")).rejects.toBeInstanceOf(StateUnavailableError);
    const { body } = await metricsText(metrics);
    expect(body).toMatch(/^agui_gateway_state_store_latency_seconds_count\{op="load"\} 2$/m);
    expect(body).toMatch(/^agui_gateway_state_store_latency_seconds_count\{op="save"\} 1$/m);
    // A lost compare-and-set is an answer, not a store error.
    expect(body).not.toMatch(/state_store_errors_total\{op="save_versioned"\}/);
    expect(body).toMatch(/^agui_gateway_state_store_errors_total\{op="load"\} 1$/m);
  });
});

describe("RedisRelay", () => {
  function relay(ownerId: string, logger: Logger = silentLogger, prefix = "relay-test:"): RedisRelay {
    const r = new RedisRelay({ url: redis.url, logger, ownerId, prefix });
    opened.push(r);
    return r;
  }

  it("carries a request to the owner and its reply back", async () => {
    const a = relay("replica-a");
    const b = relay("replica-b");
    b.onRequest("cancel", async (payload) => ({ cancelled: (payload as { threadId: string }).threadId, by: "replica-b" }));
    await Promise.all([a.whenSubscribed(), b.whenSubscribed()]);
    expect(await a.request("replica-b", "cancel", { threadId: "t-1" }, 2_000)).toEqual({
      answered: true,
      reply: { cancelled: "t-1", by: "replica-b" },
    });
    // Both ways, concurrently.
    a.onRequest("ping", async (payload) => payload);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => b.request("replica-a", "ping", i, 2_000)));
    expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => ({ answered: true, reply: i })));
  });

  it("answers at once when nobody listens for that owner", async () => {
    const a = relay("replica-a2");
    await a.whenSubscribed();
    const started = Date.now();
    expect(await a.request("replica-gone", "cancel", {}, 5_000)).toEqual({ answered: false, reason: "no-subscriber" });
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("gives up after the timeout, and says when the owner has no handler or its handler failed", async () => {
    const a = relay("replica-a3");
    const b = relay("replica-b3");
    b.onRequest("slow", () => new Promise((resolve) => setTimeout(() => resolve("late"), 1_000)));
    b.onRequest("broken", async () => {
      throw new Error("handler bug");
    });
    await Promise.all([a.whenSubscribed(), b.whenSubscribed()]);
    const started = Date.now();
    expect(await a.request("replica-b3", "slow", null, 200)).toEqual({ answered: false, reason: "timeout" });
    expect(Date.now() - started).toBeLessThan(900);
    expect(await a.request("replica-b3", "unknown-kind", null, 2_000)).toEqual({ answered: false, reason: "no-handler" });
    expect(await a.request("replica-b3", "broken", null, 2_000)).toEqual({ answered: false, reason: "handler-failed" });
  });

  it("logs and ignores malformed messages, and keeps answering", async () => {
    const { logger, text } = capturedLogger();
    const a = relay("replica-a4", logger);
    const b = relay("replica-b4", logger);
    b.onRequest("echo", async (payload) => payload);
    await Promise.all([a.whenSubscribed(), b.whenSubscribed()]);
    const client = createRedisConnection({ url: redis.url, logger: silentLogger });
    opened.push({ close: () => closeRedisConnection(client) });
    await waitForRedisReady(client, 5_000);
    const garbage = [
      "{not json",
      "[]",
      "null",
      JSON.stringify({ type: "request", kind: "echo", from: "x" }),
      JSON.stringify({ type: "request", id: "1", kind: "echo" }),
      JSON.stringify({ type: "reply", id: "1" }),
      JSON.stringify({ type: "other", id: "1" }),
      "x".repeat((1 << 20) + 1),
    ];
    for (const message of garbage) {
      await client.publish("relay-test:replica:replica-b4", message);
      await client.publish("relay-test:reply:replica-a4", message);
    }
    // A reply nobody asked for is dropped quietly.
    await client.publish("relay-test:reply:replica-a4", JSON.stringify({ type: "reply", id: "unknown", ok: true, reply: 1 }));
    expect(await a.request("replica-b4", "echo", { still: "working" }, 2_000)).toEqual({ answered: true, reply: { still: "working" } });
    expect(text()).toContain("relay ignored a malformed message");
  });

  it("ends pending requests when closed", async () => {
    const a = new RedisRelay({ url: redis.url, logger: silentLogger, ownerId: "replica-a5", prefix: "relay-test:" });
    const b = relay("replica-b5");
    b.onRequest("hang", () => new Promise(() => undefined));
    await Promise.all([a.whenSubscribed(), b.whenSubscribed()]);
    const pending = a.request("replica-b5", "hang", null, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await a.close();
    expect(await pending).toEqual({ answered: false, reason: "closed" });
    expect(await a.request("replica-b5", "hang", null, 10_000)).toEqual({ answered: false, reason: "closed" });
  });

  it("reports readiness through the connection", async () => {
    const client = createRedisConnection({ url: redis.url, logger: silentLogger });
    opened.push({ close: () => closeRedisConnection(client) });
    expect(redisReadiness(client)).toBe("connecting");
    expect(await waitForRedisReady(client, 5_000)).toBe(true);
    expect(redisReadiness(client)).toBe("ready");
  });
});
