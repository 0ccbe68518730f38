// A resume: restore the session, check the task, reconcile the pending set, validate every answer, then
// deliver each one to the same A2A task. Nothing is removed from pending before A2A accepted it.
import { messageText } from "../i18n/index.js";
import { EMPTY, concat, concatMap, defer, catchError, from, of, throwError, throwIfEmpty, type Observable } from "rxjs";
import { RunError, type A2AStreamResponse, type A2ATask } from "../../operators/index.js";
import { buildIacCodeMetadata, buildUserMessage, type PacedUpstream } from "../a2a/index.js";
import { answerRejected, isTaskAlreadyTerminal, isTaskNotFound, toRunError } from "../a2a/error-mapping.js";
import type { ThreadRecord } from "../state/thread-store.js";
import { rememberAppliedDigest } from "../state/windows.js";
import { encodeAnswer, planResume, type PlannedAnswer, type ResumePlan } from "./resume.js";
import { cancelUpstream, failClosed, type RunContext, type RunTicket } from "./run-context.js";
import { followTask, pendingFrame, toolFrame } from "./task-frames.js";
import { hasPending, markTerminal } from "./thread-record.js";

export interface PreparedResume {
  plan: ResumePlan;
  /** What parallel pipeline work emitted while the run was parked, for an applied plan. */
  recovery?: A2AStreamResponse;
}

/** Everything decided before an answer is sent: the task checked, the plan made and written. */
export async function prepareResume(context: RunContext, ticket: RunTicket): Promise<PreparedResume> {
  const { record } = ticket;
  const execution = record.execution;
  try {
    const task = execution.taskId !== null && hasPending(record) ? await checkTask(context, ticket) : undefined;
    const plan = planResume(record, ticket.request.resume ?? [], task, Date.now());
    await context.threads
      .persist(record)
      .catch((error) => failClosed(context, ticket, error, messageText("state.interruptCommitFailed")));
    const recovery = plan.kind === "apply" ? await pipelineRecovery(context, record) : undefined;
    return { plan, ...(recovery && { recovery }) };
  } catch (error) {
    if (error instanceof ParkedElsewhere) throw error;
    if (error instanceof RunError && (error.code === "EXECUTION_EXPIRED" || error.code === "EXECUTION_LOST") && execution.taskId !== null) {
      if (error.code === "EXECUTION_EXPIRED") await cancelUpstream(context, record);
      execution.pending = {};
      markTerminal(record, context.window);
      await context.threads.persist(record).catch(() => undefined);
    }
    throw error;
  }
}

/** The interrupts a plan answers: every frame of its stream comes after the kernel accepted them all. */
export function appliedBy(prepared: PreparedResume): string[] {
  return prepared.plan.kind === "apply" ? prepared.plan.answers.map((a) => a.entry.interruptId) : [];
}

/** The frames of a planned resume: the pending set again, the cancel, or the delivered answers' stream. */
export function plannedFrames(
  context: RunContext,
  upstream: PacedUpstream,
  ticket: RunTicket,
  prepared: PreparedResume,
): Observable<A2AStreamResponse> {
  const { plan, recovery } = prepared;
  if (plan.kind === "announce") return of(pendingFrame(ticket.record));
  if (plan.kind === "cancel") return from(cancelByAnswer(context, ticket));
  return deliverAnswers(context, upstream, ticket, plan.answers, recovery ? [recovery] : []);
}

/** Session restore and task identity before anything is sent (reference-adapter §4.4 steps 2–3). */
async function checkTask(context: RunContext, ticket: RunTicket): Promise<A2ATask> {
  const { record } = ticket;
  const taskId = record.execution.taskId!;
  if (record.iacCodeSessionId !== null) {
    const restored = await context.a2a.ensureSessionRestored({ cwd: record.cwd, sessionId: record.iacCodeSessionId, taskId });
    if (restored === false) throw await lostHere(context, record, messageText("resume.sessionUnavailable"));
  }
  let task: A2ATask;
  try {
    task = await context.a2a.getTask(taskId);
  } catch (error) {
    if (isTaskNotFound(error)) throw await lostHere(context, record, messageText("resume.taskUnavailable"));
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
async function lostHere(context: RunContext, record: ThreadRecord, english: string): Promise<RunError> {
  const parkedBy = record.execution.parkedBy;
  if (context.relay && parkedBy !== undefined && parkedBy !== context.threads.replicaId) {
    const answer = await context.relay.request(parkedBy, "ping", {}, PARKED_BY_PING_TIMEOUT_MS);
    if (answer.answered) return new ParkedElsewhere();
  }
  return new RunError("EXECUTION_LOST", english);
}

async function cancelByAnswer(context: RunContext, ticket: RunTicket): Promise<never> {
  const { record } = ticket;
  try {
    if (record.execution.taskId !== null) await context.a2a.cancelTask(record.execution.taskId);
  } catch (error) {
    if (!isTaskAlreadyTerminal(error)) throw toRunError(error, "A2A_UNAVAILABLE");
  }
  record.execution.pending = {};
  markTerminal(record, context.window);
  await context.threads.persist(record).catch(() => undefined);
  throw new RunError("CANCELLED", messageText("run.cancelledByAnswer"));
}

/**
 * Every answer reaches A2A: sideband permissions by SendMessage each, then the task is observed
 * (snapshot, subscribe); otherwise all answers but the last by SendMessage, the last as a stream whose
 * first frame is the acceptance.
 */
function deliverAnswers(
  context: RunContext,
  upstream: PacedUpstream,
  ticket: RunTicket,
  answers: PlannedAnswer[],
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
    await upstream.sendMessage(answerMessage(ticket, answer, messageId), { timeoutMs: 3_600_000 }).catch((error) => {
      throw answerRejected(error);
    });
    await accept(context, ticket, [answer]);
  };
  if (sideband) {
    return defer(async () => {
      for (const answer of answers) await send(answer, `agui-resume-${answer.entry.interruptId}`);
    }).pipe(concatMap(() => concat(of(...recovery, ...toolResults), followTask(upstream, taskId))));
  }
  const last = answers[answers.length - 1]!;
  const streamed = defer(() =>
    upstream.sendStreamingMessage(answerMessage(ticket, last, `agui-resume-${ticket.request.runId}-${last.entry.interruptId}`)),
  ).pipe(
    catchError((error: unknown) => throwError(() => answerRejected(error))),
    throwIfEmpty(() => new RunError("A2A_UNAVAILABLE", messageText("a2a.interruptResponseRejected"))),
    concatMap((frame, index) =>
      // Missed pipeline events are shown once the answer is accepted, before what follows it.
      index === 0 ? from(accept(context, ticket, [last])).pipe(concatMap(() => of(...recovery, frame, ...toolResults))) : of(frame),
    ),
  );
  return concat(
    defer(async () => {
      for (const answer of answers.slice(0, -1)) await send(answer, `agui-resume-${ticket.request.runId}-${answer.entry.interruptId}`);
    }).pipe(concatMap(() => EMPTY)),
    streamed,
    // The kernel may close the answer stream before the turn's end: follow the task to its real end.
    defer(() => followTask(upstream, taskId)),
  );
}

function answerMessage(ticket: RunTicket, answer: PlannedAnswer, messageId: string) {
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
async function accept(context: RunContext, ticket: RunTicket, answers: PlannedAnswer[]): Promise<void> {
  const { record } = ticket;
  for (const answer of answers) {
    const id = answer.entry.interruptId;
    rememberAppliedDigest(record, { executionId: record.execution.executionId, interruptId: id, digest: answer.digest }, context.window);
    delete record.execution.pending[id];
  }
  await context.threads
    .persist(record)
    .catch((error) => failClosed(context, ticket, error, messageText("state.answerCommitFailed")));
}

/** What parallel pipeline work emitted while the run was parked (reference-adapter §4.4 step 5). */
async function pipelineRecovery(context: RunContext, record: ThreadRecord): Promise<A2AStreamResponse | undefined> {
  const execution = record.execution;
  if (execution.taskId === null || (execution.pipelineSequence === 0 && execution.pipelineOpenSteps.length === 0)) return undefined;
  const state = await context.a2a.pipelineState(execution.taskId, execution.pipelineSequence).catch((error: unknown) => {
    context.logger.warn({ err: error, taskId: execution.taskId }, "pipeline recovery failed");
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
