// A resume: restore the session, check the task, reconcile the pending set, validate every answer, then
// deliver each one to the same A2A task. Nothing is removed from pending before A2A accepted it.
import { messageText } from "../i18n/index.js";
import { EMPTY, concat, concatMap, defer, catchError, from, of, throwError, throwIfEmpty, type Observable } from "rxjs";
import { RunError, type A2AStreamResponse, type A2ATask } from "../../operators/index.js";
import { buildIacCodeMetadata, buildUserMessage, type PacedUpstream } from "../a2a/index.js";
import { answerRejected, isTaskAlreadyTerminal, isTaskNotFound, toRunError } from "../a2a/error-mapping.js";
import type { ThreadRecord } from "../state/thread-store.js";
import { prepareWorkspace } from "./cwd.js";
import { encodeAnswer, planResume, type PlannedAnswer, type ResumePlan } from "./resume.js";
import { cancelTask, type RunDeps } from "./run-context.js";
import type { RunSession } from "./run-session.js";
import { followTask, pendingFrame, toolFrame } from "./task-frames.js";
import { applyAnswers, endExecution, hasPending, reconcilePending, reopenInterruptedRun } from "./transitions.js";

export interface PreparedResume {
  plan: Exclude<ResumePlan, { kind: "refused" }>;
  /** What parallel pipeline work emitted while the run was parked, for an applied plan. */
  recovery?: A2AStreamResponse;
}

/** Everything decided before an answer is sent: the task checked, the plan made and written. */
export async function prepareResume(deps: RunDeps, session: RunSession): Promise<PreparedResume> {
  const { ticket } = session;
  const record = session.record;
  const { taskId } = record.execution;
  const window = deps.settings.window;
  const { span } = ticket;
  const kernel = deps.kernel.pacedBy(undefined, span);
  try {
    const task = taskId !== null && hasPending(record) ? await checkTask(deps, kernel, record) : undefined;
    const planned = planResume(record, ticket.request.resume ?? [], task, Date.now());
    const plan = planned.plan.kind === "apply" ? encodable(planned.plan, record) : planned.plan;
    await session.commitNow(reconcilePending(planned.pending, planned.recovered, window), "state.interruptCommitFailed");
    if (plan.kind === "refused") throw plan.error;
    if (plan.kind === "apply") await prepareWorkspace(ticket.workspace);
    const recovery = plan.kind === "apply" ? await pipelineRecovery(deps, kernel, session.record) : undefined;
    return { plan, ...(recovery && { recovery }) };
  } catch (error) {
    if (error instanceof ParkedElsewhere || !(error instanceof RunError)) throw error;
    // What the refusal tells the client must be durable first; a lost write ends the run as a failed write does.
    if ((error.code === "EXECUTION_EXPIRED" || error.code === "EXECUTION_LOST") && taskId !== null) {
      if (error.code === "EXECUTION_EXPIRED") await cancelTask(deps, taskId, span);
      await session.commitNow(endExecution({ window, clearPending: true }), "state.interruptCommitFailed");
    } else if (error.code !== "STATE_PERSISTENCE_FAILED" && error.code !== "CANCELLED") {
      // Refused before anything reached the kernel: the interrupts still wait, and so may the run that ended at them.
      await session.commitNow(reopenInterruptedRun(ticket.interruptedRunId), "state.interruptCommitFailed");
    }
    throw error;
  }
}

/** Every answer of the plan can be encoded (an answer with no text refuses the resume before anything is sent). */
function encodable(plan: Extract<ResumePlan, { kind: "apply" }>, record: ThreadRecord): ResumePlan {
  try {
    for (const answer of plan.answers) encodeAnswer(answer, record.execution.taskId!, record.contextId);
    return plan;
  } catch (error) {
    if (error instanceof RunError) return { kind: "refused", error };
    throw error;
  }
}

/** The interrupts a plan answers: every frame of its stream comes after the kernel accepted them all. */
export function appliedBy(prepared: PreparedResume): string[] {
  return prepared.plan.kind === "apply" ? prepared.plan.answers.map((a) => a.entry.interruptId) : [];
}

/** The frames of a planned resume: the pending set again, the cancel, or the delivered answers' stream. */
export function plannedFrames(deps: RunDeps, upstream: PacedUpstream, session: RunSession, prepared: PreparedResume): Observable<A2AStreamResponse> {
  const { plan, recovery } = prepared;
  if (plan.kind === "announce") return of(pendingFrame(session.record));
  if (plan.kind === "cancel") return from(cancelByAnswer(deps, session));
  return deliverAnswers(upstream, session, plan.answers, recovery ? [recovery] : []);
}

/** Session restore and task identity before anything is sent (reference-adapter §4.4 steps 2–3). */
async function checkTask(deps: RunDeps, kernel: PacedUpstream, record: ThreadRecord): Promise<A2ATask> {
  const taskId = record.execution.taskId!;
  if (record.iacCodeSessionId !== null) {
    const restored = await kernel.ensureSessionRestored({ cwd: record.cwd, sessionId: record.iacCodeSessionId, taskId });
    if (restored === false) throw await lostHere(deps, record, messageText("resume.sessionUnavailable"));
  }
  let task: A2ATask;
  try {
    task = await kernel.getTask(taskId);
  } catch (error) {
    if (isTaskNotFound(error)) throw await lostHere(deps, record, messageText("resume.taskUnavailable"));
    throw toRunError(error, "A2A_UNAVAILABLE");
  }
  if (task.id !== taskId || (task.contextId !== undefined && task.contextId !== "" && task.contextId !== record.contextId)) {
    throw new RunError("A2A_PROTOCOL_ERROR", messageText("a2a.taskMismatch"));
  }
  return task;
}

/** The interrupt waits in the kernel of a replica that still runs: refused here, and kept. */
class ParkedElsewhere extends RunError {
  constructor() {
    super("EXECUTION_LOST", messageText("resume.parkedElsewhere"));
  }
}

/** How long a resume waits to hear whether the replica that parked its task still runs. */
const PARKED_BY_PING_TIMEOUT_MS = 2_000;

/**
 * EXECUTION_LOST for a task this replica's kernel cannot resume. With several replicas each beside its own kernel
 * the task may be parked in another's: while that replica answers, the interrupt is not given up.
 */
async function lostHere(deps: RunDeps, record: ThreadRecord, english: string): Promise<RunError> {
  const parkedBy = record.execution.parkedBy;
  if (deps.relay && parkedBy !== undefined && parkedBy !== deps.threads.replicaId) {
    const answer = await deps.relay.request(parkedBy, "ping", {}, PARKED_BY_PING_TIMEOUT_MS);
    if (answer.answered) return new ParkedElsewhere();
  }
  return new RunError("EXECUTION_LOST", english);
}

async function cancelByAnswer(deps: RunDeps, session: RunSession): Promise<never> {
  const { taskId } = session.record.execution;
  const { span } = session.ticket;
  try {
    if (taskId !== null) await deps.kernel.cancelTask(taskId, span);
  } catch (error) {
    if (!isTaskAlreadyTerminal(error)) throw toRunError(error, "A2A_UNAVAILABLE");
  }
  await session.commitNow(endExecution({ window: deps.settings.window, clearPending: true }), "state.releaseFailed");
  throw new RunError("CANCELLED", messageText("run.cancelledByAnswer"));
}

/**
 * Every answer reaches A2A: sideband permissions by SendMessage each, then the task is observed
 * (snapshot, subscribe); otherwise all answers but the last by SendMessage, the last as a stream whose
 * first frame is the acceptance.
 */
function deliverAnswers(upstream: PacedUpstream, session: RunSession, answers: PlannedAnswer[], recovery: A2AStreamResponse[]): Observable<A2AStreamResponse> {
  const { request } = session.ticket;
  const record = session.record;
  const taskId = record.execution.taskId!;
  const sideband = answers.every((a) => a.pending.value.kind === "permission" && a.pending.sideband);
  const toolResults = answers.flatMap((a) => {
    const result = encodeAnswer(a, taskId, record.contextId).toolResult;
    return result ? [toolFrame(taskId, record.contextId, result)] : [];
  });
  const send = async (answer: PlannedAnswer, messageId: string) => {
    await upstream.sendMessage(answerMessage(session, answer, messageId), { timeoutMs: 3_600_000 }).catch((error) => {
      throw answerRejected(error);
    });
    await accept(session, [answer]);
  };
  if (sideband) {
    return defer(async () => {
      for (const answer of answers) await send(answer, `agui-resume-${answer.entry.interruptId}`);
    }).pipe(concatMap(() => concat(of(...recovery, ...toolResults), followTask(upstream, taskId))));
  }
  const last = answers[answers.length - 1]!;
  const streamed = defer(() => upstream.sendStreamingMessage(answerMessage(session, last, `agui-resume-${request.runId}-${last.entry.interruptId}`))).pipe(
    catchError((error: unknown) => throwError(() => answerRejected(error))),
    throwIfEmpty(() => new RunError("A2A_UNAVAILABLE", messageText("a2a.interruptResponseRejected"))),
    concatMap((frame, index) =>
      // Missed pipeline events are shown once the answer is accepted, before what follows it.
      index === 0 ? from(accept(session, [last])).pipe(concatMap(() => of(...recovery, frame, ...toolResults))) : of(frame),
    ),
  );
  return concat(
    defer(async () => {
      for (const answer of answers.slice(0, -1)) await send(answer, `agui-resume-${request.runId}-${answer.entry.interruptId}`);
    }).pipe(concatMap(() => EMPTY)),
    streamed,
    // The kernel may close the answer stream before the turn's end: follow the task to its real end.
    defer(() => followTask(upstream, taskId)),
  );
}

function answerMessage(session: RunSession, answer: PlannedAnswer, messageId: string) {
  const { request, language } = session.ticket;
  const record = session.record;
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
function accept(session: RunSession, answers: PlannedAnswer[]): Promise<void> {
  const taken = answers.map((answer) => ({ interruptId: answer.entry.interruptId, digest: answer.digest }));
  session.answered(taken.map((t) => t.interruptId));
  return session.commitNow(applyAnswers(taken, session.window), "state.answerCommitFailed");
}

/** What parallel pipeline work emitted while the run was parked (reference-adapter §4.4 step 5). */
async function pipelineRecovery(deps: RunDeps, kernel: PacedUpstream, record: ThreadRecord): Promise<A2AStreamResponse | undefined> {
  const execution = record.execution;
  if (execution.taskId === null || (execution.pipelineSequence === 0 && execution.pipelineOpenSteps.length === 0)) return undefined;
  const state = await kernel.pipelineState(execution.taskId, execution.pipelineSequence).catch((error: unknown) => {
    deps.logger.warn({ err: error, taskId: execution.taskId }, "pipeline recovery failed");
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
