// The run service: a façade over the jobs of src/runs, each in its own file — admission, the run stream
// (and the resume flow it reads for a resume), re-attachment, cancel, start-up recovery — sharing one
// RunContext whose thread repository is the one place that reads and writes thread records.
import { randomUUID } from "node:crypto";
import type { Observable } from "rxjs";
import type { A2APart, AguiOutput } from "../../operators/index.js";
import type { FlowGate } from "../a2a/index.js";
import type { Language } from "../i18n/index.js";
import { DEFAULT_RUN_ID_WINDOW } from "../state/windows.js";
import { admitRun } from "./admission.js";
import { answerRelayedCancel, cancelExecution, type CancelOutcome } from "./cancel.js";
import type { RunRequest } from "./input.js";
import { reattach } from "./reattach.js";
import { recoverAbandonedRuns } from "./recovery.js";
import type { RunContext, RunServiceOptions, RunTicket } from "./run-context.js";
import { pendingInterruptCount, streamRun } from "./run-stream.js";
import { ThreadRepository } from "./thread-repository.js";

export { runDigest } from "./admission.js";
export { toRunError } from "../a2a/error-mapping.js";
export type { CancelOutcome } from "./cancel.js";
export type { RunServiceOptions, RunTicket } from "./run-context.js";

export class RunService {
  private readonly context: RunContext;

  constructor(options: RunServiceOptions) {
    this.context = {
      a2a: options.a2a,
      logger: options.logger,
      options,
      threads: new ThreadRepository(options),
      relay: options.relay,
      activeRuns: new Map(),
      abandoned: new WeakSet(),
      releasing: new Set(),
      window: options.runIdWindow ?? DEFAULT_RUN_ID_WINDOW,
      newExecutionId: options.newExecutionId ?? randomUUID,
      accepting: true,
    };
    options.relay?.onRequest("cancel", (payload) => answerRelayedCancel(this.context, payload));
    // A resume on another replica asks whether we still run (our kernel may hold its parked task).
    options.relay?.onRequest("ping", async () => ({ alive: true }));
  }

  get activeRunCount(): number {
    return this.context.activeRuns.size;
  }

  get pendingInterruptCount(): number {
    return pendingInterruptCount(this.context);
  }

  /** No run streams and no loaded thread waits for an answer. */
  get isIdle(): boolean {
    return this.context.activeRuns.size === 0 && this.pendingInterruptCount === 0;
  }

  /** The edge could not write this run's stream and ended it: release cancels its A2A task. */
  abandon(ticket: RunTicket): void {
    this.context.abandoned.add(ticket);
  }

  /** Stop admitting runs (graceful shutdown); running streams carry on. */
  stopAdmitting(): void {
    this.context.accepting = false;
  }

  admit(request: RunRequest, digest: string, cwd: string, parts: A2APart[], messageId: string, language: Language): Promise<RunTicket> {
    return admitRun(this.context, request, digest, cwd, parts, messageId, language);
  }

  stream(ticket: RunTicket, flow: FlowGate): Observable<AguiOutput> {
    return streamRun(this.context, ticket, flow);
  }

  observe(executionId: string, threadId: string, runId: string, rosInvocationId: string, language: Language): Promise<Observable<AguiOutput>> {
    return reattach(this.context, executionId, threadId, runId, rosInvocationId, language);
  }

  cancel(executionId: string, threadId: string, rosInvocationId: string): Promise<CancelOutcome> {
    return cancelExecution(this.context, { executionId, threadId, rosInvocationId });
  }

  recoverAbandonedRuns(): Promise<number> {
    return recoverAbandonedRuns(this.context);
  }

  /**
   * Resolves once no run is streaming and every ended run has finished its last writes and upstream
   * cancels, or after `timeoutMs` (graceful shutdown). Closed sockets end their streams a tick later.
   */
  async drain(timeoutMs: number): Promise<void> {
    const { activeRuns, releasing } = this.context;
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && (activeRuns.size > 0 || releasing.size > 0)) {
      if (releasing.size > 0) await Promise.race([Promise.allSettled([...releasing]), sleep(50)]);
      else await sleep(10);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
