// What every job of the run service shares: its options, the thread repository, the runs streaming now,
// and the two fail-safe actions on a record (cancel its A2A task, fail closed after a lost write).
import type { Logger } from "pino";
import { RunError, type A2APart } from "../../operators/index.js";
import type { A2AClient } from "../a2a/index.js";
import type { Language } from "../i18n/index.js";
import type { GatewayMetrics } from "../ops/metrics.js";
import type { ThreadRecord, ThreadStore } from "../state/thread-store.js";
import type { RunRequest } from "./input.js";
import { markTerminal } from "./thread-record.js";
import type { ThreadRepository } from "./thread-repository.js";

export interface RunServiceOptions {
  store: ThreadStore;
  a2a: A2AClient;
  logger: Logger;
  /** 0 = interrupts never expire. */
  interruptTtlMs: number;
  heartbeatMs: number;
  newExecutionId?: () => string;
  metrics?: GatewayMetrics;
  /** Called whenever a run is admitted or released (idle shutdown). */
  onActivity?: () => void;
  /** Run ids (and ended executions, applied answers) remembered per thread; default 256. */
  runIdWindow?: number;
  /** With a shared store: this replica's id in thread leases, and how long a lease outlives its replica. */
  replicaId?: string;
  leaseTtlMs?: number;
  /** With a shared store: requests to the replica that holds a thread (a cancel that reached another one). */
  relay?: ReplicaRelay;
}

/** Request/reply between the replicas that share a store (Redis pub/sub). */
export interface ReplicaRelay {
  onRequest(kind: string, handler: (payload: unknown) => Promise<unknown>): void;
  /** `reason` "no-subscriber" or "timeout": that replica is gone (or stalled); anything else: it could not be asked. */
  request(
    toReplicaId: string,
    kind: string,
    payload: unknown,
    timeoutMs: number,
  ): Promise<{ answered: true; reply: unknown } | { answered: false; reason: string }>;
}

/** An admitted run: everything its stream needs, decided under the thread lock. */
export interface RunTicket {
  readonly request: RunRequest;
  readonly record: ThreadRecord;
  readonly language: Language;
  /** "reshow": an AG-UI 1.0 turn while interrupts are pending, answered with those interrupts again. */
  readonly kind: "turn" | "resume" | "reshow";
  readonly parts: A2APart[];
  readonly messageId: string;
  readonly startedAt: number;
  /** Correlates every log line of this run. */
  readonly requestId: string;
  /** The service's logger bound to this run's ids (requestId, threadId, runId). */
  readonly logger: Logger;
}

export interface RunContext {
  readonly a2a: A2AClient;
  readonly logger: Logger;
  readonly options: RunServiceOptions;
  readonly threads: ThreadRepository;
  /** The ticket of the run streaming on each thread. */
  readonly activeRuns: Map<string, RunTicket>;
  /** Runs whose stream the edge cut short (an event it could not write): their release cancels the task. */
  readonly abandoned: WeakSet<RunTicket>;
  /** Releases of ended runs still writing or cancelling (graceful shutdown waits for them). */
  readonly releasing: Set<Promise<void>>;
  /** Run ids, ended executions and applied answers remembered per thread. */
  readonly window: number;
  readonly newExecutionId: () => string;
  readonly relay: ReplicaRelay | undefined;
  accepting: boolean;
}

/** Nobody will read this record's A2A task again: stop it upstream (failures are logged, never thrown). */
export async function cancelUpstream(context: RunContext, record: ThreadRecord): Promise<void> {
  const taskId = record.execution.taskId;
  if (taskId === null) return;
  try {
    await context.a2a.cancelTask(taskId);
  } catch (error) {
    context.logger.warn({ err: error, taskId }, "CancelTask failed");
  }
}

/** A durable write was lost: the run cannot go on safely, so its task is cancelled and it ends here. */
export async function failClosed(context: RunContext, ticket: RunTicket, error: unknown, english: string): Promise<never> {
  ticket.logger.error({ err: error }, english);
  await cancelUpstream(context, ticket.record);
  markTerminal(ticket.record, context.window);
  await context.threads.persist(ticket.record).catch(() => undefined);
  throw new RunError("STATE_PERSISTENCE_FAILED", english);
}
