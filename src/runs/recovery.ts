// Runs that were active when the process stopped: nobody will read their A2A tasks again, so each is
// cancelled upstream, as the run's release would have done, and the mark cleared.
import type { ThreadRecord } from "../state/thread-store.js";
import { cancelUpstream, type RunContext } from "./run-context.js";
import { hasPending, markTerminal } from "./thread-record.js";

/**
 * A record read from the store (so no run of this process holds it) whose execution still names a task
 * with no interrupt pending: a run was active when the gateway stopped. Resolves with whether it was one.
 */
export async function recoverAbandoned(context: RunContext, record: ThreadRecord): Promise<boolean> {
  const execution = record.execution;
  if (execution.taskId === null || hasPending(record) || context.activeRuns.has(record.threadId)) return false;
  context.logger.warn(
    { threadId: record.threadId, taskId: execution.taskId, executionId: execution.executionId },
    "a run was active when the gateway stopped: cancelling its A2A task",
  );
  await cancelUpstream(context, record);
  markTerminal(record, context.window);
  await context.threads.persist(record);
  return true;
}

/** Loads a thread under its lock, recovering an abandoned run found in the store (admission, cancel). */
export function loadRecovered(context: RunContext, threadId: string): Promise<ThreadRecord | undefined> {
  return context.threads.load(threadId, (record) => recoverAbandoned(context, record));
}

/**
 * Start-up recovery: every stored thread whose state says a run was active gets that run's task cancelled
 * (the same happens on a thread's next access, see loadRecovered). Resolves with how many; never rejects.
 */
export async function recoverAbandonedRuns(context: RunContext): Promise<number> {
  const listing = context.threads.storedThreadIds();
  if (!listing) return 0;
  let recovered = 0;
  try {
    const ids = await listing;
    for (const threadId of ids) {
      await context.threads
        .locked(threadId, async () => {
          if (context.threads.isLoaded(threadId)) return;
          // With a shared store only a thread no replica holds is ours to recover.
          if (!(await context.threads.claim(threadId)).claimed) return;
          try {
            const record = await context.threads.loadStored(threadId);
            if (record && (await recoverAbandoned(context, record))) recovered++;
          } finally {
            await context.threads.unclaim(threadId);
          }
        })
        .catch((error: unknown) => context.logger.warn({ err: error, threadId }, "start-up recovery skipped a thread"));
    }
  } catch (error) {
    context.logger.warn({ err: error }, "start-up recovery could not list the threads");
  }
  return recovered;
}
