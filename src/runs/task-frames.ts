// The A2A frames a run reads: the turn's SendStreamingMessage, a task followed to its end, and the frames
// the service itself shows (the pending set again, a tool result of an answer).
import { EMPTY, catchError, concat, defer, map, throwError, type Observable } from "rxjs";
import type { A2AStreamResponse, A2ATask } from "../../operators/index.js";
import { buildIacCodeMetadata, buildUserMessage, type PacedUpstream } from "../a2a/index.js";
import { isKernelAnswer, toRunError } from "../a2a/error-mapping.js";
import type { ThreadRecord } from "../state/thread-store.js";
import type { RunTicket } from "./run-session.js";

export function turnFrames(upstream: PacedUpstream, ticket: RunTicket): Observable<A2AStreamResponse> {
  const { request, record, language } = ticket;
  const message = buildUserMessage({
    messageId: ticket.messageId,
    contextId: record.contextId,
    parts: ticket.parts,
    metadata: buildIacCodeMetadata({ ...request.iacCode, cwd: record.cwd, language }),
  });
  return defer(() => upstream.sendStreamingMessage(message)).pipe(catchError((error: unknown) => throwError(() => toRunError(error))));
}

/** Snapshot then live frames of a task; a task that is no longer active answers with its final snapshot. */
export function followTask(upstream: PacedUpstream, taskId: string): Observable<A2AStreamResponse> {
  const snapshot = defer(() => upstream.getTask(taskId)).pipe(map((task) => ({ task: withoutText(task) })));
  return upstream.subscribeToTask(taskId).pipe(
    map((frame) => ("task" in frame ? { task: withoutText(frame.task) } : frame)),
    catchError((error: unknown) => {
      if (isKernelAnswer(error)) return snapshot;
      return throwError(() => toRunError(error, "A2A_UNAVAILABLE"));
    }),
    (live) => concat(live, snapshot),
    catchError((error: unknown) => throwError(() => toRunError(error, "A2A_UNAVAILABLE"))),
  );
}

/** Read-only: the task's snapshot, then its live frames; an idle task (-32001) has nothing more to say. */
export function snapshotThenLive(kernel: PacedUpstream, taskId: string): Observable<A2AStreamResponse> {
  const snapshot = defer(() => kernel.getTask(taskId)).pipe(
    map((task): A2AStreamResponse => ({ task: withoutText(task) })),
    catchError((error: unknown) => throwError(() => toRunError(error, "A2A_UNAVAILABLE"))),
  );
  const live = kernel.subscribeToTask(taskId).pipe(
    // An idle task answers -32001: the snapshot already said all there is.
    catchError((error: unknown) => (isKernelAnswer(error) ? EMPTY : throwError(() => toRunError(error, "A2A_UNAVAILABLE")))),
  );
  return concat(snapshot, live);
}

/** A frame that shows the whole pending set, so the projection announces it as one interrupt outcome. */
export function pendingFrame(record: ThreadRecord): A2AStreamResponse {
  return {
    statusUpdate: {
      taskId: record.execution.taskId!,
      contextId: record.contextId,
      status: { state: "TASK_STATE_INPUT_REQUIRED" },
      metadata: { iac_code: { pendingPermissions: Object.values(record.execution.pending).map((p) => ({ ...p.value, required: true })) } },
    },
  };
}

export function toolFrame(taskId: string, contextId: string, result: { toolCallId: string; content: string }): A2AStreamResponse {
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
export function withoutText(task: A2ATask): A2ATask {
  const { history: _history, ...rest } = task;
  if (!rest.status?.message) return rest;
  const { message: _message, ...status } = rest.status;
  return { ...rest, status };
}
