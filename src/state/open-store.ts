// Which thread store a gateway runs on: the one an embedder passes, Redis for several replicas
// (--state-store), the file store on a state directory, or memory. Only Redis brings a relay between
// replicas, a readiness for /health and connections to close.
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "pino";
import { stateStoreObserver, type GatewayMetrics } from "../ops/metrics.js";
import { FileThreadStore } from "./file-store.js";
import { closeRedisConnection, createRedisConnection, redactRedisUrl, waitForRedisReady } from "./redis-connection.js";
import { RedisRelay } from "./redis-relay.js";
import { RedisReplay } from "./redis-replay.js";
import { RedisThreadStore } from "./redis-store.js";
import { MemoryThreadStore, type ThreadStore } from "./thread-store.js";
import { MemoryUserCounters, RedisUserCounters, type UserCounters } from "./user-counters.js";

export interface StateStoreOptions {
  store?: ThreadStore;
  /** redis:// or rediss:// */
  stateStore?: string;
  /** Wins over the URL's password; never logged. */
  redisPassword?: string;
  stateDir?: string;
  logger: Logger;
  metrics: GatewayMetrics;
}

export interface OpenedStateStore {
  store: ThreadStore;
  /** With Redis: this process's id in thread leases and on the relay. */
  replicaId?: string;
  relay?: RedisRelay;
  /** With Redis: runs' records for a reconnect that lands on another replica. */
  replay?: RedisReplay;
  /** Per-user limits' counters: shared by the replicas with Redis, this process's own otherwise. */
  counters: UserCounters;
  /** With Redis: for /health. */
  health?: () => { kind: string; status: string };
  close(): Promise<void>;
}

/** How long start-up waits for Redis before serving anyway (admissions answer STATE_UNAVAILABLE until it is up). */
const REDIS_START_WAIT_MS = 3_000;

export async function openStateStore(options: StateStoreOptions): Promise<OpenedStateStore> {
  if (options.store) return { store: options.store, counters: new MemoryUserCounters(), close: async () => undefined };
  if (options.stateStore === undefined) {
    const store = options.stateDir !== undefined ? new FileThreadStore({ dir: options.stateDir }) : new MemoryThreadStore();
    return { store, counters: new MemoryUserCounters(), close: async () => undefined };
  }
  const replicaId = `${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
  const connection = {
    url: options.stateStore,
    ...(options.redisPassword !== undefined && { password: options.redisPassword }),
    logger: options.logger,
  };
  const client = createRedisConnection({ ...connection, name: `agui-gateway ${replicaId}` });
  // A connected Redis can still not answer (stopped, overloaded): the last operation's outcome says so.
  let lastOkAt = 0;
  let lastFailedAt = 0;
  const record = stateStoreObserver(options.metrics);
  // A new connection starts with a clean slate.
  client.on("ready", () => (lastFailedAt = 0));
  const store = new RedisThreadStore({
    client,
    observe: (op, seconds, ok) => {
      record(op, seconds, ok);
      if (ok) lastOkAt = Date.now();
      else lastFailedAt = Date.now();
    },
  });
  const relay = new RedisRelay({ ...connection, ownerId: replicaId, publisher: client });
  const shownUrl = redactRedisUrl(options.stateStore);
  if (await waitForRedisReady(client, REDIS_START_WAIT_MS)) options.logger.info({ stateStore: shownUrl, replicaId }, "thread state in Redis");
  else options.logger.warn({ stateStore: shownUrl, replicaId }, "Redis is not reachable yet: runs are refused with STATE_UNAVAILABLE until it is");
  return {
    store,
    counters: new RedisUserCounters(client, store.prefix),
    replicaId,
    relay,
    replay: new RedisReplay(client, connection, options.logger, store.prefix),
    health: () => {
      const status = store.readiness();
      return { kind: "redis", status: status === "ready" && lastFailedAt > lastOkAt ? "failing" : status };
    },
    close: async () => {
      await relay.close();
      await closeRedisConnection(client);
    },
  };
}
