// Runs that were active when the process stopped: nobody will read their A2A tasks again, so each is
// cancelled upstream, as the run's end would have done, and its execution ended. With --reconnect-grace those found
// at start-up are kept that long first: a client that comes back may take one up (src/runs/adopt.ts).
import type { ThreadRecord } from "../state/thread-store.js";
import { cancelTask, type RunDeps } from "./run-context.js";
import type { LockedThread } from "./thread-repository.js";
import { endExecution, hasPending, isRefusal } from "./transitions.js";
import { ATTR, errorCodeOf, type TraceSpan } from "../ops/trace.js";

/** A stored record (no run of this process holds it) whose execution names a task with no interrupt pending. */
export function abandonedRun(deps: RunDeps, record: ThreadRecord): boolean {
  return record.execution.taskId !== null && !hasPending(record) && !deps.live.has(record.threadId);
}

/** The record as recovering its abandoned run leaves it (admission decides on it before recovering anything). */
export function recoveredView(deps: RunDeps, record: ThreadRecord): ThreadRecord {
  const ended = endExecution({ window: deps.settings.window, clearPending: false })(record);
  return isRefusal(ended) ? record : ended;
}

/**
 * Ends an abandoned run found in the store. Resolves with whether there was one. Traced as its own span, under the
 * request that found it (`parent`) or, at start-up, as a trace of its own.
 */
async function recoverAbandoned(deps: RunDeps, thread: LockedThread, record: ThreadRecord, parent?: TraceSpan): Promise<boolean> {
  if (!abandonedRun(deps, record)) return false;
  const { taskId, executionId } = record.execution;
  deps.logger.warn({ threadId: record.threadId, taskId, executionId }, "a run was active when the gateway stopped: cancelling its A2A task");
  const attributes = { [ATTR.threadId]: record.threadId, [ATTR.executionId]: executionId, [ATTR.taskId]: taskId ?? undefined };
  const span = parent ? parent.child("agui.recovery", { attributes }) : deps.tracer.under(undefined, "agui.recovery", { attributes });
  try {
    await cancelTask(deps, taskId, span);
    await thread.update(endExecution({ window: deps.settings.window, clearPending: false }));
  } catch (error) {
    span.fail(errorCodeOf(error));
    throw error;
  } finally {
    span.end();
  }
  return true;
}

/** The thread's record under its lock, an abandoned run found in the store recovered first (admission, cancel). */
export function readRecovered(deps: RunDeps, thread: LockedThread, span?: TraceSpan): Promise<ThreadRecord | undefined> {
  return thread.read((record) => recoverAbandoned(deps, thread, record, span));
}

/**
 * Start-up recovery: every stored thread whose state says a run was active gets that run's task cancelled, at once
 * or once the orphan grace is over (the same happens on a thread's next admission or cancel, see readRecovered).
 * Resolves with how many were cancelled now; never rejects.
 */
export async function recoverAbandonedRuns(deps: RunDeps): Promise<number> {
  const listing = deps.threads.storedThreadIds();
  if (!listing) return 0;
  let recovered = 0;
  try {
    const ids = await listing;
    for (const threadId of ids) {
      await deps.threads
        .locked(threadId, async (thread) => {
          if (deps.threads.isLoaded(threadId)) return;
          // Read before claiming: a start-up that claimed every thread would hold, for a moment (or, killed then, for
          // the lease's TTL), threads another replica is being asked to run, which would answer THREAD_BUSY.
          const seen = await deps.threads.peekStored(threadId);
          if (!seen || !abandonedRun(deps, seen)) return;
          // With a shared store only a thread no replica holds is ours to recover.
          if (!(await deps.threads.claim(threadId)).claimed) return;
          try {
            const record = await deps.threads.loadStored(threadId);
            if (record && deps.settings.orphanGraceMs > 0 && abandonedRun(deps, record)) recoverAfterGrace(deps, threadId);
            else if (record && (await recoverAbandoned(deps, thread, record))) recovered++;
          } finally {
            await deps.threads.unclaim(threadId);
          }
        })
        .catch((error: unknown) => deps.logger.warn({ err: error, threadId }, "start-up recovery skipped a thread"));
    }
  } catch (error) {
    deps.logger.warn({ err: error }, "start-up recovery could not list the threads");
  }
  return recovered;
}

/** The run a stopped process left on the thread, cancelled once the orphan grace is over unless it was taken up. */
function recoverAfterGrace(deps: RunDeps, threadId: string): void {
  deps.logger.info({ threadId, graceMs: deps.settings.orphanGraceMs }, "a run was active when the gateway stopped: kept for its client to come back");
  const timer = setTimeout(() => {
    void deps.threads
      .locked(threadId, async (thread) => {
        if (!(await deps.threads.claim(threadId)).claimed) return;
        try {
          const record = await thread.read();
          if (record) await recoverAbandoned(deps, thread, record);
        } finally {
          await deps.threads.unclaim(threadId);
        }
      })
      .catch((error: unknown) => deps.logger.warn({ err: error, threadId }, "a kept run could not be recovered"));
  }, deps.settings.orphanGraceMs);
  timer.unref();
}
