// Per-thread protocol state: the binding of an AG-UI thread to its A2A context and workspace, the
// current execution, pending interrupts and idempotency data. Never message text or secrets.
import type { InputValue } from "../../operators/index.js";
import { parseRecordText, serializeThreadRecordCompact, threadIdOfText } from "./record-text.js";
import { assertStorable } from "./validate.js";

export interface PendingEntry {
  /** The allowlist-filtered A2A input the interrupt was built from. */
  value: InputValue;
  /** Published by a concurrent pipeline wait: answered with SendMessage, not a stream. */
  sideband: boolean;
  /** ISO-8601 UTC; absent when interrupts do not expire. */
  expiresAt?: string;
}

export interface ExecutionRecord {
  executionId: string;
  rosInvocationId: string;
  taskId: string | null;
  lastTaskId: string | null;
  pipelineSequence: number;
  pipelineOpenSteps: string[];
  pending: Record<string, PendingEntry>;
  /** SHA-256 hex digests of text segments this execution showed (reference-adapter §5.4); never the text. */
  textSnapshotDigests?: string[];
  /**
   * The run that ended at the pending interrupts: one resume may reuse its id (CopilotKit's useInterrupt
   * pins it). Cleared when a run is admitted; set again by the next interrupt.
   */
  interruptedRunId?: string;
  /**
   * With a shared store: the replica whose kernel holds the parked task. A resume that reaches a replica whose
   * kernel does not know the task asks whether that one still runs before it gives the interrupt up.
   */
  parkedBy?: string;
  /**
   * With tracing on: the span of the run that parked at the pending interrupts, and when. The resume's trace links
   * to it and the wait is reported under it, across a restart. Ids and a time only.
   */
  parkedSpan?: ParkedSpan;
}

export interface ParkedSpan {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  /** ISO-8601 UTC. */
  parkedAt: string;
}

export interface AppliedResumeDigest {
  executionId: string;
  interruptId: string;
  digest: string;
}

export interface RunDigest {
  runId: string;
  digest: string;
}

export interface ThreadRecord {
  schemaVersion: 1;
  threadId: string;
  contextId: string;
  cwd: string;
  userId: string | null;
  /** The verified user who created the thread (absent: created without a user, by the trusted caller or without auth). */
  owner?: string;
  /** ISO-8601 UTC, owned threads only: when the thread was created and when a run was last admitted on it. */
  createdAt?: string;
  lastActiveAt?: string;
  iacCodeSessionId: string | null;
  execution: ExecutionRecord;
  /**
   * sha256 of each recent run's canonical request, oldest first (a list, not an object: an object would put
   * integer-like run ids such as "42" first and lose the order the window evicts by); run ids are single-use.
   */
  runDigests: RunDigest[];
  appliedResumeDigests: AppliedResumeDigest[];
  terminalExecutionIds: string[];
}

/** The thread's state cannot be read (corrupt, unreadable, symlinked): 503 STATE_UNAVAILABLE for that thread only. */
export class StateUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StateUnavailableError";
  }
}

export interface ThreadStore {
  /** undefined when the thread has never been seen. Throws StateUnavailableError. */
  load(threadId: string): Promise<ThreadRecord | undefined>;
  /** Durable once the promise resolves (atomic replace). Throws on failure. */
  save(record: ThreadRecord): Promise<void>;
  /** Forgets a thread (rolling back the admission of a new thread whose write failed). */
  remove?(threadId: string): Promise<void>;
  /** Every stored thread's id (start-up recovery); unreadable records are skipped. */
  threadIds?(): Promise<string[]>;
  /**
   * An owner's threads, most recently active first, after `page.after` (src/state/owned-threads.ts); without it the
   * repository scans threadIds(). Stores with many threads keep an index per owner.
   */
  ownedThreads?(owner: string, page: OwnedPage): Promise<ThreadRecord[]>;
  /** True when other replicas read and write the same records (see SharedThreadStore). */
  readonly shared?: boolean;
}

/** Where a page of an owner's threads starts, and how long it is. */
export interface OwnedPage {
  after?: ActivityCursor;
  limit: number;
}

/** A position in the most-recently-active-first order: a thread's last activity (ms) and id. */
export interface ActivityCursor {
  at: number;
  threadId: string;
}

/** A compare-and-set lost: the record changed since it was read. Reload, re-decide, retry. */
export class StaleRecordError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StaleRecordError";
  }
}

/** The write was fenced by a lease this replica no longer holds: another replica may own the thread now. */
export class LeaseLostError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "LeaseLostError";
  }
}

export interface VersionedThreadRecord {
  record: ThreadRecord;
  /** 1 for the first write, +1 per write. */
  version: number;
}

export interface LeaseInfo {
  /** Opaque; whoever holds it may renew, release or fence writes with it. */
  token: string;
  ownerId: string;
  /** Milliseconds before the lease expires unless renewed. */
  remainingMs: number;
}

/**
 * A store several replicas share: versioned records written by compare-and-set, and a per-thread lease that says
 * which replica runs the thread. A write fenced with a lease token lands only while that token still holds the
 * lease, so a replica that stalled past its lease cannot overwrite the new owner's state.
 */
export interface SharedThreadStore extends ThreadStore {
  readonly shared: true;
  loadVersioned(threadId: string): Promise<VersionedThreadRecord | undefined>;
  /**
   * Writes when the stored version is `expectedVersion` (0: no record yet) and, with `fence`, the thread's lease
   * holds exactly that token. Resolves the new version; throws StaleRecordError, LeaseLostError or
   * StateUnavailableError.
   */
  saveVersioned(record: ThreadRecord, expectedVersion: number, fence?: string): Promise<number>;
  remove(threadId: string, fence?: string): Promise<void>;
  threadIds(): Promise<string[]>;
  /** Takes the lease when it is free; otherwise says which owner holds it (possibly `ownerId` itself). */
  acquireLease(threadId: string, ownerId: string, ttlMs: number): Promise<{ token: string } | { heldBy: string }>;
  /** False when `token` no longer holds the lease (expired, released, broken). */
  renewLease(threadId: string, token: string, ttlMs: number): Promise<boolean>;
  releaseLease(threadId: string, token: string): Promise<boolean>;
  /** The owner id of the current lease, if any. */
  leaseHolder(threadId: string): Promise<string | undefined>;
  readLease(threadId: string): Promise<LeaseInfo | undefined>;
  /** Deletes another owner's lease, known dead, only if `token` (from readLease) still holds it. */
  breakLease(threadId: string, token: string): Promise<boolean>;
}

export function isSharedThreadStore(store: ThreadStore): store is SharedThreadStore {
  return store.shared === true;
}

/**
 * In-process store: the same contract without a disk, for tests and embedders. Records are kept as the text the
 * durable stores write, less its whitespace, and checked the same way both ways, so a test on this store sees what
 * production sees.
 */
export class MemoryThreadStore implements ThreadStore {
  private readonly threads: Map<string, string>;

  /** `threads` (threadId → stored text) lets a test plant a document or share one map between stores. */
  constructor(options: { threads?: Map<string, string> } = {}) {
    this.threads = options.threads ?? new Map();
  }

  async load(threadId: string): Promise<ThreadRecord | undefined> {
    const text = this.threads.get(threadId);
    return text === undefined ? undefined : parseRecordText(text, threadId, "the stored record");
  }

  async save(record: ThreadRecord): Promise<void> {
    assertStorable(record);
    this.threads.set(record.threadId, serializeThreadRecordCompact(record));
  }

  async remove(threadId: string): Promise<void> {
    this.threads.delete(threadId);
  }

  /** Like the file store, skips a record that is not JSON or names another thread. */
  async threadIds(): Promise<string[]> {
    return [...this.threads].filter(([threadId, text]) => threadIdOfText(text) === threadId).map(([threadId]) => threadId);
  }
}
