// Runs' SSE records in Redis, so a client whose reconnect lands on another replica gets the rest of its run too.
// One stream per run (`<prefix>replay:<thread stem>:<digest of run key and request>`); an entry per tick of the run,
// id `<first seq>-0`, holding that tick's records as one text (`r`) and their count (`n`), and an end marker (`end`)
// once the run ended; trimmed to what the run's own log keeps, expiring a while after the end. Transport only: never
// conversation storage, never read by anything but a reconnect.
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { closeRedisConnection, createRedisConnection, type RedisConnectionOptions } from "./redis-connection.js";
import { DEFAULT_REDIS_PREFIX } from "./redis-store.js";
import { threadFileStem } from "./thread-key.js";

/** What another replica's reconnect finds of a run. */
export interface SharedReplayRead {
  /** [seq, record] after the cursor, in order. */
  records: [number, string][];
  /** The oldest seq still kept (lastSeq + 1 when none is). */
  firstSeq: number;
  lastSeq: number;
  /** Set once the run ended: whether its terminal event is in. */
  ended: "complete" | "abandoned" | undefined;
  /** The newest entry this read saw: a tail goes on after it. */
  lastEntryId: string;
}

/** The writing side of one run's shared copy. */
export interface SharedReplayWriter {
  /** A tick's records (`count` of them, the first with seq `firstSeq`); `keptFrom`: the oldest seq the run still keeps. */
  append(firstSeq: number, text: string, count: number, keptFrom: number): void;
  heartbeat(): void;
  end(complete: boolean, lastSeq: number, retentionMs: number): void;
  /** A client of this replica owns the run (again): one that took it over elsewhere no longer does. */
  ownedHere(): void;
}

/** A reader following a run on another replica; stop() ends it. */
export interface SharedReplayTail {
  stop(): void;
}

/** While a run streams, its copy outlives a replica that died this long (refreshed with every batch and heartbeat). */
const LIVE_TTL_MS = 10 * 60_000;
/** A reader on another replica says it is there this often; the owner's grace waits while it is. */
const PRESENCE_TTL_MS = 3_000;
const TAIL_BLOCK_MS = 1_000;

export class RedisReplay {
  private readonly prefix: string;

  constructor(
    private readonly client: Redis,
    private readonly connection: RedisConnectionOptions,
    private readonly logger: Logger,
    prefix = DEFAULT_REDIS_PREFIX,
  ) {
    this.prefix = prefix;
  }

  /** One stream per run: the request's digest tells apart two runs under one id (a resume that reuses its run's id). */
  private key(threadId: string, idKey: string, digest: string): string {
    return `${this.prefix}replay:${threadFileStem(threadId)}:${createHash("sha256").update(`${idKey}\u0000${digest}`).digest("hex").slice(0, 32)}`;
  }

  /**
   * The run's shared copy, written in one pipeline per tick. A write that fails drops the copy (never a gap). Each
   * pipeline also asks whether a client took the run over on another replica: `takenElsewhere` is then called.
   */
  writer(threadId: string, idKey: string, digest: string, takenElsewhere: () => void = () => {}): SharedReplayWriter {
    const key = this.key(threadId, idKey, digest);
    const owner = `${key}:owner`;
    let batch: (string | number)[][] = [];
    let broken = false;
    let trimmedTo = 1;
    let appended = 0;
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      if (broken || batch.length === 0) return;
      const commands = batch;
      batch = [];
      const pipeline = this.client.pipeline();
      for (const command of commands) pipeline.call(...(command as [string, ...(string | number)[]]));
      pipeline.exists(owner);
      void pipeline.exec().then(
        (results) => {
          if (results?.some(([error]) => error)) return fail(results.find(([error]) => error)![0]);
          if (results?.at(-1)?.[1] === 1) takenElsewhere();
        },
        fail,
      );
    };
    const fail = (error: unknown) => {
      if (broken) return;
      broken = true;
      this.logger.warn({ err: error }, "a run's events could not be copied to Redis: a reconnect on another replica will be told to connect");
      void this.client.del(key).catch(() => undefined);
    };
    const queue = (command: (string | number)[]) => {
      if (broken) return;
      batch.push(command);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    };
    return {
      append: (firstSeq, text, count, keptFrom) => {
        queue(["xadd", key, `${firstSeq}-0`, "r", text, "n", count]);
        if (keptFrom > trimmedTo) {
          trimmedTo = keptFrom;
          queue(["xtrim", key, "MINID", `${keptFrom}-0`]);
        }
        if (++appended % 64 === 1) queue(["pexpire", key, LIVE_TTL_MS]);
      },
      heartbeat: () => queue(["pexpire", key, LIVE_TTL_MS]),
      end: (complete, lastSeq, retentionMs) => {
        queue(["xadd", key, `${lastSeq + 1}-0`, "end", complete ? "complete" : "abandoned"]);
        queue(["pexpire", key, Math.max(1, retentionMs)]);
      },
      ownedHere: () => queue(["del", owner]),
    };
  }

  /** The run's records after `afterSeq`, or undefined when nothing of the run is kept. One MULTI: one moment of the copy. */
  async read(threadId: string, idKey: string, digest: string, afterSeq: number): Promise<SharedReplayRead | undefined> {
    type Entries = [string, string[]][];
    const key = this.key(threadId, idKey, digest);
    const next = `${afterSeq + 1}-0`;
    const [[, first], [, containing], [, later], [, newest]] = (await this.client
      .multi()
      .xrange(key, "-", "+", "COUNT", 1)
      // The tick that holds the record after the cursor began at or before it; the ticks after begin after it.
      .xrevrange(key, next, "-", "COUNT", 1)
      .xrange(key, `(${next}`, "+")
      .xrevrange(key, "+", "-", "COUNT", 2)
      .exec()) as [[unknown, Entries], [unknown, Entries], [unknown, Entries], [unknown, Entries]];
    if (first.length === 0) return undefined;
    const read: SharedReplayRead = { records: [], firstSeq: seqOf(first[0]![0]), lastSeq: 0, ended: undefined, lastEntryId: newest[0]![0] };
    for (const [id, fields] of [...containing, ...later]) {
      const entry = entryOf(id, fields);
      if (entry.kind === "end") read.ended = entry.complete ? "complete" : "abandoned";
      else for (const record of entry.records) if (record[0] > afterSeq) read.records.push(record);
      read.lastEntryId = id;
    }
    const tick = newest.map(([id, fields]) => entryOf(id, fields)).find((entry) => entry.kind === "records");
    read.lastSeq = tick?.kind === "records" ? tick.firstSeq + tick.records.length - 1 : 0;
    if (entryOf(first[0]![0], first[0]![1]).kind === "end") read.firstSeq = read.lastSeq + 1;
    return read;
  }

  /**
   * Follows the run after `afterSeq` on a connection of its own (XREAD blocks it), telling whoever runs it that a
   * client still reads (and, for a reconnect, that this client owns the run now); ends at the end marker, when the
   * copy is gone, or on stop().
   */
  tail(
    threadId: string,
    idKey: string,
    digest: string,
    /** The last seq the reader has, and the entry its read ended at. */
    afterSeq: number,
    afterEntryId: string,
    listener: { record(text: string): void; end(complete: boolean): void },
    /** The reader took the run over (a reconnect): the replica that runs it lets its own client go. */
    owns = false,
  ): SharedReplayTail {
    const key = this.key(threadId, idKey, digest);
    const presence = `${key}:reading`;
    const owner = `${key}:owner`;
    const reader = createRedisConnection({ ...this.connection, name: "agui-gateway replay tail", commandTimeoutMs: TAIL_BLOCK_MS + 2_000 });
    let stopped = false;
    const finish = (complete: boolean) => {
      if (stopped) return;
      stopped = true;
      listener.end(complete);
      void closeRedisConnection(reader);
    };
    const loop = async () => {
      let last = afterEntryId;
      let next = afterSeq + 1;
      while (!stopped) {
        await this.client.set(presence, "1", "PX", PRESENCE_TTL_MS).catch(() => undefined);
        if (owns) await this.client.set(owner, "1", "PX", PRESENCE_TTL_MS).catch(() => undefined);
        const answer = (await reader.xread("BLOCK", TAIL_BLOCK_MS, "STREAMS", key, last).catch(() => "failed" as const)) as
          | [string, [string, string[]][]][]
          | null
          | "failed";
        if (stopped) return;
        // Not connected yet, or Redis away for a moment: ask again shortly rather than at once.
        if (answer === "failed") await new Promise((resolve) => setTimeout(resolve, 100));
        if (answer === null || answer === "failed") {
          if ((await this.client.exists(key).catch(() => 1)) === 0) return finish(false);
          continue;
        }
        for (const [id, fields] of answer[0]![1]) {
          const entry = entryOf(id, fields);
          if (entry.kind === "end") return finish(entry.complete);
          for (const [seq, record] of entry.records) {
            if (seq < next) continue;
            // Trimmed away before this reader got to them (it fell behind what the run keeps): no stream with a gap,
            // the client comes back with its cursor and is told the events are no longer kept.
            if (seq > next) return finish(false);
            listener.record(record);
            next += 1;
          }
          last = id;
        }
      }
    };
    void loop().catch(() => finish(false));
    return {
      stop: () => {
        if (stopped) return;
        stopped = true;
        void closeRedisConnection(reader);
      },
    };
  }

  /** A client on another replica reads the run now (its grace should wait). */
  async isRead(threadId: string, idKey: string, digest: string): Promise<boolean> {
    return (await this.client.exists(`${this.key(threadId, idKey, digest)}:reading`).catch(() => 0)) === 1;
  }
}

function seqOf(id: string): number {
  return Number(id.slice(0, id.indexOf("-")));
}

type Entry = { kind: "end"; complete: boolean } | { kind: "records"; firstSeq: number; records: [number, string][] };

/** A stream entry: a tick's records (each ends with its blank line, and holds none before that), or the end marker. */
function entryOf(id: string, fields: string[]): Entry {
  if (fields[0] === "end") return { kind: "end", complete: fields[1] === "complete" };
  const firstSeq = seqOf(id);
  const records = (fields[1] ?? "").split(/(?<=\n\n)/).filter((text) => text !== "");
  return { kind: "records", firstSeq, records: records.map((text, i): [number, string] => [firstSeq + i, text]) };
}
