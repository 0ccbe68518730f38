// Thread state several replicas share, in Redis (or Valkey). One hash per thread holds the same text the file store
// writes and a version; every write is one Lua script that checks the version (and, when fenced, the thread's lease)
// and writes, so two replicas can never both act on one read. Leases say which replica runs a thread; their token
// names the owner, so a replica that finds a thread busy knows whom to ask (src/state/redis-relay.ts).
import { createHash, randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Redis } from "ioredis";
import {
  closeRedisConnection,
  createRedisConnection,
  redisReadiness,
  waitForRedisAttempt,
  type RedisConnectionOptions,
  type RedisReadiness,
} from "./redis-connection.js";
import { decodeRecordText, parseRecordText, serializeThreadRecord, stateUnavailable, threadIdOfText } from "./record-text.js";
import { threadFileStem } from "./thread-key.js";
import {
  LeaseLostError,
  StaleRecordError,
  StateUnavailableError,
  type LeaseInfo,
  type OwnedPage,
  type SharedThreadStore,
  type ThreadRecord,
  type VersionedThreadRecord,
} from "./thread-store.js";
import { SCRIPTS, type ScriptName } from "./redis-scripts.js";
import { activityOf, isAfter } from "./owned-threads.js";
import { assertStorable } from "./validate.js";

export { LeaseLostError, StaleRecordError };

export const DEFAULT_REDIS_PREFIX = "agui-gateway:";

/** Called once per store operation; `ok` is false only when Redis could not answer or held unusable data. */
export type StoreObserver = (op: string, seconds: number, ok: boolean) => void;

export type RedisThreadStoreOptions = (
  | { /** A connection from createRedisConnection; the caller closes it. */ client: Redis }
  | { /** The store opens (and close() closes) its own connection. */ connection: RedisConnectionOptions }
) & {
  /** Prepended to every key; default "agui-gateway:". */
  prefix?: string;
  observe?: StoreObserver;
  /** How long an operation waits for the very first connection; default 2000. */
  firstConnectWaitMs?: number;
};

const VERSION_TEXT = /^[1-9][0-9]{0,15}$/;
const SCAN_BATCH = 200;
const DEFAULT_FIRST_CONNECT_WAIT_MS = 2_000;

export class RedisThreadStore implements SharedThreadStore {
  readonly shared = true;
  readonly prefix: string;
  private readonly client: Redis;
  private readonly ownsClient: boolean;
  private readonly observe: StoreObserver | undefined;
  private readonly firstConnectWaitMs: number;

  constructor(options: RedisThreadStoreOptions) {
    if ("client" in options) {
      this.client = options.client;
      this.ownsClient = false;
    } else {
      this.client = createRedisConnection(options.connection);
      this.ownsClient = true;
    }
    this.prefix = options.prefix ?? DEFAULT_REDIS_PREFIX;
    this.observe = options.observe;
    this.firstConnectWaitMs = options.firstConnectWaitMs ?? DEFAULT_FIRST_CONNECT_WAIT_MS;
    // ioredis sends EVALSHA and falls back to EVAL when Redis lost its script cache (a restart, SCRIPT FLUSH).
    for (const [name, script] of Object.entries(SCRIPTS)) this.client.defineCommand(name, script);
  }

  /** `<prefix>thread:<stem>`: the same stem as the file store's file name. */
  threadKey(threadId: string): string {
    return `${this.prefix}thread:${threadFileStem(threadId)}`;
  }

  /** A sorted set per owner: thread ids scored by last activity (ms). An index only: the records decide. */
  ownerKey(owner: string): string {
    return `${this.prefix}owner:${createHash("sha256").update(owner, "utf8").digest("hex")}`;
  }

  leaseKey(threadId: string): string {
    return `${this.prefix}lease:${threadFileStem(threadId)}`;
  }

  readiness(): RedisReadiness {
    return redisReadiness(this.client);
  }

  /** Closes the connection when the store opened it. */
  async close(): Promise<void> {
    if (this.ownsClient) await closeRedisConnection(this.client);
  }

  async load(threadId: string): Promise<ThreadRecord | undefined> {
    return (await this.loadVersioned(threadId))?.record;
  }

  async loadVersioned(threadId: string): Promise<VersionedThreadRecord | undefined> {
    return this.timed("load", async () => {
      const [recordBytes, versionBytes] = await this.client.hmgetBuffer(this.threadKey(threadId), "record", "version");
      if (recordBytes == null && versionBytes == null) return undefined;
      if (recordBytes == null) throw stateUnavailable("the stored thread has a version but no record");
      const version = parseVersion(versionBytes?.toString("latin1"));
      return { record: parseRecordText(decodeRecordText(recordBytes, "the stored record"), threadId, "the stored record"), version };
    });
  }

  /** Last writer wins, like the file store: one script that writes over whatever version is stored. */
  async save(record: ThreadRecord): Promise<void> {
    await this.write(record, "*", undefined, "save");
  }

  async saveVersioned(record: ThreadRecord, expectedVersion: number, fence?: string): Promise<number> {
    if (!Number.isSafeInteger(expectedVersion) || expectedVersion < 0) {
      throw new RangeError(`expectedVersion must be an integer >= 0, got ${expectedVersion}`);
    }
    return this.write(record, String(expectedVersion), fence, "save_versioned");
  }

  async remove(threadId: string, fence?: string): Promise<void> {
    await this.timed("remove", async () => {
      const result = await this.script("aguiRemoveFenced", [this.threadKey(threadId), this.leaseKey(threadId)], [fence ?? ""]);
      if (result === -1) throw new LeaseLostError(`the lease on thread ${threadId} is no longer held by this token`);
    });
  }

  /** Ids are read from the stored records (a stem may be a hash); unreadable or foreign records are skipped. */
  async threadIds(): Promise<string[]> {
    return this.timed("thread_ids", async () => {
      const pattern = `${escapeGlob(this.prefix)}thread:*`;
      const ids: string[] = [];
      let cursor = "0";
      do {
        const [next, keys] = await this.client.scan(cursor, "MATCH", pattern, "COUNT", SCAN_BATCH);
        cursor = next;
        if (keys.length === 0) continue;
        const pipeline = this.client.pipeline();
        for (const key of keys) pipeline.hget(key, "record");
        const replies = (await pipeline.exec()) ?? [];
        keys.forEach((key, i) => {
          const [error, text] = replies[i] ?? [null, null];
          const threadId = error ? undefined : threadIdOfText(text);
          if (threadId !== undefined && this.threadKey(threadId) === key) ids.push(threadId);
        });
      } while (cursor !== "0");
      return [...new Set(ids)];
    });
  }

  /**
   * Reads the owner's index from the page's cursor down, checking each entry against its record: an entry whose
   * record is gone or belongs to someone else is dropped from the index, never listed; one that moved on since
   * (a newer score) is listed at its newer place only.
   */
  async ownedThreads(owner: string, page: OwnedPage): Promise<ThreadRecord[]> {
    const key = this.ownerKey(owner);
    const found: ThreadRecord[] = [];
    const max = page.after === undefined ? "+inf" : String(page.after.at);
    for (let offset = 0; found.length < page.limit; ) {
      const batch = await this.timed("owned_threads", () => this.client.zrevrangebyscore(key, max, "-inf", "WITHSCORES", "LIMIT", offset, page.limit + 16));
      if (batch.length === 0) break;
      offset += batch.length / 2;
      for (let i = 0; i < batch.length && found.length < page.limit; i += 2) {
        const threadId = batch[i]!;
        const position = { at: Number(batch[i + 1]), threadId };
        if (!isAfter(position, page.after)) continue;
        let record: ThreadRecord | undefined;
        try {
          record = await this.load(threadId);
        } catch {
          continue; // unreadable now: neither listed nor forgotten
        }
        if (record !== undefined && record.owner === owner && activityOf(record).at === position.at) {
          found.push(record);
        } else if (record === undefined || record.owner !== owner) {
          await this.timed("owned_threads", () => this.client.zrem(key, threadId));
          offset--; // the entries after it moved up by one
        }
      }
    }
    return found;
  }

  async acquireLease(threadId: string, ownerId: string, ttlMs: number): Promise<{ token: string } | { heldBy: string }> {
    if (typeof ownerId !== "string" || ownerId === "") throw new TypeError("ownerId must be a non-empty string");
    checkTtl(ttlMs);
    return this.timed("lease_acquire", async () => {
      const token = `${ownerId}/${randomUUID()}`;
      const reply = await this.script("aguiAcquireLease", [this.leaseKey(threadId)], [token, String(ttlMs)]);
      const [taken, value] = reply as [number, string];
      return taken === 1 ? { token } : { heldBy: ownerOfToken(String(value)) };
    });
  }

  async renewLease(threadId: string, token: string, ttlMs: number): Promise<boolean> {
    checkTtl(ttlMs);
    return this.timed("lease_renew", async () => {
      return (await this.script("aguiRenewLease", [this.leaseKey(threadId)], [token, String(ttlMs)])) === 1;
    });
  }

  async releaseLease(threadId: string, token: string): Promise<boolean> {
    return this.timed("lease_release", () => this.deleteLease(threadId, token));
  }

  /** Same compare-and-delete as releaseLease, named for its use: freeing a lease whose owner is known dead. */
  async breakLease(threadId: string, token: string): Promise<boolean> {
    return this.timed("lease_break", () => this.deleteLease(threadId, token));
  }

  async leaseHolder(threadId: string): Promise<string | undefined> {
    return (await this.readLease(threadId))?.ownerId;
  }

  async readLease(threadId: string): Promise<LeaseInfo | undefined> {
    return this.timed("lease_read", async () => {
      const reply = (await this.script("aguiReadLease", [this.leaseKey(threadId)], [])) as [string, number] | [];
      if (reply.length === 0) return undefined;
      const token = String(reply[0]);
      // PTTL is -1 for a lease somebody set without an expiry: report it as not expiring rather than expired.
      return { token, ownerId: ownerOfToken(token), remainingMs: reply[1] < 0 ? Number.POSITIVE_INFINITY : reply[1] };
    });
  }

  private async deleteLease(threadId: string, token: string): Promise<boolean> {
    return (await this.script("aguiDeleteLease", [this.leaseKey(threadId)], [token])) === 1;
  }

  private async write(record: ThreadRecord, expected: string, fence: string | undefined, op: string): Promise<number> {
    assertStorable(record);
    const text = serializeThreadRecord(record);
    const threadId = record.threadId;
    return this.timed(op, async () => {
      const keys = [this.threadKey(threadId), this.leaseKey(threadId)];
      const [status, value] = (await this.script("aguiSaveVersioned", keys, [expected, text, fence ?? ""])) as [number, number?];
      switch (status) {
        case 1:
          if (record.owner !== undefined) await this.client.zadd(this.ownerKey(record.owner), activityOf(record).at, threadId);
          return Number(value);
        case 0:
          throw new StaleRecordError(`thread ${threadId} is at version ${value}, not ${expected}`);
        case -1:
          throw new LeaseLostError(`the lease on thread ${threadId} is no longer held by this token`);
        default:
          throw stateUnavailable("the stored version is not a positive integer");
      }
    });
  }

  private script(name: ScriptName, keys: string[], args: string[]): Promise<unknown> {
    const call = (this.client as unknown as Record<ScriptName, (...params: string[]) => Promise<unknown>>)[name];
    return call.call(this.client, ...keys, ...args);
  }

  /** Reports each operation to `observe` and turns every Redis failure into StateUnavailableError. */
  private async timed<T>(op: string, work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    const report = (ok: boolean) => this.observe?.(op, (performance.now() - started) / 1000, ok);
    try {
      // A store used right after start-up waits for its first connection; once Redis was lost, nothing waits.
      if (redisReadiness(this.client) === "connecting") await waitForRedisAttempt(this.client, this.firstConnectWaitMs);
      const value = await work();
      report(true);
      return value;
    } catch (error) {
      // A lost CAS or lease is an answer, not a store failure.
      const answered = error instanceof StaleRecordError || error instanceof LeaseLostError;
      report(answered);
      if (answered || error instanceof StateUnavailableError) throw error;
      throw stateUnavailable(`redis ${op} failed (${error instanceof Error ? error.message : String(error)})`, error);
    }
  }
}

/** The owner id a lease token names: everything before its last "/" (the random part has none). */
export function ownerOfToken(token: string): string {
  const slash = token.lastIndexOf("/");
  return slash <= 0 ? token : token.slice(0, slash);
}

function parseVersion(text: string | undefined): number {
  const version = text !== undefined && VERSION_TEXT.test(text) ? Number(text) : Number.NaN;
  // A version past 2^53 could not be compared exactly, nor written back as its successor.
  if (!Number.isSafeInteger(version) || version >= Number.MAX_SAFE_INTEGER) throw stateUnavailable("the stored version is not a positive integer");
  return version;
}

function checkTtl(ttlMs: number): void {
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) throw new RangeError(`ttlMs must be a positive integer, got ${ttlMs}`);
}

/** SCAN's MATCH is a glob: a prefix with *, ?, [ or \ must match only itself. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}
