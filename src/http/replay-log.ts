// A run's SSE records exactly as they were sent (`id: <runId>:<seq>` included), so a client that lost its
// stream can be given the rest of it (Last-Event-ID). Transport, not conversation storage: bounded by records
// and bytes (the oldest go first), kept a while after the run's end, never written to the state files.
import { atItsSize } from "../../operators/lib/short-list.js";
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

/** A reader following a log: the new records (a tick's together), the run's heartbeats, and its end. */
export interface LogListener {
  record(records: string | Uint8Array): void;
  heartbeat(): void;
  /** `complete`: the terminal event is in the log; otherwise the run stopped without one (a reader cannot go on). */
  end(complete: boolean): void;
}

/** What a cursor finds: the records after it (in a few parts, whole records each), or why there are none to give. */
export type Replay = { records: readonly (string | Uint8Array)[] } | { refused: "future" | "expired" };

/**
 * The records one tick appended, joined once; the same chunk goes to the readers' sockets and stays in the log. A
 * large chunk (a fast run's tick) is kept as UTF-8 outside the JavaScript heap: the garbage collector neither copies
 * a run's records from one young generation to the next nor moves them into the old one, and the socket write has
 * no string left to encode. A small one (a paced run's record or two) stays a flat string: an ArrayBuffer each
 * would cost the collector more than the bytes.
 */
interface Chunk {
  firstSeq: number;
  data: string | Buffer;
  bytes: number;
  /** Records in `data`. Each ends with the blank line that ends an SSE event, so they are found again by it. */
  records: number;
}

/** Chunks of at least this many characters are kept as bytes. */
const BYTES_FROM_CHARS = 2_048;

export class ReplayLog {
  private chunks: Chunk[] = [];
  /** Records of this tick, not yet joined into a chunk. */
  private pending: string[] = [];
  private sealing = false;
  private firstSeq = 1;
  private count = 0;
  private bytes = 0;
  private readonly listeners = new Set<LogListener>();
  /** live: records still come; complete: the terminal event is in; abandoned: the run stopped without one. */
  private state: "live" | "complete" | "abandoned" = "live";
  private readonly seal = () => this.sealPending();

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
    return this.firstSeq + this.count - 1;
  }

  get ended(): boolean {
    return this.state !== "live";
  }

  get abandoned(): boolean {
    return this.state === "abandoned";
  }

  /** The record with seq `lastSeq + 1`, for the readers at the end of the tick; the oldest records go once a bound is passed. */
  append(text: string): void {
    if (this.state !== "live") return;
    this.pending.push(text);
    this.count += 1;
    if (!this.sealing) {
      this.sealing = true;
      process.nextTick(this.seal);
    }
  }

  heartbeat(): void {
    this.sealPending();
    for (const listener of this.listeners) {
      try {
        listener.heartbeat();
      } catch {
        this.drop(listener);
      }
    }
    this.mirror?.heartbeat();
  }

  /** The terminal event is in (`complete`), or the run stopped without one. Readers are told; the log is kept a while. */
  end(complete: boolean): void {
    if (this.state !== "live") return;
    this.state = complete ? "complete" : "abandoned";
    this.sealPending();
    this.mirror?.end(complete, this.lastSeq, this.bounds.retentionMs);
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) {
      try {
        listener.end(complete);
      } catch {
        // That reader's own failure: the others are still told.
      }
    }
    this.onSettled(this);
  }

  /** The records after `seq` (the last one a client received; 0 for none), or why they cannot be given. */
  after(seq: number): Replay {
    this.sealPending();
    if (seq > this.lastSeq) return { refused: "future" };
    if (seq < this.firstSeq - 1 || this.state === "abandoned") return { refused: "expired" };
    const records: (string | Uint8Array)[] = [];
    for (const chunk of this.chunks) {
      const last = chunk.firstSeq + chunk.records - 1;
      if (last <= seq) continue;
      records.push(seq < chunk.firstSeq ? chunk.data : afterRecords(chunk.data.toString(), seq - chunk.firstSeq + 1));
    }
    return { records };
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
    this.sealPending();
    return this.bytes;
  }

  /**
   * This tick's records become one chunk, which the readers get; the oldest chunks go while a bound is passed (the
   * newest always stays).
   */
  private sealPending(): void {
    this.sealing = false;
    const pending = this.pending;
    if (pending.length === 0) return;
    this.pending = [];
    const text = pending.join("");
    const bytes = Buffer.byteLength(text);
    let data: string | Buffer = text;
    if (text.length >= BYTES_FROM_CHARS) {
      // Its own memory, not a slice of Node's shared pool: a kept chunk would hold a pool slab of other buffers.
      data = Buffer.allocUnsafeSlow(bytes);
      data.write(text, "utf8");
    }
    const firstSeq = this.lastSeq - pending.length + 1;
    this.chunks.push({ firstSeq, data, bytes, records: pending.length });
    this.chunks = atItsSize(this.chunks);
    this.bytes += bytes;
    while (this.chunks.length > 1 && (this.count > this.bounds.maxEvents || this.bytes > this.bounds.maxBytes)) {
      const oldest = this.chunks.shift()!;
      this.count -= oldest.records;
      this.firstSeq += oldest.records;
      this.bytes -= oldest.bytes;
    }
    this.mirror?.append(firstSeq, text, pending.length, this.firstSeq);
    for (const listener of this.listeners) {
      try {
        listener.record(data);
      } catch {
        this.drop(listener);
      }
    }
  }

  /**
   * A reader that threw: the others still get what it did not, and the run appending is not thrown into. It is
   * dropped and ended, as if its client had gone (what follows is the feed's: a reconnect grace, or the run's end).
   */
  private drop(listener: LogListener): void {
    this.listeners.delete(listener);
    try {
      listener.end(false);
    } catch {
      // Already broken; nothing more is owed to it.
    }
  }
}

/** `text` without its first `skip` records (a replay from inside a chunk is rare: no offsets are kept for it). */
function afterRecords(text: string, skip: number): string {
  let at = 0;
  for (let i = 0; i < skip; i++) at = text.indexOf("\n\n", at) + 2;
  return text.slice(at);
}

/** `Last-Event-ID` as the gateway writes it: `<runId>:<seq>`. The run id may itself contain colons. */
export function parseEventId(text: string): { runId: string; seq: number } | undefined {
  const colon = text.lastIndexOf(":");
  if (colon <= 0) return undefined;
  const seqText = text.slice(colon + 1);
  if (!/^(0|[1-9][0-9]{0,14})$/.test(seqText)) return undefined;
  return { runId: text.slice(0, colon), seq: Number(seqText) };
}
