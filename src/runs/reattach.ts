// The observer route: a read-only re-attachment to a running execution (GetTask snapshot, then
// SubscribeToTask). It never writes state, never cancels, and ends with exactly one terminal event.
import type { Observable } from "rxjs";
import { createAguiPipeline, type AguiOutput } from "../../operators/index.js";
import { type Language, localize, normalizeLanguage } from "../i18n/index.js";
import { runDigestOf } from "../state/windows.js";
import type { Caller } from "./caller.js";
import { admission } from "./errors.js";
import type { RunDeps } from "./run-context.js";
import type { PacedUpstream } from "../a2a/index.js";
import { snapshotThenLive } from "./task-frames.js";
import { mayUse } from "./transitions.js";
import { isTaskNotFound } from "../a2a/error-mapping.js";
import { ATTR, NO_SPAN, type TraceSpan } from "../ops/trace.js";
import type { ThreadRecord } from "../state/thread-store.js";

/** Who asks to observe which execution, with the proof of the binding. */
export interface Observation {
  executionId: string;
  threadId: string;
  /** A run id of the thread (its run-id window): the observer joined that thread. */
  runId: string;
  rosInvocationId: string;
  language: Language;
  caller: Caller;
}

/**
 * The thread's record when the observation may see the execution (the caller's thread, the binding proved, the
 * execution still running or parked unless `ended` is allowed); EXECUTION_NOT_FOUND otherwise.
 */
export async function observedRecord(deps: RunDeps, observation: Observation, ended = false): Promise<ThreadRecord> {
  const { executionId, threadId, runId, rosInvocationId, caller } = observation;
  const record = await deps.threads.read(threadId);
  const execution = record?.execution;
  if (!record || !mayUse(caller, record) || !execution || execution.executionId !== executionId) throw admission.executionNotFound();
  if (execution.rosInvocationId !== rosInvocationId || runDigestOf(record, runId) === undefined) throw admission.executionNotFound();
  if (execution.taskId === null && !ended) throw admission.executionNotFound();
  return record;
}

/** `span`: the observer request's; the observation's kernel calls are its children. */
export async function reattach(deps: RunDeps, observation: Observation, span: TraceSpan = NO_SPAN): Promise<Observable<AguiOutput>> {
  const { executionId, threadId, runId, rosInvocationId, language } = observation;
  span.set({ [ATTR.threadId]: threadId, [ATTR.runId]: runId, [ATTR.executionId]: executionId });
  const record = await observedRecord(deps, observation);
  const taskId = record.execution.taskId!;
  span.set({ [ATTR.taskId]: taskId });
  const kernel = deps.kernel.pacedBy(undefined, span);
  if (deps.threads.shared && !deps.live.has(threadId)) await assertKernelKnows(kernel, taskId);
  return snapshotThenLive(kernel, taskId).pipe(
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
      // Read once: an observation never applies an answer.
      appliedInputIds: record.appliedResumeDigests.filter((d) => d.executionId === executionId).map((d) => d.interruptId),
      historyFallback: false,
      heartbeat: { intervalMs: deps.settings.heartbeatMs },
      language,
      translate: (english, lang) => localize(normalizeLanguage(lang) ?? language, english),
    }),
  );
}

/** With several replicas the task may live in another replica's kernel: say so before the stream starts. */
async function assertKernelKnows(kernel: PacedUpstream, taskId: string): Promise<void> {
  try {
    await kernel.getTask(taskId);
  } catch (error) {
    if (isTaskNotFound(error)) throw admission.executionElsewhere();
    // Anything else is the stream's to report, as with one replica.
  }
}
