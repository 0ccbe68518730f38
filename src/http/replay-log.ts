// A run's SSE records exactly as they were sent (`id: <runId>:<seq>` included), so a client that lost its
// stream can be given the rest of it (Last-Event-ID). Transport, not conversation storage: bounded by records
// and bytes (the oldest go first), kept a while after the run's end, never written to the state files.
import type { SharedReplayWriter } from "../state/redis-replay.js";

export interface ReplayBounds {
  /** Records kept per run. */
  maxEvents: number;
  /** Bytes of records kept per run. */
  maxBytes: number;
  /** How long a run's records are kept after its terminal event. */
  retentionMs: number;
  /** Bytes of ended runs' records kept in all (the oldest ended run goes first). */
  endedBudgetBytes: number;
}

export const DEFAULT_REPLAY_BOUNDS: ReplayBounds = { maxEvents: 10_000, maxBytes: 4 * 1024 * 1024, retentionMs: 60_000, endedBudgetBytes: 256 * 1024 * 1024 };

/** A reader following a log: each new record, the run's heartbeats, and its end. */
export interface LogListener {
  record(text: string): void;
  heartbeat(): void;
  /** `complete`: the terminal event is in the log; otherwise the run stopped without one (a reader cannot go on). */
  end(complete: boolean): void;
}

/** What a cursor finds: the records after it, or why there are none to give. */
export type Replay = { records: readonly string[] } | { refused: "future" | "expired" };

export class ReplayLog {
  private records: string[] = [];
  /** Index in `records` of the oldest record kept (evicted slots are dropped in batches). */
  private head = 0;
  private firstSeq = 1;
  private bytes = 0;
  private readonly sizes: number[] = [];
  private readonly listeners = new Set<LogListener>();
  /** live: records still come; complete: the terminal event is in; abandoned: the run stopped without one. */
  private state: "live" | "complete" | "abandoned" = "live";

  constructor(
    /** `<runId>` as the ids carry it. */
    readonly key: string,
    readonly bounds: ReplayBounds,
    private readonly onSettled: (log: ReplayLog) => void = () => {},
    /** The copy other replicas read (with a shared state store). */
    private readonly mirror?: SharedReplayWriter,
  ) {}

  /** The seq of the newest record (0 before the first). */
  get lastSeq(): number {
    return this.firstSeq + (this.records.length - this.head) - 1;
  }

  get ended(): boolean {
    return this.state !== "live";
  }

  get abandoned(): boolean {
    return this.state === "abandoned";
  }

  /** The record with seq `lastSeq + 1`; the oldest records go once a bound is passed. */
  append(text: string): void {
    if (this.state !== "live") return;
    const size = Buffer.byteLength(text);
    this.records.push(text);
    this.sizes.push(size);
    this.bytes += size;
    while (this.records.length - this.head > 1 && (this.records.length - this.head > this.bounds.maxEvents || this.bytes > this.bounds.maxBytes)) {
      this.bytes -= this.sizes[this.head]!;
      this.head += 1;
      this.firstSeq += 1;
    }
    // Evicted slots are dropped in batches, not one shift per record.
    if (this.head >= 1024 && this.head * 2 >= this.records.length) {
      this.records = this.records.slice(this.head);
      this.sizes.splice(0, this.head);
      this.head = 0;
    }
    for (const listener of this.listeners) listener.record(text);
    this.mirror?.append(this.lastSeq, text, this.firstSeq);
  }

  heartbeat(): void {
    for (const listener of this.listeners) listener.heartbeat();
    this.mirror?.heartbeat();
  }

  /** The terminal event is in (`complete`), or the run stopped without one. Readers are told; the log is kept a while. */
  end(complete: boolean): void {
    if (this.state !== "live") return;
    this.state = complete ? "complete" : "abandoned";
    this.mirror?.end(complete, this.lastSeq, this.bounds.retentionMs);
    for (const listener of [...this.listeners]) listener.end(complete);
    this.listeners.clear();
    this.onSettled(this);
  }

  /** The records after `seq` (the last one a client received; 0 for none), or why they cannot be given. */
  after(seq: number): Replay {
    if (seq > this.lastSeq) return { refused: "future" };
    if (seq < this.firstSeq - 1 || this.state === "abandoned") return { refused: "expired" };
    return { records: this.records.slice(this.head + (seq - this.firstSeq + 1)) };
  }

  /** Follows the log from now on (call right after `after`: nothing comes between). Returns the unfollow. */
  follow(listener: LogListener): () => void {
    if (this.state !== "live") {
      listener.end(this.state === "complete");
      return () => {};
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Bytes held (the bench reports it per run). */
  get heldBytes(): number {
    return this.bytes;
  }
}

/** `Last-Event-ID` as the gateway writes it: `<runId>:<seq>`. The run id may itself contain colons. */
export function parseEventId(text: string): { runId: string; seq: number } | undefined {
  const colon = text.lastIndexOf(":");
  if (colon <= 0) return undefined;
  const seqText = text.slice(colon + 1);
  if (!/^(0|[1-9][0-9]{0,14})$/.test(seqText)) return undefined;
  return { runId: text.slice(0, colon), seq: Number(seqText) };
}
