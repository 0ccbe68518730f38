// Run orchestration: admission under a per-thread lock, the A2A call behind each run, durability of
// what a run reveals (persist first, then emit), disconnects and the cancel extension.
import { createHash, randomUUID } from "node:crypto";
import { EventType } from "@ag-ui/core";
import type { Logger } from "pino";
import {
  EMPTY,
  concat,
  concatMap,
  defer,
  catchError,
  finalize,
  from,
  map,
  of,
  tap,
  throwError,
  throwIfEmpty,
  type Observable,
} from "rxjs";
import {
  RunError,
  canonicalJson,
  createAguiPipeline,
  isProjectionFact,
  type A2APart,
  type A2AStreamResponse,
  type A2ATask,
  type AguiEvent,
  type AguiOutput,
  type PendingInterrupt,
} from "../../operators/index.js";
import { UPSTREAM_LIMITS, isBoundedId, oversizedFrame } from "../a2a/limits.js";
import { A2AJsonRpcError, buildIacCodeMetadata, buildUserMessage, contextIdForThread, type A2AClient, type FlowGate } from "../a2a/index.js";
import { localize, messageText, normalizeLanguage, type Language } from "../i18n/index.js";
import { StateUnavailableError, type ThreadRecord, type ThreadStore } from "../state/thread-store.js";
import { DEFAULT_RUN_ID_WINDOW, idRecord, putOwn, rememberAppliedDigest, rememberRunDigest, rememberTerminalExecution, rememberTextSegment, runDigestOf } from "../state/windows.js";
import { AdmissionError, admission } from "./errors.js";
import type { RunRequest } from "./input.js";
import { recordRun, timeResult, type GatewayMetrics } from "../ops/metrics.js";
import { KeyedLock } from "./keyed-lock.js";
import { declaresAgui1 } from "./protocol.js";
import { encodeAnswer, interruptsOf, planResume, type PlannedAnswer } from "./resume.js";

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
  /** Set once the run's terminal event has been produced (after its durable writes). */
  terminal?: AguiEvent;
  /** The run ended at an interrupt: it no longer depends on its connection. */
  interrupted: boolean;
  /** The stream was cut short by the gateway (an event it could not write): its task is cancelled. */
  abandoned?: boolean;
}

export type CancelOutcome = "cancelled" | "already_terminal" | "not_found";

export function runDigest(body: unknown): string {
  return createHash("sha256").update(canonicalJson(body), "utf8").digest("hex");
}

export class RunService {
  private readonly lock = new KeyedLock();
  /** Threads with a live run or pending interrupts stay loaded; others are read lazily from the store. */
  private readonly threads = new Map<string, ThreadRecord>();
  private readonly activeRuns = new Map<string, RunTicket>();
  private readonly saves = new Map<string, Promise<void>>();
  private readonly newExecutionId: () => string;
  private readonly window: number;
  private accepting = true;
  private readonly releasing = new Set<Promise<void>>();

  constructor(private readonly options: RunServiceOptions) {
    this.newExecutionId = options.newExecutionId ?? randomUUID;
    this.window = options.runIdWindow ?? DEFAULT_RUN_ID_WINDOW;
  }

  get activeRunCount(): number {
    return this.activeRuns.size;
  }

  get pendingInterruptCount(): number {
    let n = 0;
    for (const record of this.threads.values()) n += Object.keys(record.execution.pending).length;
    return n;
  }

  /** No run streams and no loaded thread waits for an answer. */
  get isIdle(): boolean {
    return this.activeRuns.size === 0 && this.pendingInterruptCount === 0;
  }

  /** The edge could not write this run's stream and ended it: release cancels its A2A task. */
  abandon(ticket: RunTicket): void {
    ticket.abandoned = true;
  }

  /** Stop admitting runs (graceful shutdown); running streams carry on. */
  stopAdmitting(): void {
    this.accepting = false;
  }

  /**
   * Admission (reference-adapter §8.1). `digest` covers the raw request body; `parts` were built and
   * checked before, so nothing invalid ever takes a run id.
   */
  admit(request: RunRequest, digest: string, cwd: string, parts: A2APart[], messageId: string, language: Language): Promise<RunTicket> {
    return this.lock.run(request.threadId, async () => {
      if (!this.accepting) throw admission.shuttingDown();
      const { threadId, runId, iacCode } = request;
      const isResume = request.resume !== undefined;
      let kind: RunTicket["kind"] = isResume ? "resume" : "turn";
      let record = await this.loadThread(threadId, true);
      const before = record ? structuredClone(record) : undefined;
      if (!record) {
        if (isResume) throw admission.executionLost();
        record = newThreadRecord(threadId, cwd, iacCode.userId ?? null, iacCode.rosInvocationId, this.newExecutionId());
      } else {
        const seen = runDigestOf(record, runId);
        if (seen !== undefined && !(isResume && seen !== digest && resumesUnderInterruptedRun(record, runId))) {
          throw seen === digest ? admission.duplicateRunId() : admission.runIdConflict();
        }
        if (this.activeRuns.has(threadId)) throw admission.threadBusy();
        if (record.cwd !== cwd || record.userId !== (iacCode.userId ?? null)) throw admission.bindingConflict();
        if (!isResume && allExpired(record, Date.now())) {
          // Nobody answered in time: the interrupt is gone and so is the parked A2A task.
          void this.cancelUpstream(structuredClone(record));
          record.execution.pending = {};
        }
        const pending = Object.keys(record.execution.pending).length > 0;
        if (isResume) {
          if (record.execution.rosInvocationId !== iacCode.rosInvocationId) throw admission.resumeMismatch();
        } else if (pending) {
          // AG-UI 1.0 lets a producer end a run with the interrupt outcome again: a client that lost its
          // interrupts (a reload, a restarted CopilotKit runtime) can show them. The text is not sent.
          if (!declaresAgui1(request.protocolVersion) || record.execution.taskId === null) {
            throw admission.resumeRequired(interruptsOf(record.execution.pending, (english, lang) => localize(normalizeLanguage(lang) ?? language, english)));
          }
          kind = "reshow";
        } else {
          rotateExecution(record, iacCode.rosInvocationId, this.newExecutionId(), this.window);
        }
      }
      rememberRunDigest(record, runId, digest, this.window);
      // Admitted once: the next interrupt names its own run.
      delete record.execution.interruptedRunId;
      const ticket: RunTicket = {
        request,
        record,
        language,
        kind,
        parts,
        messageId,
        startedAt: Date.now(),
        requestId: randomUUID(),
        interrupted: false,
      };
      this.threads.set(threadId, record);
      this.activeRuns.set(threadId, ticket);
      this.options.onActivity?.();
      try {
        await this.persist(record);
        this.options.logger.info(
          { requestId: ticket.requestId, threadId, runId, executionId: record.execution.executionId, kind: ticket.kind, language },
          "run admitted",
        );
      } catch (error) {
        this.activeRuns.delete(threadId);
        if (before) this.threads.set(threadId, before);
        else this.threads.delete(threadId);
        // The write may have landed before it failed (a directory fsync error): put the disk back too,
        // so the refused request does not consume its run id.
        await (before ? this.options.store.save(before) : this.options.store.remove?.(threadId))?.catch(() => undefined);
        this.options.logger.warn({ err: error, threadId }, "admission write failed");
        throw admission.stateUnavailable();
      }
      return ticket;
    });
  }

  /** The run's AG-UI stream. Unsubscribing before its terminal event is a client disconnect. */
  stream(ticket: RunTicket, flow: FlowGate): Observable<AguiOutput> {
    const { request, record, language } = ticket;
    const execution = record.execution;
    // The interrupts of the RUN_FINISHED that comes next, from the projection's "interrupts" fact.
    let parking: PendingInterrupt[] = [];
    // A re-shown interrupt is projected like a resume that announces its pending set.
    const resume = ticket.kind !== "turn";
    const translateFor = (english: string, lang?: string) => localize(normalizeLanguage(lang) ?? language, english);
    // While a durable write is in flight the upstream is not read either: frames would only queue up.
    let committing: Promise<void> | undefined;
    const gate: FlowGate = { ready: () => committing ?? flow.ready() };
    const frames =
      ticket.kind === "reshow" ? of(pendingFrame(record)) : resume ? this.resumeFrames(ticket, gate) : this.turnFrames(ticket, gate);
    return frames.pipe(
      createAguiPipeline({
        threadId: request.threadId,
        runId: request.runId,
        ...(request.parentRunId !== undefined && { parentRunId: request.parentRunId }),
        contextId: record.contextId,
        ...(resume && execution.taskId !== null && { taskId: execution.taskId }),
        session: {
          executionId: execution.executionId,
          rosInvocationId: execution.rosInvocationId,
          ...(record.iacCodeSessionId !== null && { sessionId: record.iacCodeSessionId }),
          // A resume announces the session once the kernel accepted the answer (its first frame).
          emitOn: resume ? "first-frame" : "ids",
        },
        // Read live: answers accepted during this run count too.
        isInputApplied: (inputId) =>
          record.appliedResumeDigests.some((d) => d.executionId === execution.executionId && d.interruptId === inputId),
        knownInterrupts: new Map(interruptsOf(execution.pending, translateFor).map((i) => [i.id, i])),
        openSteps: execution.pipelineOpenSteps,
        pipelineSequence: execution.pipelineSequence,
        historyFallback: !resume,
        interruptTtlMs: this.options.interruptTtlMs,
        heartbeat: { intervalMs: this.options.heartbeatMs },
        language,
        translate: translateFor,
        cancelledOutcome: declaresAgui1(request.protocolVersion),
        textSnapshotDigests: execution.textSnapshotDigests ?? [],
        commit: (item) => {
          if (item.type === "IAC_CODE_TEXT_SEGMENT") {
            // Written with the next durable write (the interrupt commit, or the end of the run).
            rememberTextSegment(execution, item.digest);
            return undefined;
          }
          if (isProjectionFact(item)) {
            // What the kernel revealed, folded into the thread's state in stream order; written with the next
            // durable write. Bounded like every other id there.
            switch (item.fact) {
              case "taskId":
                execution.taskId = boundedUpstreamId(item.taskId);
                break;
              case "sessionId":
                record.iacCodeSessionId = boundedUpstreamId(item.sessionId);
                break;
              case "openSteps":
                execution.pipelineOpenSteps = boundedOpenSteps(item.openSteps);
                break;
              case "pipelineCursor":
                execution.pipelineSequence = item.sequence;
                break;
              case "interrupts":
                parking = item.pending;
                break;
            }
            return undefined;
          }
          const write = this.commitBeforeEmit(ticket, item, parking);
          if (write) {
            const settled = write.then(
              () => undefined,
              () => undefined,
            );
            committing = settled;
            void settled.then(() => {
              if (committing === settled) committing = undefined;
            });
          }
          return write;
        },
      }),
      tap((item) => {
        if (item.type === EventType.RUN_FINISHED || item.type === EventType.RUN_ERROR) ticket.terminal = item;
      }),
      finalize(() => {
        const done = this.release(ticket).finally(() => this.releasing.delete(done));
        this.releasing.add(done);
      }),
    );
  }

  /**
   * Resolves once no run is streaming and every ended run has finished its last writes and upstream
   * cancels, or after `timeoutMs` (graceful shutdown). Closed sockets end their streams a tick later.
   */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && (this.activeRuns.size > 0 || this.releasing.size > 0)) {
      if (this.releasing.size > 0) await Promise.race([Promise.allSettled([...this.releasing]), sleep(50)]);
      else await sleep(10);
    }
  }

  private turnFrames(ticket: RunTicket, flow: FlowGate): Observable<A2AStreamResponse> {
    const { request, record, language } = ticket;
    const message = buildUserMessage({
      messageId: ticket.messageId,
      contextId: record.contextId,
      parts: ticket.parts,
      metadata: buildIacCodeMetadata({ ...request.iacCode, cwd: record.cwd, language }),
    });
    return defer(() => this.options.a2a.sendStreamingMessage(message, { flow })).pipe(
      catchError((error: unknown) => throwError(() => toRunError(error))),
    );
  }

  /**
   * A resume: restore the session, check the task, reconcile the pending set, validate every answer,
   * then deliver each one to the same A2A task. Nothing is removed from pending before A2A accepted it.
   */
  private resumeFrames(ticket: RunTicket, flow: FlowGate): Observable<A2AStreamResponse> {
    const { record } = ticket;
    const execution = record.execution;
    return defer(async () => {
      try {
        const task = execution.taskId !== null && Object.keys(execution.pending).length > 0 ? await this.checkTask(ticket) : undefined;
        const plan = planResume(record, ticket.request.resume ?? [], task, Date.now());
        await this.persist(record).catch((error) =>
          this.failClosed(ticket, error, messageText("state.interruptCommitFailed")),
        );
        const recovery = plan.kind === "apply" ? await this.pipelineRecovery(record) : undefined;
        return { plan, recovery };
      } catch (error) {
        if (error instanceof RunError && (error.code === "EXECUTION_EXPIRED" || error.code === "EXECUTION_LOST") && execution.taskId !== null) {
          if (error.code === "EXECUTION_EXPIRED") await this.cancelUpstream(record);
          execution.pending = {};
          markTerminal(record, this.window);
          await this.persist(record).catch(() => undefined);
        }
        throw error;
      }
    }).pipe(
      concatMap(({ plan, recovery }): Observable<A2AStreamResponse> => {
        if (plan.kind === "announce") return of(pendingFrame(record));
        if (plan.kind === "cancel") return from(this.cancelByAnswer(ticket));
        return this.deliverAnswers(ticket, plan.answers, flow, recovery ? [recovery] : []);
      }),
    );
  }

  /** Session restore and task identity before anything is sent (reference-adapter §4.4 steps 2–3). */
  private async checkTask(ticket: RunTicket): Promise<A2ATask> {
    const { record } = ticket;
    const taskId = record.execution.taskId!;
    if (record.iacCodeSessionId !== null) {
      const restored = await this.options.a2a.ensureSessionRestored({ cwd: record.cwd, sessionId: record.iacCodeSessionId, taskId });
      if (restored === false) throw new RunError("EXECUTION_LOST", messageText("resume.sessionUnavailable"));
    }
    let task: A2ATask;
    try {
      task = await this.options.a2a.getTask(taskId);
    } catch (error) {
      if (error instanceof A2AJsonRpcError && error.code === -32001) {
        throw new RunError("EXECUTION_LOST", messageText("resume.taskUnavailable"));
      }
      throw toRunError(error, "A2A_UNAVAILABLE");
    }
    if (task.id !== taskId || (task.contextId !== undefined && task.contextId !== "" && task.contextId !== record.contextId)) {
      throw new RunError("A2A_PROTOCOL_ERROR", messageText("a2a.taskMismatch"));
    }
    return task;
  }

  private async cancelByAnswer(ticket: RunTicket): Promise<never> {
    const { record } = ticket;
    try {
      if (record.execution.taskId !== null) await this.options.a2a.cancelTask(record.execution.taskId);
    } catch (error) {
      if (!(error instanceof A2AJsonRpcError && error.code === -32002)) throw toRunError(error, "A2A_UNAVAILABLE");
    }
    record.execution.pending = {};
    markTerminal(record, this.window);
    await this.persist(record).catch(() => undefined);
    throw new RunError("CANCELLED", messageText("run.cancelledByAnswer"));
  }

  /**
   * Every answer reaches A2A: sideband permissions by SendMessage each, then the task is observed
   * (snapshot, subscribe); otherwise all answers but the last by SendMessage, the last as a stream whose
   * first frame is the acceptance.
   */
  private deliverAnswers(
    ticket: RunTicket,
    answers: PlannedAnswer[],
    flow: FlowGate,
    recovery: A2AStreamResponse[],
  ): Observable<A2AStreamResponse> {
    const { record } = ticket;
    const taskId = record.execution.taskId!;
    const sideband = answers.every((a) => a.pending.value.kind === "permission" && a.pending.sideband);
    const toolResults = answers.flatMap((a) => {
      const result = encodeAnswer(a, taskId, record.contextId).toolResult;
      return result ? [toolFrame(taskId, record.contextId, result)] : [];
    });
    const send = async (answer: PlannedAnswer, messageId: string) => {
      await this.options.a2a.sendMessage(this.answerMessage(ticket, answer, messageId), { timeoutMs: 3_600_000 }).catch((error) => {
        throw rejected(error);
      });
      await this.accept(ticket, [answer]);
    };
    if (sideband) {
      return defer(async () => {
        for (const answer of answers) await send(answer, `agui-resume-${answer.entry.interruptId}`);
      }).pipe(concatMap(() => concat(of(...recovery, ...toolResults), this.observeTask(taskId, flow))));
    }
    const last = answers[answers.length - 1]!;
    const streamed = defer(() =>
      this.options.a2a.sendStreamingMessage(
        this.answerMessage(ticket, last, `agui-resume-${ticket.request.runId}-${last.entry.interruptId}`),
        { flow },
      ),
    ).pipe(
      catchError((error: unknown) => throwError(() => rejected(error))),
      throwIfEmpty(() => new RunError("A2A_UNAVAILABLE", messageText("a2a.interruptResponseRejected"))),
      concatMap((frame, index) =>
        // Missed pipeline events are shown once the answer is accepted, before what follows it.
        index === 0 ? from(this.accept(ticket, [last])).pipe(concatMap(() => of(...recovery, frame, ...toolResults))) : of(frame),
      ),
    );
    return concat(
      defer(async () => {
        for (const answer of answers.slice(0, -1)) await send(answer, `agui-resume-${ticket.request.runId}-${answer.entry.interruptId}`);
      }).pipe(concatMap(() => EMPTY)),
      streamed,
      // The kernel may close the answer stream before the turn's end: follow the task to its real end.
      defer(() => this.observeTask(taskId, flow)),
    );
  }

  private answerMessage(ticket: RunTicket, answer: PlannedAnswer, messageId: string) {
    const { request, record, language } = ticket;
    const encoded = encodeAnswer(answer, record.execution.taskId!, record.contextId);
    return buildUserMessage({
      messageId,
      contextId: record.contextId,
      taskId: record.execution.taskId!,
      parts: encoded.parts,
      metadata: { ...buildIacCodeMetadata({ ...request.iacCode, cwd: record.cwd, language }), ...encoded.metadata },
    });
  }

  /** The kernel took these answers: record them so a replay never applies them twice. */
  private async accept(ticket: RunTicket, answers: PlannedAnswer[]): Promise<void> {
    const { record } = ticket;
    for (const answer of answers) {
      const id = answer.entry.interruptId;
      rememberAppliedDigest(record, { executionId: record.execution.executionId, interruptId: id, digest: answer.digest }, this.window);
      delete record.execution.pending[id];
    }
    await this.persist(record).catch((error) =>
      this.failClosed(ticket, error, messageText("state.answerCommitFailed")),
    );
  }

  /** What parallel pipeline work emitted while the run was parked (reference-adapter §4.4 step 5). */
  private async pipelineRecovery(record: ThreadRecord): Promise<A2AStreamResponse | undefined> {
    const execution = record.execution;
    if (execution.taskId === null || (execution.pipelineSequence === 0 && execution.pipelineOpenSteps.length === 0)) return undefined;
    const state = await this.options.a2a.pipelineState(execution.taskId, execution.pipelineSequence).catch((error: unknown) => {
      this.options.logger.warn({ err: error, taskId: execution.taskId }, "pipeline recovery failed");
      return null;
    });
    if (!state || typeof state.snapshot !== "object" || state.snapshot === null) return undefined;
    return {
      statusUpdate: {
        taskId: execution.taskId,
        contextId: record.contextId,
        metadata: { iac_code: { pipelineSnapshot: state.snapshot, pipelineBatch: { events: state.events ?? [] } } },
      },
    } as A2AStreamResponse;
  }

  /** Snapshot then live frames of a task; a task that is no longer active answers with its final snapshot. */
  private observeTask(taskId: string, flow: FlowGate): Observable<A2AStreamResponse> {
    const snapshot = defer(() => this.options.a2a.getTask(taskId)).pipe(map((task) => ({ task: withoutText(task) })));
    return this.options.a2a.subscribeToTask(taskId, { flow }).pipe(
      map((frame) => ("task" in frame ? { task: withoutText(frame.task) } : frame)),
      catchError((error: unknown) => {
        if (error instanceof A2AJsonRpcError) return snapshot;
        return throwError(() => toRunError(error, "A2A_UNAVAILABLE"));
      }),
      (live) => concat(live, snapshot),
      catchError((error: unknown) => throwError(() => toRunError(error, "A2A_UNAVAILABLE"))),
    );
  }

  /** Persist what `event` reveals before it is written; fail closed by cancelling the A2A task. */
  private commitBeforeEmit(
    ticket: RunTicket,
    event: AguiEvent,
    parking: readonly PendingInterrupt[],
  ): Promise<void> | undefined {
    const record = ticket.record;
    if (event.type === EventType.CUSTOM && (event as { name: string }).name === "iac-code.session.v1") {
      return this.persist(record).catch((error) =>
        this.failClosed(ticket, error, messageText("state.mappingCommitFailed")),
      );
    }
    if (event.type === EventType.RUN_FINISHED && (event as { outcome?: { type: string } }).outcome?.type === "interrupt") {
      if (record.terminalExecutionIds.includes(record.execution.executionId)) {
        // The cancel extension ended this execution while the run was on its way here (a re-shown
        // interrupt has no kernel stream to say so): announcing or storing its interrupts would revive it.
        return Promise.reject(new RunError("CANCELLED", messageText("run.cancelled")));
      }
      // Marked before the write, so a client that drops now does not cancel a run that is parking.
      ticket.interrupted = true;
      record.execution.interruptedRunId = ticket.request.runId;
      // A re-show announces the pending set as it is: its synthetic frame lists the inputs as pending
      // permissions, which would otherwise mark them sideband and change how the answer is delivered.
      if (ticket.kind !== "reshow") for (const { input, interrupt } of parking) {
        const expiresAt = interrupt.expiresAt;
        putOwn(record.execution.pending, input.value.inputId, {
          value: input.value,
          sideband: input.sideband,
          ...(expiresAt !== undefined && { expiresAt }),
        });
      }
      return this.persist(record).catch((error) => {
        record.execution.pending = {};
        ticket.interrupted = false;
        return this.failClosed(ticket, error, messageText("state.interruptCommitFailed"));
      });
    }
    return undefined;
  }

  private async failClosed(ticket: RunTicket, error: unknown, english: string): Promise<never> {
    this.options.logger.error({ err: error, threadId: ticket.request.threadId }, english);
    await this.cancelUpstream(ticket.record);
    markTerminal(ticket.record, this.window);
    await this.persist(ticket.record).catch(() => undefined);
    throw new RunError("STATE_PERSISTENCE_FAILED", english);
  }

  private async release(ticket: RunTicket): Promise<void> {
    const { threadId } = ticket.request;
    const record = ticket.record;
    if (!ticket.interrupted && Object.keys(record.execution.pending).length === 0 && (ticket.abandoned || abandonsTask(ticket.terminal))) {
      // The client left an active run, or the stream broke: nobody will read the task, so stop it upstream.
      await this.cancelUpstream(record);
    }
    await this.lock.run(threadId, async () => {
      if (this.activeRuns.get(threadId) === ticket) this.activeRuns.delete(threadId);
      if (Object.keys(record.execution.pending).length === 0) {
        markTerminal(record, this.window);
        await this.persist(record).catch((error) => this.options.logger.warn({ err: error, threadId }, "end-of-run write failed"));
        this.threads.delete(threadId);
      }
    });
    this.logRun(ticket);
    this.options.onActivity?.();
    const metrics = this.options.metrics;
    if (metrics) {
      metrics.interruptsPending.set(this.pendingInterruptCount);
      recordRun(metrics, ticket.terminal as Parameters<typeof recordRun>[1]);
    }
  }

  private logRun(ticket: RunTicket): void {
    const t = ticket.terminal as { type?: string; code?: string; outcome?: { type: string } } | undefined;
    this.options.logger.info(
      {
        requestId: ticket.requestId,
        threadId: ticket.request.threadId,
        runId: ticket.request.runId,
        executionId: ticket.record.execution.executionId,
        taskId: ticket.record.execution.taskId ?? ticket.record.execution.lastTaskId,
        outcome: t === undefined ? "disconnected" : t.type === EventType.RUN_ERROR ? "error" : t.outcome?.type ?? "success",
        ...(t?.code !== undefined && { code: t.code }),
        durationMs: Date.now() - ticket.startedAt,
      },
      "run finished",
    );
  }

  private async cancelUpstream(record: ThreadRecord): Promise<void> {
    const taskId = record.execution.taskId;
    if (taskId === null) return;
    try {
      await this.options.a2a.cancelTask(taskId);
    } catch (error) {
      this.options.logger.warn({ err: error, taskId }, "CancelTask failed");
    }
  }

  /**
   * The observer route: a read-only re-attachment to a running execution (GetTask snapshot, then
   * SubscribeToTask). It never writes state, never cancels, and ends with exactly one terminal event.
   */
  async observe(executionId: string, threadId: string, runId: string, rosInvocationId: string, language: Language): Promise<Observable<AguiOutput>> {
    const record = await this.loadThread(threadId);
    const execution = record?.execution;
    if (!record || !execution || execution.executionId !== executionId || execution.taskId === null) {
      throw new AdmissionError(404, "EXECUTION_NOT_FOUND", messageText("execution.notFound"));
    }
    if (execution.rosInvocationId !== rosInvocationId || runDigestOf(record, runId) === undefined) {
      throw new AdmissionError(404, "EXECUTION_NOT_FOUND", messageText("execution.notFound"));
    }
    const taskId = execution.taskId;
    const snapshot = defer(() => this.options.a2a.getTask(taskId)).pipe(
      map((task): A2AStreamResponse => ({ task: withoutText(task) })),
      catchError((error: unknown) => throwError(() => toRunError(error, "A2A_UNAVAILABLE"))),
    );
    const live = this.options.a2a.subscribeToTask(taskId).pipe(
      // An idle task answers -32001: the snapshot already said all there is.
      catchError((error: unknown) => (error instanceof A2AJsonRpcError ? EMPTY : throwError(() => toRunError(error, "A2A_UNAVAILABLE")))),
    );
    return concat(snapshot, live).pipe(
      createAguiPipeline({
        threadId,
        runId,
        contextId: record.contextId,
        taskId,
        session: {
          executionId,
          rosInvocationId,
          ...(record.iacCodeSessionId !== null && { sessionId: record.iacCodeSessionId }),
          emitOn: "first-frame",
        },
        isInputApplied: (inputId) =>
          record.appliedResumeDigests.some((d) => d.executionId === executionId && d.interruptId === inputId),
        historyFallback: false,
        heartbeat: { intervalMs: this.options.heartbeatMs },
        language,
        translate: (english, lang) => localize(normalizeLanguage(lang) ?? language, english),
      }),
    );
  }

  /** The cancel extension (reference-adapter §8.3); upstream failures surface as A2A_UNAVAILABLE. */
  cancel(executionId: string, threadId: string, rosInvocationId: string): Promise<CancelOutcome> {
    return this.lock.run(threadId, async () => {
      const record = await this.loadThread(threadId, true);
      if (!record) return "not_found";
      const execution = record.execution;
      if (execution.executionId !== executionId) {
        return record.terminalExecutionIds.includes(executionId) ? "already_terminal" : "not_found";
      }
      if (execution.rosInvocationId !== rosInvocationId) return "not_found";
      const live = this.activeRuns.has(threadId);
      const pending = Object.keys(execution.pending).length > 0;
      if (!live && !pending && execution.taskId === null) return "already_terminal";
      if (execution.taskId !== null) {
        try {
          await this.options.a2a.cancelTask(execution.taskId);
        } catch (error) {
          // -32002: the kernel already finished the task.
          if (!(error instanceof A2AJsonRpcError && error.code === -32002)) throw toRunError(error, "A2A_UNAVAILABLE");
        }
      }
      execution.pending = {};
      markTerminal(record, this.window);
      this.threads.set(threadId, record);
      await this.persist(record);
      if (!live) this.threads.delete(threadId);
      return "cancelled";
    });
  }

  /**
   * Start-up recovery: every thread whose state says a run was active when the process stopped gets that
   * run's A2A task cancelled and the mark cleared (the same happens on a thread's next access, see
   * loadThread). Resolves with how many were recovered; never rejects.
   */
  async recoverAbandonedRuns(): Promise<number> {
    const list = this.options.store.threadIds;
    if (!list) return 0;
    let recovered = 0;
    try {
      const ids = await list.call(this.options.store);
      for (const threadId of ids) {
        await this.lock
          .run(threadId, async () => {
            if (this.threads.has(threadId)) return;
            const record = await this.options.store.load(threadId);
            if (record && (await this.recoverAbandoned(record))) recovered++;
          })
          .catch((error: unknown) => this.options.logger.warn({ err: error, threadId }, "start-up recovery skipped a thread"));
      }
    } catch (error) {
      this.options.logger.warn({ err: error }, "start-up recovery could not list the threads");
    }
    return recovered;
  }

  /**
   * A record read from the store (so no run of this process holds it) whose execution still names a task
   * with no interrupt pending: a run was active when the gateway stopped. Nobody will read that task again,
   * so it is cancelled upstream, as release() would have done, and the mark cleared.
   */
  private async recoverAbandoned(record: ThreadRecord): Promise<boolean> {
    const execution = record.execution;
    if (execution.taskId === null || Object.keys(execution.pending).length > 0 || this.activeRuns.has(record.threadId)) return false;
    this.options.logger.warn(
      { threadId: record.threadId, taskId: execution.taskId, executionId: execution.executionId },
      "a run was active when the gateway stopped: cancelling its A2A task",
    );
    await this.cancelUpstream(record);
    markTerminal(record, this.window);
    await this.persist(record);
    return true;
  }

  /** `recover`: only under the thread's lock (admission, cancel), where a recovery write cannot race a run. */
  private async loadThread(threadId: string, recover = false): Promise<ThreadRecord | undefined> {
    const cached = this.threads.get(threadId);
    if (cached) return cached;
    try {
      const record = await this.options.store.load(threadId);
      if (record && recover) {
        await this.recoverAbandoned(record).catch((error: unknown) =>
          this.options.logger.warn({ err: error, threadId }, "recovery of an abandoned run could not be written"),
        );
      }
      return record;
    } catch (error) {
      if (error instanceof StateUnavailableError) {
        this.options.logger.warn({ err: error, threadId }, "thread state unavailable");
        throw admission.stateUnavailable();
      }
      throw error;
    }
  }

  /** Writes of one thread are queued, each serializing the record as it is when its turn comes. */
  private persist(record: ThreadRecord): Promise<void> {
    const previous = this.saves.get(record.threadId) ?? Promise.resolve();
    const metrics = this.options.metrics;
    const save = () => this.options.store.save(record);
    const next = previous.catch(() => undefined).then(() => (metrics ? timeResult(metrics.stateWriteLatency, save) : save()));
    this.saves.set(record.threadId, next);
    void next.catch(() => undefined).then(() => {
      if (this.saves.get(record.threadId) === next) this.saves.delete(record.threadId);
    });
    return next;
  }
}

function newThreadRecord(threadId: string, cwd: string, userId: string | null, rosInvocationId: string, executionId: string): ThreadRecord {
  return {
    schemaVersion: 1,
    threadId,
    contextId: contextIdForThread(threadId),
    cwd,
    userId,
    iacCodeSessionId: null,
    execution: {
      executionId,
      rosInvocationId,
      taskId: null,
      lastTaskId: null,
      pipelineSequence: 0,
      pipelineOpenSteps: [],
      pending: idRecord(),
    },
    runDigests: [],
    appliedResumeDigests: [],
    terminalExecutionIds: [],
  };
}

/** A new normal turn starts a new execution; the context and the iac-code session are kept. */
function rotateExecution(record: ThreadRecord, rosInvocationId: string, executionId: string, window: number): void {
  const old = record.execution;
  rememberTerminalExecution(record, old.executionId, window);
  record.execution = {
    executionId,
    rosInvocationId,
    taskId: null,
    lastTaskId: old.taskId ?? old.lastTaskId,
    pipelineSequence: 0,
    pipelineOpenSteps: [],
    pending: idRecord(),
  };
}

function markTerminal(record: ThreadRecord, window: number): void {
  const execution = record.execution;
  if (execution.taskId !== null) execution.lastTaskId = execution.taskId;
  execution.taskId = null;
  rememberTerminalExecution(record, execution.executionId, window);
}

/** Runs that end this way leave their A2A task running unless the gateway cancels it. */
function abandonsTask(terminal: AguiEvent | undefined): boolean {
  if (terminal === undefined) return true;
  const code = (terminal as { code?: string }).code;
  return terminal.type === EventType.RUN_ERROR && (code === "A2A_UNAVAILABLE" || code === "A2A_PROTOCOL_ERROR");
}

function boundedUpstreamId(id: string): string {
  if (!isBoundedId(id)) throw oversizedFrame();
  return id;
}

function boundedOpenSteps(open: string[]): string[] {
  if (open.length > UPSTREAM_LIMITS.maxOpenSteps || !open.every((key) => isBoundedId(key, UPSTREAM_LIMITS.maxStepKeyCodePoints))) {
    throw oversizedFrame();
  }
  return open;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A resume reusing the id of the run that ended at the thread's pending interrupts (DESIGN: more lenient, 2). */
function resumesUnderInterruptedRun(record: ThreadRecord, runId: string): boolean {
  return record.execution.interruptedRunId === runId && Object.keys(record.execution.pending).length > 0;
}

function allExpired(record: ThreadRecord, now: number): boolean {
  const entries = Object.values(record.execution.pending);
  return entries.length > 0 && entries.every((e) => e.expiresAt !== undefined && Date.parse(e.expiresAt) <= now);
}

/** A frame that shows the whole pending set, so the projection announces it as one interrupt outcome. */
function pendingFrame(record: ThreadRecord): A2AStreamResponse {
  return {
    statusUpdate: {
      taskId: record.execution.taskId!,
      contextId: record.contextId,
      status: { state: "TASK_STATE_INPUT_REQUIRED" },
      metadata: { iac_code: { pendingPermissions: Object.values(record.execution.pending).map((p) => ({ ...p.value, required: true })) } },
    },
  };
}

function toolFrame(taskId: string, contextId: string, result: { toolCallId: string; content: string }): A2AStreamResponse {
  return {
    statusUpdate: {
      taskId,
      contextId,
      status: { state: "TASK_STATE_WORKING" },
      metadata: { iac_code: { tool: { status: "completed", toolUseId: result.toolCallId, result: result.content } } },
    },
  };
}

/** A snapshot's text was already streamed by earlier runs; only its state, tools and inputs matter now. */
function withoutText(task: A2ATask): A2ATask {
  const { history: _history, ...rest } = task;
  if (!rest.status?.message) return rest;
  const { message: _message, ...status } = rest.status;
  return { ...rest, status };
}

/** The kernel refused an answer before accepting it: the interrupt stays pending and can be retried. */
function rejected(error: unknown): RunError {
  const mapped = toRunError(error, "A2A_UNAVAILABLE");
  if (error instanceof A2AJsonRpcError && mapped.code === "A2A_UNAVAILABLE") {
    return new RunError("A2A_UNAVAILABLE", messageText("a2a.interruptResponseRefused"));
  }
  return mapped;
}

/** Edge errors → the run's error code. */
export function toRunError(error: unknown, fallback: "A2A_EXECUTION_FAILED" | "A2A_UNAVAILABLE" = "A2A_EXECUTION_FAILED"): RunError {
  if (error instanceof RunError) return error;
  if (error instanceof A2AJsonRpcError) {
    const data = error.data as { code?: unknown; retryable?: unknown } | undefined;
    if (data && typeof data === "object" && data.code === "SESSION_BACKUP_NOT_READY" && data.retryable === true) {
      return new RunError("SESSION_BACKUP_NOT_READY", messageText("a2a.sessionBackupNotReady"));
    }
    return fallback === "A2A_UNAVAILABLE"
      ? new RunError("A2A_UNAVAILABLE", messageText("a2a.unavailable"))
      : new RunError("A2A_EXECUTION_FAILED", messageText("a2a.executionFailed"));
  }
  return new RunError("A2A_UNAVAILABLE", messageText("a2a.unavailable"));
}

export { AdmissionError };
