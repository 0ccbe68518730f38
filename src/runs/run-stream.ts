// The run's AG-UI stream: the A2A frames of its kind (turn, resume, re-shown interrupts) projected by the
// pipeline, with what each event reveals persisted before it is written, and the run released at its end.
import { EventType } from "@ag-ui/core";
import { Observable, concatMap, defer, finalize, of, tap, throwError } from "rxjs";
import {
  RunError,
  createAguiPipeline,
  isProjectionFact,
  type A2AStreamResponse,
  type AguiEvent,
  type AguiOutput,
  type AguiPipelineOptions,
  type PendingInterrupt,
} from "../../operators/index.js";
import type { FlowGate, PacedUpstream } from "../a2a/index.js";
import type { ThreadRecord } from "../state/thread-store.js";
import { localize, messageText, normalizeLanguage } from "../i18n/index.js";
import { recordRun } from "../ops/metrics.js";
import { putOwn, rememberTextSegment } from "../state/windows.js";
import { declaresAgui1 } from "./protocol.js";
import { interruptsOf } from "./resume.js";
import { appliedBy, plannedFrames, prepareResume } from "./resume-flow.js";
import { cancelUpstream, failClosed, type RunContext, type RunTicket } from "./run-context.js";
import { pendingFrame, turnFrames } from "./task-frames.js";
import { boundedOpenSteps, boundedUpstreamId, hasPending, markTerminal } from "./thread-record.js";

/** How a run ended, as its stream saw it: written by that stream only, read by its release. */
interface RunEnding {
  /** Set once the run's terminal event has been produced (after its durable writes). */
  terminal?: AguiEvent;
  /** The run ended at an interrupt: it no longer depends on its connection. */
  interrupted: boolean;
}

/** Unsubscribing before its terminal event is a client disconnect. */
export function streamRun(context: RunContext, ticket: RunTicket, flow: FlowGate): Observable<AguiOutput> {
  return defer(() => runEvents(context, ticket, flow, { interrupted: false }));
}

function runEvents(context: RunContext, ticket: RunTicket, flow: FlowGate, ending: RunEnding): Observable<AguiOutput> {
  const { request, record, language } = ticket;
  const execution = record.execution;
  // The interrupts of the RUN_FINISHED that comes next, from the projection's "interrupts" fact.
  let parking: PendingInterrupt[] = [];
  // A re-shown interrupt is projected like a resume that announces its pending set.
  const resume = ticket.kind !== "turn";
  const translateFor = (english: string, lang?: string) => localize(normalizeLanguage(lang) ?? language, english);
  // The kernel is read only as fast as the client's socket takes the events and, while a durable write is in
  // flight, not at all: frames would only queue up.
  let committing: Promise<void> | undefined;
  const upstream = context.a2a.pacedBy({ ready: () => committing ?? flow.ready() });
  // Answers applied before this run; a resume adds the ones it delivers, all accepted before any frame is read.
  const appliedBefore = record.appliedResumeDigests.filter((d) => d.executionId === execution.executionId).map((d) => d.interruptId);
  // The execution as the run found it, read now: a resume's plan changes `pending` before the projection starts
  // (inputs it adds have no expiry yet; the projection gives them one because it does not know them).
  const taskId = resume && execution.taskId !== null ? execution.taskId : undefined;
  const knownInterrupts = new Map(interruptsOf(execution.pending, translateFor).map((i) => [i.id, i]));
  const { pipelineOpenSteps: openSteps, pipelineSequence } = execution;
  const textSnapshotDigests = execution.textSnapshotDigests ?? [];
  // The options object itself is made when the projection starts, so an idle stream holds one copy; the session
  // is read then too: a turn may have moved the thread to a new session first.
  const pipelineOptions = (appliedInputIds: readonly string[]): AguiPipelineOptions => ({
    threadId: request.threadId,
    session: sessionOf(record, resume),
    appliedInputIds,
    runId: request.runId,
    ...(request.parentRunId !== undefined && { parentRunId: request.parentRunId }),
    contextId: record.contextId,
    ...(taskId !== undefined && { taskId }),
    knownInterrupts,
    openSteps,
    pipelineSequence,
    historyFallback: !resume,
    interruptTtlMs: context.options.interruptTtlMs,
    heartbeat: { intervalMs: context.options.heartbeatMs },
    language,
    translate: translateFor,
    cancelledOutcome: declaresAgui1(request.protocolVersion),
    textSnapshotDigests,
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
      const write = commitBeforeEmit(context, ticket, ending, item, parking);
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
  });
  const lapsed = context.threads.claimLapsed(request.threadId);
  const project = (frames: Observable<A2AStreamResponse>, applied: readonly string[]) =>
    (lapsed ? failWhenLapsed(frames, lapsed, () => leaseLost(context, ticket)) : frames).pipe(createAguiPipeline(pipelineOptions(applied)));
  const events =
    ticket.kind === "reshow"
      ? project(of(pendingFrame(record)), appliedBefore)
      : ticket.kind === "turn"
        ? context.threads.shared
          ? defer(() => sessionHere(upstream, ticket)).pipe(concatMap(() => project(turnFrames(upstream, ticket), appliedBefore)))
          : project(turnFrames(upstream, ticket), appliedBefore)
        : // The resume is planned (and refused) before its projection starts, so the projection knows which answers it applies.
          defer(() => prepareResume(context, ticket).then((prepared) => ({ prepared }), (error: unknown) => ({ error }))).pipe(
            concatMap((planned) =>
              "error" in planned
                ? project(throwError(() => planned.error), appliedBefore)
                : project(plannedFrames(context, upstream, ticket, planned.prepared), [...appliedBefore, ...appliedBy(planned.prepared)]),
            ),
          );
  return events.pipe(
    tap((item) => {
      if (item.type === EventType.RUN_FINISHED || item.type === EventType.RUN_ERROR) ending.terminal = item;
    }),
    finalize(() => {
      const done = releaseRun(context, ticket, ending).finally(() => context.releasing.delete(done));
      context.releasing.add(done);
    }),
  );
}

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
 * With several replicas a thread can come to a kernel that never had its session (each replica beside a kernel of
 * its own, the one before gone). When this kernel says it cannot restore the session, the thread goes on in a new
 * one instead of failing every turn on the session identity; the old session's history stays with the old kernel.
 * A kernel without the restore route, or one that does not answer, is left to the turn itself.
 */
async function sessionHere(upstream: PacedUpstream, ticket: RunTicket): Promise<void> {
  const record = ticket.record;
  const sessionId = record.iacCodeSessionId;
  if (sessionId === null) return;
  const restored = await upstream.ensureSessionRestored({ cwd: record.cwd, sessionId }).catch(() => "unsupported" as const);
  if (restored !== false) return;
  ticket.logger.warn({ sessionId }, "this replica's kernel does not have the thread's iac-code session: the thread goes on in a new one");
  record.iacCodeSessionId = null;
}

/** Persist what `event` reveals before it is written; fail closed by cancelling the A2A task. */
function commitBeforeEmit(
  context: RunContext,
  ticket: RunTicket,
  ending: RunEnding,
  event: AguiEvent,
  parking: readonly PendingInterrupt[],
): Promise<void> | undefined {
  const record = ticket.record;
  if (event.type === EventType.CUSTOM && (event as { name: string }).name === "iac-code.session.v1") {
    return context.threads.persist(record).catch((error) => failClosed(context, ticket, error, messageText("state.mappingCommitFailed")));
  }
  if (event.type === EventType.RUN_FINISHED && (event as { outcome?: { type: string } }).outcome?.type === "interrupt") {
    if (record.terminalExecutionIds.includes(record.execution.executionId)) {
      // The cancel extension ended this execution while the run was on its way here (a re-shown
      // interrupt has no kernel stream to say so): announcing or storing its interrupts would revive it.
      return Promise.reject(new RunError("CANCELLED", messageText("run.cancelled")));
    }
    // Marked before the write, so a client that drops now does not cancel a run that is parking.
    ending.interrupted = true;
    record.execution.interruptedRunId = ticket.request.runId;
    // A re-show parks nothing in our kernel: the task stays wherever it was parked.
    if (context.threads.shared && ticket.kind !== "reshow") record.execution.parkedBy = context.threads.replicaId;
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
    return context.threads.persist(record).catch((error) => {
      record.execution.pending = {};
      ending.interrupted = false;
      return failClosed(context, ticket, error, messageText("state.interruptCommitFailed"));
    });
  }
  return undefined;
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

/**
 * The run cannot write its state any more: it ends like a failed durable write, and its task is stopped once
 * the run has stopped reading it (the kernel's CANCELED frame must not become the run's outcome).
 */
function leaseLost(context: RunContext, ticket: RunTicket): Error {
  ticket.logger.error("the thread's lease lapsed during the run: ending it");
  const stopping = cancelUpstream(context, ticket.record).finally(() => context.releasing.delete(stopping));
  context.releasing.add(stopping);
  return new RunError("STATE_PERSISTENCE_FAILED", messageText("state.leaseLost"));
}

/** Runs that end this way leave their A2A task running unless the gateway cancels it. */
function abandonsTask(terminal: AguiEvent | undefined): boolean {
  if (terminal === undefined) return true;
  const code = (terminal as { code?: string }).code;
  return terminal.type === EventType.RUN_ERROR && (code === "A2A_UNAVAILABLE" || code === "A2A_PROTOCOL_ERROR");
}

async function releaseRun(context: RunContext, ticket: RunTicket, ending: RunEnding): Promise<void> {
  const { threadId } = ticket.request;
  const record = ticket.record;
  if (!ending.interrupted && !hasPending(record) && (context.abandoned.has(ticket) || abandonsTask(ending.terminal))) {
    // The client left an active run, or the stream broke: nobody will read the task, so stop it upstream.
    await cancelUpstream(context, record);
  }
  await context.threads.locked(threadId, async () => {
    if (context.activeRuns.get(threadId) === ticket) context.activeRuns.delete(threadId);
    if (!hasPending(record)) {
      markTerminal(record, context.window);
      await context.threads.persist(record).catch((error) => ticket.logger.warn({ err: error }, "end-of-run write failed"));
      context.threads.forget(threadId);
    }
    // A shared store's lease goes after the last write: from now on any replica may take the thread.
    await context.threads.unclaim(threadId);
  });
  logRun(ticket, ending.terminal);
  context.options.onActivity?.();
  const metrics = context.options.metrics;
  if (metrics) {
    metrics.interruptsPending.set(pendingInterruptCount(context));
    recordRun(metrics, ending.terminal as Parameters<typeof recordRun>[1]);
  }
}

export function pendingInterruptCount(context: RunContext): number {
  let n = 0;
  for (const record of context.threads.loadedRecords()) n += Object.keys(record.execution.pending).length;
  return n;
}

function logRun(ticket: RunTicket, terminal: AguiEvent | undefined): void {
  const t = terminal as { type?: string; code?: string; outcome?: { type: string } } | undefined;
  ticket.logger.info(
    {
      executionId: ticket.record.execution.executionId,
      taskId: ticket.record.execution.taskId ?? ticket.record.execution.lastTaskId,
      outcome: t === undefined ? "disconnected" : t.type === EventType.RUN_ERROR ? "error" : (t.outcome?.type ?? "success"),
      ...(t?.code !== undefined && { code: t.code }),
      durationMs: Date.now() - ticket.startedAt,
    },
    "run finished",
  );
}
