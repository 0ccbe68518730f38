// A run that was streaming when the gateway stopped, taken up again. With --reconnect-grace a restarted gateway
// does not cancel such a run's kernel task at start-up (src/runs/recovery.ts): the kernel goes on with it, and the
// first connect to the thread within the grace adopts it, as a run under the connect's run id that follows the task
// to its end (GetTask, then SubscribeToTask), parking the interrupts it ends at and ending the execution as the run
// itself would have. Nobody adopts it: it is cancelled once the grace is over.
import type { A2APart } from "../../operators/index.js";
import { flatRandomUUID } from "../flat-string.js";
import { HandOver } from "../hand-over.js";
import type { Language } from "../i18n/index.js";
import { NO_SPAN, type TraceSpan } from "../ops/trace.js";
import { withRunDigest } from "../state/windows.js";
import { runDigest, startSession } from "./admission.js";
import type { Caller } from "./caller.js";
import { abandonedRun } from "./recovery.js";
import type { RunDeps } from "./run-context.js";
import { RunLog } from "./run-log.js";
import type { RunSession, RunTicket } from "./run-session.js";
import { mayUse } from "./transitions.js";

export interface Adoption {
  threadId: string;
  /** The connect's run id, which the adopted run streams under. */
  runId: string;
  language: Language;
  caller: Caller;
  span?: TraceSpan;
}

/** The adopted run, or undefined when the thread has no run to adopt (none left, or someone took it up first). */
export async function adoptRun(deps: RunDeps, adoption: Adoption): Promise<RunSession | undefined> {
  const { threadId, runId, caller, language } = adoption;
  return deps.threads.locked(threadId, async (thread) => {
    const { claimed } = await deps.threads.claim(threadId);
    if (!claimed) return undefined;
    const stored = await thread.read();
    if (!stored || !mayUse(caller, stored) || !abandonedRun(deps, stored) || stored.runDigests.some((d) => d.runId === runId)) {
      await deps.threads.unclaim(threadId);
      return undefined;
    }
    const digest = runDigest({ adopted: stored.execution.executionId, runId });
    const record = { ...stored, runDigests: withRunDigest(stored.runDigests, runId, digest, deps.settings.window) };
    const requestId = flatRandomUUID();
    const span = adoption.span ?? NO_SPAN;
    const ticket: RunTicket = {
      request: {
        threadId,
        runId,
        protocolVersion: "1.0",
        iacCode: { schemaVersion: 1, rosInvocationId: stored.execution.rosInvocationId, cwd: stored.cwd, cleanupOnly: false },
        ignoredForwardedProps: 0,
      },
      digest,
      record,
      language,
      kind: "adopt",
      parts: new HandOver<A2APart[]>([]),
      messageId: flatRandomUUID(),
      startedAt: Date.now(),
      requestId,
      log: new RunLog(deps.logger, { requestId, threadId, runId }),
      interruptedRunId: undefined,
      workspace: { path: stored.cwd, missing: false, roots: [] },
      span,
      parkedSpan: undefined,
    };
    let session: RunSession;
    try {
      session = await startSession(deps, thread, ticket, stored);
    } catch (error) {
      await deps.threads.unclaim(threadId);
      deps.logger.warn({ err: error, threadId }, "a run left by a stopped gateway could not be taken up");
      return undefined;
    }
    ticket.log.info({ executionId: stored.execution.executionId, taskId: stored.execution.taskId }, "a run left by a stopped gateway is taken up");
    return session;
  });
}
