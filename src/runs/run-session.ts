// One admitted run, from its first frame to the release of its thread: where its frames come from (a turn,
// a resume, re-shown interrupts), what each event reveals made durable before it is written, one pacing gate
// (the client's socket and the write in flight), and the run's end committed before its terminal event.
import { EventType } from "@ag-ui/core";
import { Observable, concatMap, defer, finalize, of, throwError } from "rxjs";
import {
  RunError,
  commitBeforeEmit,
  createAguiPipeline,
  isProjectionFact,
  type A2APart,
  type A2AStreamResponse,
  type AguiEvent,
  type AguiOutput,
  type AguiPipelineOptions,
  type PendingInterrupt,
} from "../../operators/index.js";
import type { FlowGate, PacedUpstream } from "../a2a/index.js";
import { runErrorOf } from "../errors.js";
import { localize, messageText, normalizeLanguage, type Language } from "../i18n/index.js";
import { recordRun, runOutcomeOf } from "../ops/metrics.js";
import { ATTR, type TraceSpan } from "../ops/trace.js";
import type { HandOver } from "../hand-over.js";
import type { ParkedSpan, ThreadRecord } from "../state/thread-store.js";
import type { AdmittedRequest } from "./input.js";
import type { CheckedWorkspace } from "./cwd.js";
import { declaresAgui1 } from "./protocol.js";
import { interruptsOf } from "./resume.js";
import { appliedBy, plannedFrames, prepareResume } from "./resume-flow.js";
import { cancelTask, type RunDeps } from "./run-context.js";
import type { RunLog } from "./run-log.js";
import { TaskNaming, followTask, pendingFrame, turnFrames } from "./task-frames.js";
import {
  endExecution,
  foldFact,
  hasPending,
  inOrder,
  isRefusal,
  parkInterrupts,
  rememberTextSegment,
  startNewSession,
  stillRunning,
  type Transition,
} from "./transitions.js";

/** An admitted run: everything its stream needs, decided under the thread lock. */
export interface RunTicket {
  readonly request: AdmittedRequest;
  /** sha256 of the request's body (a reconnect repeats it). */
  readonly digest: string;
  /** The record as admission wrote it. */
  readonly record: ThreadRecord;
  readonly language: Language;
  /**
   * "reshow": an AG-UI 1.0 turn while interrupts are pending, answered with those interrupts again; "adopt": a run
   * a stopped process left streaming, followed to its end (src/runs/adopt.ts).
   */
  readonly kind: "turn" | "resume" | "reshow" | "adopt";
  /**
   * A turn's user message parts, taken by the turn's kernel request: a run that waits (minutes, for a permission)
   * keeps none of its prompt, which may be megabytes.
   */
  readonly parts: HandOver<A2APart[]>;
  readonly messageId: string;
  readonly startedAt: number;
  /** Correlates every log line of this run. */
  readonly requestId: string;
  /** The service's logger, each line with this run's ids (requestId, threadId, runId). */
  readonly log: RunLog;
  /** The run that had ended at the pending interrupts before this one was admitted (a refused resume gives it back). */
  readonly interruptedRunId: string | undefined;
  /** The checked workspace; a turn's is made at admission, a resume's once its answers are to be delivered. */
  readonly workspace: CheckedWorkspace;
  /** The run's span, from admission to the run's end; its kernel calls and durable writes are its children. */
  readonly span: TraceSpan;
  /** A resume: the span of the run that parked at the interrupts it answers (tracing was on then). */
  readonly parkedSpan: ParkedSpan | undefined;
}

export class RunSession {
  /** What the run knows of its thread: the admitted record with what its stream revealed folded in. */
  private known: ThreadRecord;
  /** Transitions folded since the last durable write, written with the next one. */
  private staged: Transition[] = [];
  /** The interrupts of the RUN_FINISHED that comes next, from the projection's "interrupts" fact. */
  private parking: readonly PendingInterrupt[] = [];
  /** The durable write in flight: the kernel is not read meanwhile (frames would only queue up). */
  private writing: Promise<void> | undefined;
  /** The run's end, once begun: the record's last write and the thread's release. */
  private ending: Promise<void> | undefined;
  /** The terminal event the client is sent (undefined: it went away first). */
  private terminal: AguiEvent | undefined;
  /** Nobody will read the A2A task after this run: its end cancels it (a lost write, a lost lease, a cancel race). */
  private abandonsTask = false;
  /** The wait at the interrupts was reported (once, when the kernel took the first answer). */
  private waitReported = false;
  /** A turn's: the task its stream named first, for a run whose client left before that was folded in. */
  private turnTask: TaskNaming | undefined;
  /** Settles once the run's end has settled, whenever it begins. */
  private readonly endSettled: Promise<void>;
  private settleEnd!: () => void;

  constructor(
    private readonly deps: RunDeps,
    readonly ticket: RunTicket,
  ) {
    this.known = ticket.record;
    this.endSettled = new Promise((resolve) => (this.settleEnd = resolve));
  }

  /** Resolves once the run's end (its last write, the thread given back) has settled, however it ended. */
  ended(): Promise<void> {
    return this.endSettled;
  }

  /** The run's record as it knows it now. */
  get record(): ThreadRecord {
    return this.known;
  }

  /** Run ids, ended executions and applied answers remembered per thread. */
  get window(): number {
    return this.deps.settings.window;
  }

  /** The run's AG-UI stream. Unsubscribing before its terminal event is a client disconnect. */
  events(flow: FlowGate): Observable<AguiOutput> {
    const upstream = this.deps.kernel.pacedBy({ ready: () => this.writing ?? flow.ready() }, this.ticket.span);
    return defer(() => this.framesOfKind(upstream)).pipe(
      commitBeforeEmit<AguiOutput, AguiEvent>({
        commit: (item) => (item.type === EventType.RUN_FINISHED || item.type === EventType.RUN_ERROR ? this.end(item as AguiEvent) : undefined),
        onFailure: (error) => (this.terminal = runErrorOf(error, this.ticket.language)),
      }),
      // Reported however the end went: a run whose end could not be made durable is logged, counted and its span ended too.
      finalize(() => this.deps.live.track(this.end(undefined).then(() => this.report(), () => this.report()))),
    );
  }

  /** Where the frames come from: one small function per kind of run. */
  private framesOfKind(upstream: PacedUpstream): Observable<AguiOutput> {
    switch (this.ticket.kind) {
      case "turn":
        return this.turn(upstream);
      case "resume":
        return this.resume(upstream);
      case "reshow":
        return this.project(of(pendingFrame(this.known)), this.appliedBefore());
      case "adopt":
        return this.project(followTask(upstream, this.known.execution.taskId!), this.appliedBefore());
    }
  }

  private turn(upstream: PacedUpstream): Observable<AguiOutput> {
    const frames = defer(() => turnFrames(upstream, this.ticket, (this.turnTask = new TaskNaming())));
    if (!this.deps.threads.shared) return this.project(frames, this.appliedBefore());
    return defer(() => this.ensureSession(upstream)).pipe(concatMap(() => this.project(frames, this.appliedBefore())));
  }

  /** The resume is planned (and refused) before its projection starts, so the projection knows which answers it applies. */
  private resume(upstream: PacedUpstream): Observable<AguiOutput> {
    const applied = this.appliedBefore();
    return defer(() => prepareResume(this.deps, this).then((prepared) => ({ prepared }), (error: unknown) => ({ error }))).pipe(
      concatMap((planned) =>
        "error" in planned
          ? this.project(throwError(() => planned.error), applied)
          : this.project(plannedFrames(this.deps, upstream, this, planned.prepared), [...applied, ...appliedBy(planned.prepared)]),
      ),
    );
  }

  /** Answers applied in this execution before the run. */
  private appliedBefore(): string[] {
    const executionId = this.ticket.record.execution.executionId;
    return this.ticket.record.appliedResumeDigests.filter((d) => d.executionId === executionId).map((d) => d.interruptId);
  }

  /**
   * With several replicas a thread can come to a kernel that never had its session (each replica beside a kernel of
   * its own, the one before gone). When this kernel says it cannot restore the session, the thread goes on in a new
   * one instead of failing every turn on the session identity; the old session's history stays with the old kernel.
   * A kernel without the restore route, or one that does not answer, is left to the turn itself.
   */
  private async ensureSession(upstream: PacedUpstream): Promise<void> {
    const sessionId = this.known.iacCodeSessionId;
    if (sessionId === null) return;
    const restored = await upstream.ensureSessionRestored({ cwd: this.known.cwd, sessionId }).catch(() => "unsupported" as const);
    if (restored !== false) return;
    this.ticket.log.warn({ sessionId }, "this replica's kernel does not have the thread's iac-code session: the thread goes on in a new one");
    this.fold(startNewSession);
  }

  private project(frames: Observable<A2AStreamResponse>, appliedInputIds: readonly string[]): Observable<AguiOutput> {
    const lapsed = this.deps.threads.claimLapsed(this.ticket.request.threadId);
    return (lapsed ? failWhenLapsed(frames, lapsed, () => this.leaseLost()) : frames).pipe(createAguiPipeline(this.pipelineOptions(appliedInputIds)));
  }

  private pipelineOptions(appliedInputIds: readonly string[]): AguiPipelineOptions {
    const { request, language, kind } = this.ticket;
    // The execution as the run found it: a resume's plan adds inputs to `pending` before the projection starts
    // (they have no expiry yet; the projection gives them one because it does not know them).
    const { execution, contextId } = this.ticket.record;
    const resume = kind !== "turn";
    const translate = (english: string, lang?: string) => localize(normalizeLanguage(lang) ?? language, english);
    return {
      threadId: request.threadId,
      session: sessionOf(this.known, resume),
      appliedInputIds,
      runId: request.runId,
      ...(request.parentRunId !== undefined && { parentRunId: request.parentRunId }),
      contextId,
      ...(resume && execution.taskId !== null && { taskId: execution.taskId }),
      // Only when there are some: a run holds its options for as long as it streams, and an empty Map is ~100 B.
      ...(Object.keys(execution.pending).length > 0 && { knownInterrupts: new Map(interruptsOf(execution.pending, translate).map((i) => [i.id, i])) }),
      openSteps: execution.pipelineOpenSteps,
      pipelineSequence: execution.pipelineSequence,
      historyFallback: !resume,
      interruptTtlMs: this.deps.settings.interruptTtlMs,
      heartbeat: { intervalMs: this.deps.settings.heartbeatMs },
      language,
      translate,
      cancelledOutcome: declaresAgui1(request.protocolVersion),
      textSnapshotDigests: execution.textSnapshotDigests ?? [],
      commit: (item) => this.commit(item),
    };
  }

  /** What an item of the projection needs before it may be written: nothing, a fold, or a durable write. */
  private commit(item: AguiEvent | { type: string }): Promise<void> | undefined {
    if (item.type === "IAC_CODE_TEXT_SEGMENT") {
      this.fold(rememberTextSegment((item as unknown as { digest: string }).digest));
      return undefined;
    }
    if (isProjectionFact(item)) {
      if (item.fact === "interrupts") this.parking = item.pending;
      else this.fold(foldFact(item));
      return undefined;
    }
    const executionId = this.ticket.record.execution.executionId;
    if (item.type === EventType.CUSTOM && (item as { name: string }).name === "iac-code.session.v1") {
      return this.commitNow(stillRunning(executionId), "state.mappingCommitFailed");
    }
    if (item.type === EventType.RUN_FINISHED && (item as { outcome?: { type: string } }).outcome?.type === "interrupt") {
      const { threads } = this.deps;
      const { span, kind } = this.ticket;
      const parked = this.commitNow(
        parkInterrupts({
          executionId,
          runId: this.ticket.request.runId,
          // A re-show parks nothing in our kernel: the task stays wherever it was parked, and the pending set as
          // it is (its synthetic frame lists the inputs as pending permissions, which would mark them sideband).
          ...(threads.shared && kind !== "reshow" && { parkedBy: threads.replicaId }),
          pending: kind === "reshow" ? [] : this.parking,
          // A re-show leaves the wait where it began.
          ...(span.ref && kind !== "reshow" && { span: { ...span.ref, parkedAt: new Date().toISOString() } }),
        }),
        "state.interruptCommitFailed",
      );
      parked.then(() => {
        const ids = Object.keys(this.known.execution.pending);
        span.event("agui.interrupts.announced", { [ATTR.interruptCount]: ids.length, [ATTR.interruptIds]: ids.join(",") });
      }, noop);
      return parked;
    }
    return undefined;
  }

  /** Folds a transition into what the run knows; it is written with the run's next durable write. */
  private fold(transition: Transition): void {
    const next = transition(this.known);
    if (isRefusal(next)) throw next.refused;
    this.known = next;
    this.staged.push(transition);
  }

  /**
   * Writes what the run folded, then `transition`, under the thread's lock. A refusal ends the run with its own
   * error; a lost write fails closed (the run's end cancels its task, and nothing more is announced).
   */
  commitNow(transition: Transition, failure: Parameters<typeof messageText>[0]): Promise<void> {
    const staged = this.staged;
    this.staged = [];
    const write = this.deps.threads.update(this.ticket.request.threadId, inOrder(...staged, transition), this.ticket.span).then(
      (record) => {
        this.known = record;
      },
      (error: unknown) => {
        this.abandonsTask = true;
        if (error instanceof RunError && error.code === "CANCELLED") throw error;
        this.ticket.log.error({ err: error }, messageText(failure));
        throw new RunError("STATE_PERSISTENCE_FAILED", messageText(failure));
      },
    );
    const settled = write.then(noop, noop);
    this.writing = settled;
    void settled.then(() => {
      if (this.writing === settled) this.writing = undefined;
    });
    return write;
  }

  /**
   * The run's end, once (its terminal event waits for it; a client that left starts it): the task cancelled if
   * nobody will read it, the execution ended unless it parked at interrupts, the thread given back. Rejects when
   * that cannot be made durable: the terminal event becomes STATE_PERSISTENCE_FAILED instead of promising a free thread.
   */
  private end(terminal: AguiEvent | undefined): Promise<void> {
    if (this.ending) return this.ending;
    this.terminal = terminal;
    this.ending = this.release(terminal);
    void this.ending.then(this.settleEnd, this.settleEnd);
    return this.ending;
  }

  private async release(terminal: AguiEvent | undefined): Promise<void> {
    const { deps, ticket } = this;
    const { threadId } = ticket.request;
    await this.writing;
    const parked = hasPending(this.known) && !this.abandonsTask;
    const cancelled = !parked && (this.abandonsTask || abandonsTask(terminal));
    // A client that left before the kernel named the turn's task: the task is cancelled once it is named.
    if (cancelled) await cancelTask(deps, this.known.execution.taskId ?? (await this.turnTask?.named()), ticket.span);
    let durable = true;
    await deps.threads.locked(threadId, async (thread) => {
      deps.live.remove(this);
      const current = await thread.read().catch(() => undefined);
      // A task the run gives up takes its interrupts with it; otherwise interrupts that wait keep the execution open.
      if (this.abandonsTask || !current || !hasPending(current)) {
        const staged = this.staged;
        this.staged = [];
        const ended = endExecution({ window: deps.settings.window, clearPending: this.abandonsTask });
        await thread.update(inOrder(...staged, ended)).catch((error: unknown) => {
          ticket.log.warn({ err: error }, "end-of-run write failed");
          durable = false;
        });
      }
      deps.threads.letGo(threadId);
      // A shared store's lease goes after the last write: from now on any replica may take the thread.
      if (!(await deps.threads.unclaim(threadId))) durable = false;
    }, ticket.span);
    if (!durable && terminal !== undefined) {
      // Fail closed: a run whose end is not durable leaves no task behind that the state does not know of.
      if (!parked && !cancelled) await cancelTask(deps, this.known.execution.taskId, ticket.span);
      throw new RunError("STATE_PERSISTENCE_FAILED", messageText("state.releaseFailed"));
    }
  }

  /**
   * The run cannot write its state any more: it ends like a failed durable write, and its task is stopped by the
   * run's end, once the run has stopped reading it (the kernel's CANCELED frame must not become the run's outcome).
   */
  private leaseLost(): Error {
    this.ticket.log.error({}, "the thread's lease lapsed during the run: ending it");
    this.abandonsTask = true;
    return new RunError("STATE_PERSISTENCE_FAILED", messageText("state.leaseLost"));
  }

  /**
   * The kernel took answers to the interrupts: an event on this run's span and, the first time, the wait itself as
   * a span under the run that parked (begun when it parked, in whatever process), linked to this run.
   */
  answered(interruptIds: readonly string[]): void {
    const { span, parkedSpan } = this.ticket;
    span.event("agui.interrupts.answered", { [ATTR.interruptCount]: interruptIds.length, [ATTR.interruptIds]: interruptIds.join(",") });
    if (this.waitReported || !parkedSpan || !span.ref) return;
    this.waitReported = true;
    const startTime = Date.parse(parkedSpan.parkedAt);
    this.deps.tracer
      .under(parkedSpan, "agui.interrupt.wait", {
        links: [span.ref],
        startTime,
        attributes: { [ATTR.threadId]: this.ticket.request.threadId, [ATTR.interruptIds]: interruptIds.join(","), "agui.resume.run_id": this.ticket.request.runId },
      })
      .end();
  }

  private report(): void {
    const { deps, ticket, terminal } = this;
    logRun(ticket, this.known, terminal);
    traceRun(ticket, this.known, terminal);
    deps.settings.onActivity?.();
    const metrics = deps.settings.metrics;
    if (metrics) recordRun(metrics, terminal as Parameters<typeof recordRun>[1]);
  }
}

function noop(): void {}

function sessionOf(record: ThreadRecord, resume: boolean): NonNullable<AguiPipelineOptions["session"]> {
  return {
    executionId: record.execution.executionId,
    rosInvocationId: record.execution.rosInvocationId,
    ...(record.iacCodeSessionId !== null && { sessionId: record.iacCodeSessionId }),
    // A resume announces the session once the kernel accepted the answer (its first frame).
    emitOn: resume ? "first-frame" : "ids",
  };
}

/**
 * `frames`, failing with `failure()` once `lapsed` resolves: a replica whose claim on the thread lapsed stops
 * reading, since another replica may run the thread now.
 */
function failWhenLapsed<T>(frames: Observable<T>, lapsed: Promise<void>, failure: () => Error): Observable<T> {
  return new Observable<T>((subscriber) => {
    let live = true;
    void lapsed.then(() => live && subscriber.error(failure()));
    const subscription = frames.subscribe(subscriber);
    return () => {
      live = false;
      subscription.unsubscribe();
    };
  });
}

/** Runs that end this way leave their A2A task running unless the gateway cancels it. */
function abandonsTask(terminal: AguiEvent | undefined): boolean {
  if (terminal === undefined) return true;
  const code = (terminal as { code?: string }).code;
  return terminal.type === EventType.RUN_ERROR && (code === "A2A_UNAVAILABLE" || code === "A2A_PROTOCOL_ERROR");
}

type Terminal =
  | { type?: string; code?: string; outcome?: { type: string }; usage?: { inputTokens?: number; outputTokens?: number; provider?: string; model?: string }[] }
  | undefined;

function outcomeOf(t: Terminal): string {
  return t === undefined ? "disconnected" : t.type === EventType.RUN_ERROR ? "error" : (t.outcome?.type ?? "success");
}

/** The run's span gets its outcome and the kernel's token counts, and ends with the run. */
function traceRun(ticket: RunTicket, record: ThreadRecord, terminal: AguiEvent | undefined): void {
  const { span } = ticket;
  if (!span.ref) return;
  const t = terminal as Terminal;
  const usage = t?.usage;
  span.set({
    [ATTR.outcome]: runOutcomeOf(terminal).outcome,
    [ATTR.taskId]: record.execution.taskId ?? record.execution.lastTaskId ?? undefined,
    ...(usage?.length && {
      [ATTR.inputTokens]: usage.reduce((n, u) => n + (u.inputTokens ?? 0), 0),
      [ATTR.outputTokens]: usage.reduce((n, u) => n + (u.outputTokens ?? 0), 0),
      // Named only when the kernel used one provider (one model) for the whole run.
      [ATTR.providerName]: onlyOne(usage.map((u) => u.provider)),
      [ATTR.responseModel]: onlyOne(usage.map((u) => u.model)),
    }),
  });
  if (t?.code !== undefined) span.fail(t.code);
  span.end();
}

function onlyOne(values: readonly (string | undefined)[]): string | undefined {
  const distinct = new Set(values);
  return distinct.size === 1 ? values[0] : undefined;
}

function logRun(ticket: RunTicket, record: ThreadRecord, terminal: AguiEvent | undefined): void {
  const t = terminal as Terminal;
  ticket.log.info(
    {
      executionId: record.execution.executionId,
      taskId: record.execution.taskId ?? record.execution.lastTaskId,
      outcome: outcomeOf(t),
      ...(t?.code !== undefined && { code: t.code }),
      durationMs: Date.now() - ticket.startedAt,
    },
    "run finished",
  );
}
