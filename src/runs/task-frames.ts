// The A2A frames a run reads: the turn's SendStreamingMessage, a task followed to its end, and the frames
// the service itself shows (the pending set again, a tool result of an answer).
import { EMPTY, Observable, catchError, concat, defer, map, throwError, type Observer, type Subscriber, type Subscription, type Unsubscribable } from "rxjs";
import type { A2AMessage, A2AStreamResponse, A2ATask } from "../../operators/index.js";
import { buildIacCodeMetadata, buildUserMessage, type PacedUpstream } from "../a2a/index.js";
import { isKernelAnswer, toRunError } from "../a2a/error-mapping.js";
import { resultOf, taskIdOf } from "../../operators/lib/a2a-read.js";
import type { ThreadRecord } from "../state/thread-store.js";
import type { RunTicket } from "./run-session.js";

/**
 * The turn's stream, with the task its first frame names told to `naming`; its failures are RunErrors. The kernel
 * starts a task as soon as it has the request but names it only in the stream's first frame: a consumer that leaves
 * before that frame leaves the request open until it comes (at most TASK_NAMING_WAIT_MS), so the run's end can
 * still cancel that task instead of leaving it running unseen.
 */
export function turnFrames(upstream: PacedUpstream, ticket: RunTicket, naming: TaskNaming): Observable<A2AStreamResponse> {
  // The message is built when the request is sent, not kept beside the run: a stream stays open for as long as the
  // run waits (minutes, for a permission), and the message is the whole prompt.
  return new Observable<A2AStreamResponse>((subscriber) =>
    new NamingRelay(subscriber, naming).follow(defer(() => upstream.sendStreamingMessage(turnMessage(ticket)))),
  );
}

function turnMessage({ request, record, language, messageId, parts }: RunTicket): A2AMessage {
  return buildUserMessage({
    messageId,
    contextId: record.contextId,
    parts: parts.take() ?? sentTwice(),
    metadata: buildIacCodeMetadata({ ...request.iacCode, cwd: record.cwd, language }),
  });
}

function sentTwice(): never {
  throw new Error("a turn's user message is sent once");
}

/** How long a run whose client left keeps its turn's request open for the kernel to name the task it started. */
export const TASK_NAMING_WAIT_MS = 10_000;

/** The task a turn's stream named first: undefined when it ended, failed or gave no task id first. */
export class TaskNaming {
  private settled = false;
  private taskId: string | undefined;
  private waiter: ((taskId: string | undefined) => void) | undefined;

  /** Resolves once the stream's first frame came or the stream is over (at once if that was already so). */
  named(): Promise<string | undefined> {
    if (this.settled) return Promise.resolve(this.taskId);
    return new Promise((resolve) => (this.waiter = resolve));
  }

  settle(taskId: string | undefined): void {
    if (this.settled) return;
    this.settled = true;
    this.taskId = taskId;
    this.waiter?.(taskId);
    this.waiter = undefined;
  }

  get pending(): boolean {
    return !this.settled;
  }
}

/**
 * One subscription of turnFrames: an object, not a set of closures per run (an idle run keeps it). It also makes the
 * call's failures RunErrors, which a catchError would do with one more subscriber per run.
 */
class NamingRelay implements Observer<A2AStreamResponse>, Unsubscribable {
  private source: Subscription | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly subscriber: Subscriber<A2AStreamResponse>,
    private readonly naming: TaskNaming,
  ) {}

  follow(frames: Observable<A2AStreamResponse>): this {
    this.source = frames.subscribe(this);
    return this;
  }

  next(frame: A2AStreamResponse): void {
    if (this.naming.pending) this.named(taskIdOf(frame, resultOf(frame)));
    // The consumer left before the task was named: that was all the request was kept open for.
    if (this.subscriber.closed) return this.source?.unsubscribe();
    this.subscriber.next(frame);
  }

  error(error: unknown): void {
    this.named(undefined);
    this.subscriber.error(toRunError(error));
  }

  complete(): void {
    this.named(undefined);
    this.subscriber.complete();
  }

  unsubscribe(): void {
    if (!this.naming.pending) return this.source?.unsubscribe();
    this.timer = setTimeout(() => {
      this.named(undefined);
      this.source?.unsubscribe();
    }, TASK_NAMING_WAIT_MS);
    this.timer.unref();
  }

  private named(taskId: string | undefined): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.naming.settle(taskId);
  }
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
