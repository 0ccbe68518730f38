// A user's own threads (GET /threads): most recently active first, a page at a time, with what each is doing now;
// and one thread (GET /threads/:threadId) with the ids that stop or rejoin its run. Read-only: never changes a record.
import { activityOf, decodeCursor, encodeCursor } from "../state/owned-threads.js";
import type { ThreadRecord } from "../state/thread-store.js";
import type { Caller } from "./caller.js";
import { liveRunOf } from "./connect.js";
import type { RunDeps } from "./run-context.js";
import { mayUse } from "./transitions.js";

export type ThreadStatus = "idle" | "running" | "waiting_for_input";

export interface ThreadSummary {
  threadId: string;
  createdAt?: string;
  lastActiveAt?: string;
  status: ThreadStatus;
  pendingInterrupts: number;
}

/** One thread, with what a server that did not start its run needs to stop it (the cancel extension) or follow it. */
export interface ThreadDetail extends ThreadSummary {
  /** The execution, while it runs or waits for input. */
  executionId?: string;
  /** The run streaming now. */
  runId?: string;
}

export interface ThreadPage {
  threads: ThreadSummary[];
  /** Present when there may be more: pass it as `cursor` for the next page. */
  nextCursor?: string;
}

export const MAX_THREAD_PAGE = 100;

/** `cursor` is one this route returned; a malformed one answers undefined (the route refuses it). */
export async function listOwnedThreads(deps: RunDeps, owner: string, cursor: string | undefined, limit: number): Promise<ThreadPage | undefined> {
  const after = cursor === undefined ? undefined : decodeCursor(cursor);
  if (cursor !== undefined && after === undefined) return undefined;
  // One more than asked: whether a next page exists, without a second query.
  const records = await deps.threads.ownedThreads(owner, { ...(after && { after }), limit: limit + 1 });
  const shown = records.slice(0, limit);
  const last = shown.at(-1);
  return {
    threads: shown.map((record) => summaryOf(deps, record)),
    ...(records.length > limit && last && { nextCursor: encodeCursor(activityOf(last)) }),
  };
}

/** undefined for a thread the caller may not use, as for one that does not exist. */
export async function describeThread(deps: RunDeps, caller: Caller, threadId: string): Promise<ThreadDetail | undefined> {
  const record = await deps.threads.read(threadId);
  if (!record || !mayUse(caller, record)) return undefined;
  const summary = summaryOf(deps, record);
  if (summary.status === "idle") return summary;
  const live = summary.status === "running" ? liveRunOf(deps, record) : undefined;
  return { ...summary, executionId: record.execution.executionId, ...(live && { runId: live.runId }) };
}

function summaryOf(deps: RunDeps, record: ThreadRecord): ThreadSummary {
  const pendingInterrupts = Object.keys(record.execution.pending).length;
  // A run streams here, or on another replica (its task is known and not parked at interrupts).
  const running = deps.live.has(record.threadId) || (pendingInterrupts === 0 && record.execution.taskId !== null);
  return {
    threadId: record.threadId,
    ...(record.createdAt !== undefined && { createdAt: record.createdAt }),
    ...(record.lastActiveAt !== undefined && { lastActiveAt: record.lastActiveAt }),
    status: pendingInterrupts > 0 ? "waiting_for_input" : running ? "running" : "idle",
    pendingInterrupts,
  };
}
