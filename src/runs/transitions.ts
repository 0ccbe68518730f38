// Everything that may happen to a thread record, each a pure function of the record it is handed: a new
// record, or a refusal. ThreadRepository applies them under the thread's lock and makes the result durable;
// no other code assigns a record field. Time, ids and limits come in as arguments, so a transition's test
// needs no store, no kernel and no clock.
import type { Interrupt } from "@ag-ui/core";
import { RunError, type PendingInterrupt, type ProjectionFact } from "../../operators/index.js";
import { UPSTREAM_LIMITS, isBoundedId, oversizedFrame } from "../a2a/limits.js";
import { contextIdForThread } from "../a2a/index.js";
import { messageText } from "../i18n/index.js";
import type { AppliedResumeDigest, ExecutionRecord, ParkedSpan, PendingEntry, ThreadRecord } from "../state/thread-store.js";
import { idRecord, runDigestOf, withAppliedDigest, withEntries, withRunDigest, withTerminalExecution, withTextSegment } from "../state/windows.js";
import { type Caller, ownerOf } from "./caller.js";
import { admission } from "./errors.js";

/** A transition that does not apply: the error the caller is refused with. Nothing is written. */
export interface Refusal {
  readonly refused: Error;
}

export type Transition = (record: ThreadRecord) => ThreadRecord | Refusal;

export const refuse = (error: Error): Refusal => ({ refused: error });

export function isRefusal<T extends object>(result: T | Refusal): result is Refusal {
  return "refused" in result;
}

/** The transitions one after the other, as one: the first refusal refuses them all. */
export function inOrder(...transitions: readonly Transition[]): Transition {
  return (record) => {
    let current = record;
    for (const transition of transitions) {
      const next = transition(current);
      if (isRefusal(next)) return next;
      current = next;
    }
    return current;
  };
}

const withExecution = (record: ThreadRecord, changes: Partial<ExecutionRecord>): ThreadRecord => ({
  ...record,
  execution: { ...record.execution, ...changes },
});

export function hasPending(record: ThreadRecord): boolean {
  return Object.keys(record.execution.pending).length > 0;
}

/** Every pending interrupt has expired (none pending: false). */
export function allExpired(record: ThreadRecord, now: number): boolean {
  const entries = Object.values(record.execution.pending);
  return entries.length > 0 && entries.every((e) => e.expiresAt !== undefined && Date.parse(e.expiresAt) <= now);
}

/**
 * A resume reusing the id of the run that ended at the thread's interrupts (lenient for CopilotKit's useInterrupt).
 * Also once they are gone (cancelled meanwhile): that resume is told EXECUTION_LOST, as under any other run id.
 */
export function resumesUnderInterruptedRun(record: ThreadRecord, runId: string): boolean {
  return record.execution.interruptedRunId === runId;
}

function freshExecution(executionId: string, rosInvocationId: string, lastTaskId: string | null): ExecutionRecord {
  return { executionId, rosInvocationId, taskId: null, lastTaskId, pipelineSequence: 0, pipelineOpenSteps: [], pending: idRecord() };
}

/**
 * A thread is the caller's to use: a user only its own threads (an ownerless thread is not its own), the trusted
 * server-side caller any thread, and without auth (no users) every thread as before.
 */
export function mayUse(caller: Caller, record: ThreadRecord): boolean {
  return caller.kind !== "user" || (record.owner !== undefined && record.owner === caller.userId);
}

export function newThreadRecord(threadId: string, cwd: string, userId: string | null, rosInvocationId: string, executionId: string, owner?: string): ThreadRecord {
  return {
    schemaVersion: 1,
    threadId,
    contextId: contextIdForThread(threadId),
    cwd,
    userId,
    ...(owner !== undefined && { owner }),
    iacCodeSessionId: null,
    execution: freshExecution(executionId, rosInvocationId, null),
    runDigests: [],
    appliedResumeDigests: [],
    terminalExecutionIds: [],
  };
}

// ── Admission ────────────────────────────────────────────────────────────────────────────────────────────

/** What a request asks of admission, with everything admission needs from outside (ids, time, limits). */
export interface AdmissionRequest {
  threadId: string;
  runId: string;
  /** sha256 of the canonical request body. */
  digest: string;
  resume: boolean;
  rosInvocationId: string;
  userId: string | null;
  /** Who asks: a user becomes the owner of a thread it creates and is refused any other's. */
  caller: Caller;
  cwd: string;
  /** The client declared AG-UI 1.0 or newer. */
  agui1: boolean;
  /** The id a new execution gets (a new thread, a new turn). */
  newExecutionId: string;
  window: number;
  now: number;
  /** This replica holds the thread (always, with a store of its own). */
  claimed: boolean;
  /** A run of this replica streams on the thread. */
  busy: boolean;
  /** The pending interrupts as a RESUME_REQUIRED refusal carries them (localized). */
  interruptsOf: (pending: Readonly<Record<string, PendingEntry>>) => Interrupt[];
}

export interface Admitted {
  /** "reshow": an AG-UI 1.0 turn while interrupts are pending, answered with those interrupts again. */
  kind: "turn" | "resume" | "reshow";
  record: ThreadRecord;
  /** Nobody answered these interrupts in time: their parked A2A task is to be cancelled. */
  expiredTaskId?: string;
}

/**
 * Admission (reference-adapter §8.1): replays and conflicts are refused, a turn starts a new execution (the
 * context and the iac-code session are kept), and the run id is remembered before the run may start.
 */
export function admit(current: ThreadRecord | undefined, request: AdmissionRequest): Admitted | Refusal {
  const { runId, resume } = request;
  if (!current) {
    if (resume) return refuse(admission.executionLost());
    if (!request.claimed) return refuse(admission.threadBusy());
    const record = newThreadRecord(request.threadId, request.cwd, request.userId, request.rosInvocationId, request.newExecutionId, ownerOf(request.caller));
    return { kind: "turn", record: remember(active(record, request.now), request) };
  }
  // Before any other check: a stranger learns nothing of the thread (its run ids, its interrupts, a run on it).
  if (!mayUse(request.caller, current)) return refuse(admission.bindingConflict());
  const seen = runDigestOf(current, runId);
  if (seen !== undefined && !(resume && seen !== request.digest && resumesUnderInterruptedRun(current, runId))) {
    return refuse(seen === request.digest ? admission.duplicateRunId() : admission.runIdConflict());
  }
  if (!request.claimed || request.busy) return refuse(admission.threadBusy());
  if (current.cwd !== request.cwd || current.userId !== request.userId) return refuse(admission.bindingConflict());
  let record = current;
  let expiredTaskId: string | undefined;
  if (!resume && allExpired(record, request.now)) {
    // Nobody answered in time: the interrupt is gone and so is the parked A2A task.
    expiredTaskId = record.execution.taskId ?? undefined;
    record = withExecution(record, { pending: idRecord() });
  }
  let kind: Admitted["kind"] = resume ? "resume" : "turn";
  if (resume) {
    if (record.execution.rosInvocationId !== request.rosInvocationId) return refuse(admission.resumeMismatch());
  } else if (hasPending(record)) {
    // AG-UI 1.0 lets a producer end a run with the interrupt outcome again: a client that lost its
    // interrupts (a reload, a restarted CopilotKit runtime) can show them. The text is not sent.
    if (!request.agui1 || record.execution.taskId === null) return refuse(admission.resumeRequired(request.interruptsOf(record.execution.pending)));
    kind = "reshow";
  } else {
    record = rotateExecution(record, request.rosInvocationId, request.newExecutionId, request.window);
  }
  return { kind, record: remember(active(record, request.now), request), ...(expiredTaskId !== undefined && { expiredTaskId }) };
}

/** A user's thread keeps when it was created and last run (its owner's thread list); other threads keep no times. */
function active(record: ThreadRecord, now: number): ThreadRecord {
  if (record.owner === undefined) return record;
  const at = new Date(now).toISOString();
  return { ...record, createdAt: record.createdAt ?? at, lastActiveAt: at };
}

/** The run id is single-use from now on; the interrupted run's id is spent (the next interrupt names its own run). */
function remember(record: ThreadRecord, request: AdmissionRequest): ThreadRecord {
  const { interruptedRunId: _spent, ...execution } = record.execution;
  return { ...record, runDigests: withRunDigest(record.runDigests, request.runId, request.digest, request.window), execution };
}

/** A new normal turn starts a new execution; the context and the iac-code session are kept. */
function rotateExecution(record: ThreadRecord, rosInvocationId: string, executionId: string, window: number): ThreadRecord {
  const old = record.execution;
  return {
    ...record,
    terminalExecutionIds: withTerminalExecution(record.terminalExecutionIds, old.executionId, window),
    execution: freshExecution(executionId, rosInvocationId, old.taskId ?? old.lastTaskId),
  };
}

// ── A run's stream ───────────────────────────────────────────────────────────────────────────────────────

/** Refuses once `executionId` is no longer the thread's live execution (the cancel route ended it meanwhile). */
export const stillRunning =
  (executionId: string): Transition =>
  (record) =>
    record.execution.executionId !== executionId || record.terminalExecutionIds.includes(executionId)
      ? refuse(new RunError("CANCELLED", messageText("run.cancelled")))
      : record;

/**
 * What the kernel revealed, folded in stream order (written with the run's next durable write). Bounded like
 * every other id in the state: an oversized one refuses. Facts that are not thread state (interrupts, the
 * outcome) change nothing.
 */
export const foldFact =
  (fact: ProjectionFact): Transition =>
  (record) => {
    switch (fact.fact) {
      case "taskId":
        return isBoundedId(fact.taskId) ? withExecution(record, { taskId: fact.taskId }) : refuse(oversizedFrame());
      case "sessionId":
        return isBoundedId(fact.sessionId) ? { ...record, iacCodeSessionId: fact.sessionId } : refuse(oversizedFrame());
      case "openSteps":
        return boundedSteps(fact.openSteps) ? withExecution(record, { pipelineOpenSteps: fact.openSteps }) : refuse(oversizedFrame());
      case "pipelineCursor":
        return withExecution(record, { pipelineSequence: fact.sequence });
      default:
        return record;
    }
  };

const boundedSteps = (open: readonly string[]): boolean =>
  open.length <= UPSTREAM_LIMITS.maxOpenSteps && open.every((key) => isBoundedId(key, UPSTREAM_LIMITS.maxStepKeyCodePoints));

/** A text segment the execution showed, by digest only (the resume-text rule). */
export const rememberTextSegment =
  (digest: string): Transition =>
  (record) =>
    withExecution(record, { textSnapshotDigests: withTextSegment(record.execution.textSnapshotDigests, digest) });

/** This replica's kernel cannot restore the thread's iac-code session: the thread goes on in a new one. */
export const startNewSession: Transition = (record) => ({ ...record, iacCodeSessionId: null });

export interface Parking {
  executionId: string;
  /** The run that ends at the interrupts: one resume may reuse its id. */
  runId: string;
  /** With a shared store, the replica whose kernel holds the parked task. */
  parkedBy?: string;
  /** The interrupts announced, each with the input it answers; empty for a re-show (the pending set stays as it is). */
  pending: readonly PendingInterrupt[];
  /** With tracing on, the parking run's span: the wait is reported under it when the answer comes. */
  span?: ParkedSpan;
}

/** The run ends at its interrupts: they are stored (with their expiry) before they are announced. */
export const parkInterrupts =
  (parking: Parking): Transition =>
  (record) => {
    const running = stillRunning(parking.executionId)(record);
    if (isRefusal(running)) return running;
    const pending = withEntries(
      record.execution.pending,
      parking.pending.map(({ input, interrupt }): [string, PendingEntry] => [
        input.value.inputId,
        { value: input.value, sideband: input.sideband, ...(interrupt.expiresAt !== undefined && { expiresAt: interrupt.expiresAt }) },
      ]),
    );
    return withExecution(record, {
      pending,
      interruptedRunId: parking.runId,
      ...(parking.parkedBy !== undefined && { parkedBy: parking.parkedBy }),
      ...(parking.span !== undefined && { parkedSpan: parking.span }),
    });
  };

/**
 * The execution is over (finished, failed, cancelled, expired, abandoned): its task id is kept as the last one
 * and the execution is remembered as ended. `clearPending`: its interrupts go with it.
 */
export const endExecution =
  ({ window, clearPending }: { window: number; clearPending: boolean }): Transition =>
  (record) => {
    const { executionId, taskId, lastTaskId, parkedSpan: _waitOver, ...execution } = record.execution;
    return {
      ...record,
      execution: { ...execution, executionId, taskId: null, lastTaskId: taskId ?? lastTaskId, ...(clearPending && { pending: idRecord<PendingEntry>() }) },
      terminalExecutionIds: withTerminalExecution(record.terminalExecutionIds, executionId, window),
    };
  };

// ── Resume ───────────────────────────────────────────────────────────────────────────────────────────────

/** The pending set a resume plan settled on, with answers the kernel took that the state had not recorded. */
export const reconcilePending =
  (pending: Readonly<Record<string, PendingEntry>>, recovered: readonly AppliedResumeDigest[], window: number): Transition =>
  (record) => ({
    ...withExecution(record, { pending: withEntries(pending, []) }),
    appliedResumeDigests: recovered.reduce((applied, entry) => withAppliedDigest(applied, entry, window), record.appliedResumeDigests),
  });

/** The kernel accepted these answers: recorded, so a replay never applies them twice, and no longer pending. */
export const applyAnswers =
  (answers: readonly { interruptId: string; digest: string }[], window: number): Transition =>
  (record) => {
    const executionId = record.execution.executionId;
    return {
      ...withExecution(record, { pending: withEntries<PendingEntry>(record.execution.pending, answers.map((a) => [a.interruptId, undefined])) }),
      appliedResumeDigests: answers.reduce(
        (applied, { interruptId, digest }) => withAppliedDigest(applied, { executionId, interruptId, digest }, window),
        record.appliedResumeDigests,
      ),
    };
  };

/**
 * A resume refused before anything reached the kernel leaves its interrupts pending: the run id that ended at
 * them may be reused again for the retry (a client that pins it, as CopilotKit does, is not stuck).
 */
export const reopenInterruptedRun =
  (runId: string | undefined): Transition =>
  (record) =>
    runId === undefined || !hasPending(record) ? record : withExecution(record, { interruptedRunId: runId });
