// Per-thread protocol state: the binding of an AG-UI thread to its A2A context and workspace, the
// current execution, pending interrupts and idempotency data. Never message text or secrets.
import type { InputValue } from "../../operators/index.js";

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
}

/** In-process store: the same contract without a disk, for tests and embedders. */
export class MemoryThreadStore implements ThreadStore {
  // Kept serialized, as the file store keeps them: a copy nobody can mutate that round-trips the same way.
  private readonly threads = new Map<string, string>();

  async load(threadId: string): Promise<ThreadRecord | undefined> {
    const text = this.threads.get(threadId);
    return text === undefined ? undefined : (JSON.parse(text) as ThreadRecord);
  }

  async save(record: ThreadRecord): Promise<void> {
    this.threads.set(record.threadId, JSON.stringify(record));
  }

  async remove(threadId: string): Promise<void> {
    this.threads.delete(threadId);
  }

  async threadIds(): Promise<string[]> {
    return [...this.threads.keys()];
  }
}
