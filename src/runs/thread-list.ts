// A user's own threads (GET /threads): most recently active first, a page at a time, with what each is doing now.
// Read-only: it never changes a record.
import { activityOf, decodeCursor, encodeCursor } from "../state/owned-threads.js";
import type { ThreadRecord } from "../state/thread-store.js";
import type { RunDeps } from "./run-context.js";

export type ThreadStatus = "idle" | "running" | "waiting_for_input";

export interface ThreadSummary {
  threadId: string;
  createdAt?: string;
  lastActiveAt?: string;
  status: ThreadStatus;
  pendingInterrupts: number;
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
