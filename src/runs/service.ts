// The run service: a façade over the jobs of src/runs, each in its own file — admission, the run session
// (and the resume flow it reads for a resume), re-attachment, cancel, start-up recovery — sharing the
// thread repository, the one place that reads and writes thread records (by named transitions).
import { randomUUID } from "node:crypto";
import type { Message } from "@ag-ui/core";
import type { Observable } from "rxjs";
import type { AguiOutput } from "../../operators/index.js";
import type { FlowGate } from "../a2a/index.js";
import { DEFAULT_RUN_ID_WINDOW, runDigestOf } from "../state/windows.js";
import { NO_SPAN, TRACING_OFF, type TraceSpan } from "../ops/trace.js";
import { admitRun, type RunCandidate } from "./admission.js";
import { answerRelayedCancel, cancelExecution, type CancelOutcome, type CancelRequest } from "./cancel.js";
import { LiveRuns } from "./live-runs.js";
import { forgetThread, type ForgetOutcome } from "./forget.js";
import { threadHistory, type HistoryOptions } from "./history.js";
import type { Caller } from "./caller.js";
import { observedRecord, reattach, type Observation } from "./reattach.js";
import { confirmRejoin, type Rejoin } from "./reconnect.js";
import { connectTarget, type ConnectRequest, type ConnectTarget } from "./connect.js";
import { recoverAbandonedRuns } from "./recovery.js";
import { adoptRun, type Adoption } from "./adopt.js";
import type { RunDeps, RunServiceOptions } from "./run-context.js";
import type { RunSession } from "./run-session.js";
import { ThreadRepository } from "./thread-repository.js";
import { takeRunSlot, type UserRunLimit } from "./user-runs.js";
import { describeThread, listOwnedThreads, type ThreadDetail, type ThreadPage } from "./thread-list.js";

export { runDigest, type RunCandidate } from "./admission.js";
export { toRunError } from "../a2a/error-mapping.js";
export type { CancelOutcome, CancelRequest } from "./cancel.js";
export type { HistoryOptions } from "./history.js";
export type { Observation } from "./reattach.js";
export type { Rejoin } from "./reconnect.js";
export { connectRun, type ConnectRequest, type ConnectTarget } from "./connect.js";
export { MAX_THREAD_PAGE, type ThreadDetail, type ThreadPage, type ThreadSummary } from "./thread-list.js";
export type { RunServiceOptions } from "./run-context.js";
export type { RunSession, RunTicket } from "./run-session.js";

export class RunService {
  private readonly deps: RunDeps;
  private readonly userRuns: UserRunLimit | undefined;
  private accepting = true;

  constructor(options: RunServiceOptions) {
    this.userRuns = options.userRuns;
    this.deps = {
      threads: new ThreadRepository(options),
      kernel: options.a2a,
      logger: options.logger,
      relay: options.relay,
      live: new LiveRuns(),
      tracer: options.tracer ?? TRACING_OFF,
      settings: {
        interruptTtlMs: options.interruptTtlMs,
        heartbeatMs: options.heartbeatMs,
        window: options.runIdWindow ?? DEFAULT_RUN_ID_WINDOW,
        newExecutionId: options.newExecutionId ?? randomUUID,
        metrics: options.metrics,
        onActivity: options.onActivity,
        orphanGraceMs: options.orphanGraceMs ?? 0,
      },
    };
    // Counted when scraped, not at every run's end: a walk over every loaded thread per run grows with the square of
    // the runs at once.
    if (options.metrics) options.metrics.countInterruptsPending = () => this.pendingInterruptCount;
    options.relay?.onRequest("cancel", (payload) => answerRelayedCancel(this.deps, payload));
    // A resume on another replica asks whether we still run (our kernel may hold its parked task).
    options.relay?.onRequest("ping", async () => ({ alive: true }));
  }

  get activeRunCount(): number {
    return this.deps.live.size;
  }

  /** Interrupts waiting on the threads this replica has loaded. */
  get pendingInterruptCount(): number {
    let n = 0;
    for (const record of this.deps.threads.loadedRecords()) n += Object.keys(record.execution.pending).length;
    return n;
  }

  /** No run streams and no loaded thread waits for an answer. */
  get isIdle(): boolean {
    return this.deps.live.size === 0 && this.pendingInterruptCount === 0;
  }

  /** Stop admitting runs (graceful shutdown); running streams carry on. */
  stopAdmitting(): void {
    this.accepting = false;
  }

  /** Admission, within the user's run slots (--max-active-runs-per-user): a run holds its slot until it ends. */
  async admit(candidate: RunCandidate): Promise<RunSession> {
    const slot = await takeRunSlot(this.userRuns, candidate.caller);
    try {
      const session = await admitRun(this.deps, candidate, () => this.accepting);
      if (slot) void session.ended().finally(() => slot.release());
      return session;
    } catch (error) {
      await slot?.release();
      throw error;
    }
  }

  /** The admitted run's stream, read as fast as `flow` (the client's socket) takes it. */
  stream(session: RunSession, flow: FlowGate): Observable<AguiOutput> {
    return session.events(flow);
  }

  /** `span`: the observer request's, which the kernel calls of the observation are children of. */
  observe(observation: Observation, span: TraceSpan = NO_SPAN): Promise<Observable<AguiOutput>> {
    return reattach(this.deps, observation, span);
  }

  /**
   * The kernel's task of the execution the observation may see (EXECUTION_NOT_FOUND otherwise), and the digest of the
   * request of the run it names; `ended`: an execution that has ended may be seen too (an observer that lost its
   * stream comes back for the rest), its task then null.
   */
  async observable(observation: Observation, ended = false): Promise<{ taskId: string | null; digest: string }> {
    const record = await observedRecord(this.deps, observation, ended);
    return { taskId: record.execution.taskId, digest: runDigestOf(record, observation.runId)! };
  }

  /** Whether a client that lost a run's stream may have the rest of it (src/runs/reconnect.ts). */
  rejoinable(rejoin: Rejoin): Promise<"ok" | "unknown" | "reused"> {
    return confirmRejoin(this.deps, rejoin);
  }

  cancel(cancel: CancelRequest, span: TraceSpan = NO_SPAN): Promise<CancelOutcome> {
    return cancelExecution(this.deps, cancel, span);
  }

  /** The owner's threads, a page at a time; undefined for a cursor this gateway did not make. */
  threadsOf(owner: string, cursor: string | undefined, limit: number): Promise<ThreadPage | undefined> {
    return listOwnedThreads(this.deps, owner, cursor, limit);
  }

  /** A run a stopped process left streaming on the thread, taken up under the connect's run id (src/runs/adopt.ts). */
  adopt(adoption: Adoption): Promise<RunSession | undefined> {
    return adoptRun(this.deps, adoption);
  }

  /** One thread and what its run is doing; undefined for a thread the caller may not use. */
  thread(caller: Caller, threadId: string): Promise<ThreadDetail | undefined> {
    return describeThread(this.deps, caller, threadId);
  }

  /** Who may connect to the thread, and what a connect finds there (src/runs/connect.ts). */
  connect(request: ConnectRequest): Promise<ConnectTarget> {
    return connectTarget(this.deps, request);
  }

  /** The thread's conversation from the kernel's task history; undefined for a thread this gateway does not know. */
  async history(threadId: string, options: HistoryOptions): Promise<Message[] | undefined> {
    const record = await this.deps.threads.read(threadId);
    return record && threadHistory(this.deps, record, options);
  }

  /** Cancels the thread's run, if any, and forgets its record; "not_found" for a thread the caller may not use. */
  forget(caller: Caller, threadId: string): Promise<ForgetOutcome> {
    return forgetThread(this.deps, caller, threadId);
  }

  recoverAbandonedRuns(): Promise<number> {
    return recoverAbandonedRuns(this.deps);
  }

  /**
   * Resolves once no run is streaming and every ended run has finished its last writes and upstream
   * cancels, or after `timeoutMs` (graceful shutdown). Closed sockets end their streams a tick later.
   */
  drain(timeoutMs: number): Promise<void> {
    return this.deps.live.drain(timeoutMs);
  }
}
