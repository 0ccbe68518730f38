// DELETE /threads/{threadId}: a run still going is cancelled (its interrupts with it, as the cancel route does),
// then the thread's record — its binding, its run ids — is forgotten. A thread the caller may not use is one that
// does not exist.
import type { Caller } from "./caller.js";
import { cancelExecution } from "./cancel.js";
import { admission } from "./errors.js";
import type { RunDeps } from "./run-context.js";
import { hasPending, mayUse } from "./transitions.js";

export type ForgetOutcome = "forgotten" | "not_found";

/** How long the cancelled run of this replica may take to end its stream before the record goes, per round. */
const RUN_END_WAIT_MS = 2_000;
/** A run admitted between the read and the cancel (the owner's next turn) is cancelled in the next round. */
const ROUNDS = 3;
/** With a shared store: how long the replica whose run was cancelled may take to give the thread back. */
const RELEASE_WAIT_MS = 1_000;

export async function forgetThread(deps: RunDeps, caller: Caller, threadId: string): Promise<ForgetOutcome> {
  for (let round = 0; round < ROUNDS; round++) {
    const record = await deps.threads.read(threadId);
    if (!record || !mayUse(caller, record)) return "not_found";
    const { executionId, rosInvocationId, taskId } = record.execution;
    if (deps.live.has(threadId) || taskId !== null || hasPending(record)) {
      await cancelExecution(deps, { executionId, threadId, rosInvocationId });
    }
    if (!(await deps.live.ended(threadId, RUN_END_WAIT_MS))) continue;
    await deps.threads.awaitOthersRelease(threadId, RELEASE_WAIT_MS);
    const outcome = await deps.threads.locked(threadId, async (thread): Promise<ForgetOutcome | undefined> => {
      // Under the lock no run can be admitted: one admitted since the read is cancelled next round.
      if (deps.live.has(threadId)) return undefined;
      const current = await thread.read();
      if (current && current.execution.executionId !== executionId) return undefined;
      const { claimed } = await deps.threads.claim(threadId);
      if (!claimed) throw admission.threadBusy();
      try {
        await deps.threads.forget(threadId);
      } finally {
        await deps.threads.unclaim(threadId);
      }
      deps.logger.info({ threadId, ...(caller.kind === "user" && { userId: caller.userId }) }, "thread forgotten");
      return "forgotten";
    });
    if (outcome) return outcome;
  }
  throw admission.threadBusy();
}
