// A run's stream, apart from the connection that asked for it: the encoder writes the run's records into its
// replay log, and connections read the log. The connection that owns the run (the POST / that started it, or a
// reconnect that took it over) paces it; when the owner goes away the run is stopped, at once or once the
// reconnect grace has passed without a new owner. Other readers (observers) follow without pacing it.
import type { ServerResponse } from "node:http";
import type { Observable } from "rxjs";
import type { AguiOutput } from "../../operators/index.js";
import type { FlowGate } from "../a2a/index.js";
import { ReplayLog, type LogListener, type ReplayBounds, DEFAULT_REPLAY_BOUNDS } from "./replay-log.js";
import { encodeInto, type EncodeOptions, type RecordSink, type RecordTarget } from "./sse.js";
import type { RedisReplay, SharedReplayWriter } from "../state/redis-replay.js";

interface Reader {
  readonly response: RecordTarget;
  unfollow(): void;
}

/** What a feed is of: a run (the request that started it, by its body's digest) or an observation. */
export interface FeedOrigin {
  /** The execution the run belongs to (an observation of another execution does not read it). */
  executionId: string;
  /** sha256 of the request that started the run; absent for an observation. */
  digest?: string;
}

export class RunFeed implements FlowGate {
  private owner: Reader | undefined;
  private graceTimer: NodeJS.Timeout | undefined;
  private encoding: { unsubscribe(): void } | undefined;
  /**
   * What the run reads upstream by: its owner's socket; while it has none, only a turn of the event loop per upstream
   * chunk, so a run nobody reads cannot starve the requests (a reconnect among them) of the same process.
   */
  get gate(): FlowGate {
    return this;
  }

  ready(): Promise<void> | void {
    return this.owner ? this.owner.response.gate.ready() : new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** A client took the run over on another replica (through the shared store). */
  private ownedElsewhere = false;

  constructor(
    readonly log: ReplayLog,
    private readonly graceMs: number,
    readonly origin: FeedOrigin,
    /** The run's copy in the shared store, and whether a client on another replica reads it: the grace waits for it. */
    private readonly shared?: { mirror: SharedReplayWriter; readElsewhere(): Promise<boolean> },
  ) {}

  get executionId(): string {
    return this.origin.executionId;
  }

  /** Encodes the run into the log (records with ids); `onEnd` learns whether its terminal event went in. */
  start(events: (gate: FlowGate) => Observable<AguiOutput>, options: EncodeOptions, onEnd: (complete: boolean) => void = () => {}): void {
    this.encoding = encodeInto(events(this.gate), new LogSink(this.log, onEnd), options, this.log.key);
  }

  /** `response` owns the run from now on, from the record after `afterSeq` (checked by the caller with log.after). */
  own(response: RecordTarget, afterSeq: number): void {
    clearTimeout(this.graceTimer);
    this.graceTimer = undefined;
    const previous = this.owner;
    const reader = read(this.log, response, afterSeq, undefined);
    this.owner = reader;
    this.ownedElsewhere = false;
    this.shared?.mirror.ownedHere();
    // A client that reconnected is done with its old connection, whether or not the gateway had noticed it go.
    previous?.response.end();
    // A client that hung up while its request was being decided is gone already: its 'close' will not come again.
    if (gone(response.res)) this.disowned(reader);
    else response.res.on("close", () => this.disowned(reader));
  }

  /** A client that lost its stream comes back: it owns the run while it is live, or reads the rest of an ended one. */
  rejoin(response: RecordTarget, afterSeq: number): void {
    if (this.log.ended) this.follow(response, afterSeq);
    else this.own(response, afterSeq);
  }

  /** `response` reads along from the record after `afterSeq`, without pacing the run; one that falls behind the log's bytes is cut. */
  follow(response: RecordTarget, afterSeq: number): void {
    read(this.log, response, afterSeq, this.log.bounds.maxBytes);
  }

  /** No owner: the run is in its reconnect grace. */
  get detached(): boolean {
    return this.owner === undefined && !this.log.ended;
  }

  /** A reconnect on another replica took the run over: this replica's client is let go, the run goes on for that one. */
  takenElsewhere(): void {
    if (!this.owner || this.log.ended) return;
    this.ownedElsewhere = true;
    this.owner.response.end();
  }

  private disowned(reader: Reader): void {
    if (this.owner !== reader) return;
    this.owner = undefined;
    if (this.log.ended) return;
    if (this.graceMs <= 0 && !this.ownedElsewhere) return this.stop();
    this.waitForOwner();
  }

  /** Until a client owns the run again here, or none reads it on another replica once the grace (at least 1 s) is over. */
  private waitForOwner(): void {
    this.graceTimer = setTimeout(
      () => {
        void (this.shared?.readElsewhere() ?? Promise.resolve(false)).then((read) => {
          if (this.owner || this.log.ended) return;
          if (read) this.waitForOwner();
          else this.stop();
        });
      },
      this.ownedElsewhere ? Math.max(this.graceMs, 1_000) : this.graceMs,
    );
  }

  /** The run is stopped as a client disconnect stops it (src/runs: its task cancelled unless parked). */
  private stop(): void {
    this.encoding?.unsubscribe();
    this.log.end(false);
  }
}

/** The client's socket is closed (its 'close' event is behind us). */
function gone(res: ServerResponse): boolean {
  return res.destroyed || res.closed || res.socket === null || res.socket.destroyed;
}

/** A run's encoded records into its log; `onEnd` learns whether its terminal event went in. */
class LogSink implements RecordSink {
  constructor(
    private readonly log: ReplayLog,
    private readonly onEnd: (complete: boolean) => void,
  ) {}

  record(record: string | Uint8Array): void {
    this.log.append(record as string);
  }

  heartbeat(): void {
    this.log.heartbeat();
  }

  end(complete: boolean): void {
    this.log.end(complete);
    this.onEnd(complete);
  }
}

const NOTHING_TO_UNFOLLOW = () => {};

/** The log's records after `afterSeq` on the response, then the live ones, then its end. */
function read(log: ReplayLog, response: RecordTarget, afterSeq: number, maxBacklog: number | undefined): Reader {
  const replay = log.after(afterSeq);
  // The records asked for are gone (checked by the caller, but an await may have come between): no stream with a gap.
  if ("refused" in replay || gone(response.res)) {
    response.end();
    return { response, unfollow: NOTHING_TO_UNFOLLOW };
  }
  for (const record of replay.records) response.write(record);
  const reader = new LogReader(response, maxBacklog);
  reader.unfollow = log.follow(reader);
  response.res.on("close", reader.unfollow);
  return reader;
}

/** A response reading a log along. A class: an idle stream holds one for as long as it is open. */
class LogReader implements LogListener, Reader {
  unfollow: () => void = NOTHING_TO_UNFOLLOW;

  constructor(
    readonly response: RecordTarget,
    private readonly maxBacklog: number | undefined,
  ) {}

  record(records: string | Uint8Array): void {
    this.response.write(records);
    // A reader that does not pace the run may not hold more than the log does: it can come back with its cursor.
    if (this.maxBacklog !== undefined && this.response.backlog > this.maxBacklog) this.response.res.destroy();
  }

  heartbeat(): void {
    this.response.heartbeat();
  }

  end(): void {
    this.response.end();
  }
}

/** A reconnect's answer from the shared store: where its records are, or why there are none. */
export type SharedRejoin = { refused: "future" | "expired" } | { follow(response: RecordTarget): void };

/**
 * The feeds of this process, by thread and event-id key (a resume that reuses its run's id makes a second feed
 * under the same key: the latest answers a lookup by key, the request's digest picks either); each dropped
 * `retentionMs` after its run ended, or sooner when the ended runs' records pass their budget.
 */
export class RunFeeds {
  private readonly feeds = new Map<string, RunFeed[]>();
  /** Ended runs still kept, oldest first, and their bytes. */
  private readonly ended = new Map<RunFeed, () => void>();
  private endedBytes = 0;
  private observations = 0;

  constructor(
    readonly bounds: ReplayBounds = DEFAULT_REPLAY_BOUNDS,
    /** --reconnect-grace: how long a run whose owner went away waits for a reconnect. */
    readonly graceMs = 0,
    /** With a shared state store: runs' records copied there, for a reconnect that lands on another replica. */
    private readonly shared?: RedisReplay,
  ) {}

  /** A new run's feed. */
  open(threadId: string, idKey: string, origin: Required<FeedOrigin>): RunFeed {
    const shared = this.shared;
    let feed: RunFeed | undefined;
    feed = this.add(feedId(threadId, idKey), idKey, origin, shared && {
      mirror: shared.writer(threadId, idKey, origin.digest, () => feed?.takenElsewhere()),
      readElsewhere: () => shared.isRead(threadId, idKey, origin.digest),
    });
    return feed;
  }

  /** An observation rebuilt from the kernel: a stream of its own, keyed `<runKey>#<n>` (this replica only). */
  openObservation(threadId: string, runKey: string, executionId: string): RunFeed {
    const idKey = `${runKey}#${++this.observations}`;
    return this.add(observationId(threadId, idKey), idKey, { executionId });
  }

  /** The latest feed under the key; with `digest`, the one its request started. */
  get(threadId: string, idKey: string, digest?: string): RunFeed | undefined {
    const feeds = this.feeds.get(feedId(threadId, idKey));
    return digest === undefined ? feeds?.at(-1) : feeds?.findLast((feed) => feed.origin.digest === digest);
  }

  /** Feeds kept (runs and observations, live or ended). */
  get size(): number {
    let n = 0;
    for (const feeds of this.feeds.values()) n += feeds.length;
    return n;
  }

  getObservation(threadId: string, idKey: string): RunFeed | undefined {
    return this.feeds.get(observationId(threadId, idKey))?.at(-1);
  }

  /**
   * A run this replica does not stream, from the shared store (`digest`: of the request that started it): undefined
   * without one or when nothing of the run is kept. A cursor a little ahead of the copy waits for it (the owner
   * copies once per tick, after the socket write). `owns`: a reconnect, which takes the run over from the client the
   * running replica has.
   */
  async fromShared(threadId: string, idKey: string, digest: string, afterSeq: number, owns = false): Promise<SharedRejoin | undefined> {
    const shared = this.shared;
    if (!shared) return undefined;
    let read = await shared.read(threadId, idKey, digest, afterSeq);
    for (let waited = 0; read && !read.ended && afterSeq > read.lastSeq && waited < SHARED_LAG_WAIT_MS; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      read = await shared.read(threadId, idKey, digest, afterSeq);
    }
    if (!read || read.ended === "abandoned" || afterSeq < read.firstSeq - 1) return read ? { refused: "expired" } : undefined;
    if (afterSeq > read.lastSeq) return { refused: "future" };
    const { records, ended, lastEntryId } = read;
    // The tail goes on from what this reader was given, whatever the copy holds by then.
    const given = records.at(-1)?.[0] ?? afterSeq;
    const maxBacklog = this.bounds.maxBytes;
    return {
      follow: (response) => {
        if (gone(response.res)) return response.end();
        for (const [, text] of records) response.write(text);
        if (ended) return response.end();
        const tail = shared.tail(
          threadId,
          idKey,
          digest,
          given,
          lastEntryId,
          {
            record: (text) => {
              response.write(text);
              if (response.backlog > maxBacklog) response.res.destroy();
            },
            end: () => response.end(),
          },
          owns,
        );
        response.res.on("close", () => tail.stop());
      },
    };
  }

  private add(id: string, idKey: string, origin: FeedOrigin, shared?: { mirror: SharedReplayWriter; readElsewhere: () => Promise<boolean> }): RunFeed {
    const log = new ReplayLog(idKey, this.bounds, (settled) => this.settled(id, feed, settled), shared?.mirror);
    const feed = new RunFeed(log, this.graceMs, origin, shared);
    const feeds = this.feeds.get(id) ?? [];
    feeds.push(feed);
    this.feeds.set(id, feeds);
    return feed;
  }

  /** An ended run's records stay for the retention, within the budget of all ended runs (the oldest go first). */
  private settled(id: string, feed: RunFeed, log: ReplayLog): void {
    let dropped = false;
    const drop = () => {
      if (dropped) return;
      dropped = true;
      const left = (this.feeds.get(id) ?? []).filter((f) => f !== feed);
      if (left.length > 0) this.feeds.set(id, left);
      else this.feeds.delete(id);
      if (this.ended.delete(feed)) this.endedBytes -= log.heldBytes;
    };
    if (log.abandoned) return drop();
    this.ended.set(feed, drop);
    this.endedBytes += log.heldBytes;
    for (const [, dropOldest] of this.ended) {
      if (this.endedBytes <= this.bounds.endedBudgetBytes) break;
      dropOldest();
    }
    setTimeout(drop, this.bounds.retentionMs).unref();
  }
}

/** How long a reconnect waits for the shared copy to reach its cursor before calling it one from the future. */
const SHARED_LAG_WAIT_MS = 1_000;

// Two namespaces: an observation's key can never be taken for a run whose id happens to look like one.
function feedId(threadId: string, idKey: string): string {
  return `r\u0000${threadId}\u0000${idKey}`;
}

function observationId(threadId: string, idKey: string): string {
  return `o\u0000${threadId}\u0000${idKey}`;
}
