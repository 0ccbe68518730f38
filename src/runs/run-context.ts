// What every job of the run service shares: the thread repository, the kernel client, the logger, the
// settings it reads and the runs streaming now. Nothing here changes a record.
import type { Logger } from "pino";
import type { A2AClient } from "../a2a/index.js";
import type { GatewayMetrics } from "../ops/metrics.js";
import { NO_SPAN, type GatewayTracer, type TraceSpan } from "../ops/trace.js";
import type { ThreadStore } from "../state/thread-store.js";
import type { LiveRuns } from "./live-runs.js";
import type { ThreadRepository } from "./thread-repository.js";
import type { UserRunLimit } from "./user-runs.js";

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
  /** --max-active-runs-per-user. */
  userRuns?: UserRunLimit;
  /** OpenTelemetry tracing (default off). */
  tracer?: GatewayTracer;
  /** --reconnect-grace: how long a run a stopped process left streaming waits to be taken up (default 0). */
  orphanGraceMs?: number;
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

/** The settings the jobs read. */
export interface RunSettings {
  /** 0 = interrupts never expire. */
  readonly interruptTtlMs: number;
  readonly heartbeatMs: number;
  /** Run ids, ended executions and applied answers remembered per thread. */
  readonly window: number;
  readonly newExecutionId: () => string;
  readonly metrics: GatewayMetrics | undefined;
  readonly onActivity: (() => void) | undefined;
  /**
   * How long a run left streaming by a stopped process is kept for a client to come back to (--reconnect-grace):
   * its task is cancelled after that unless a connect took it up (src/runs/adopt.ts). 0: cancelled at start-up.
   */
  readonly orphanGraceMs: number;
}

export interface RunDeps {
  readonly threads: ThreadRepository;
  readonly kernel: A2AClient;
  readonly logger: Logger;
  readonly settings: RunSettings;
  readonly relay: ReplicaRelay | undefined;
  readonly live: LiveRuns;
  readonly tracer: GatewayTracer;
}

/** Nobody will read this A2A task again: stop it upstream (failures are logged, never thrown). */
export async function cancelTask(deps: RunDeps, taskId: string | null | undefined, span: TraceSpan = NO_SPAN): Promise<void> {
  if (taskId === null || taskId === undefined) return;
  try {
    await deps.kernel.cancelTask(taskId, span);
  } catch (error) {
    deps.logger.warn({ err: error, taskId }, "CancelTask failed");
  }
}
