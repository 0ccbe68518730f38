// The cancel extension (reference-adapter §8.3): stop the execution's A2A task and end it in the thread's
// state. Upstream failures surface as A2A_UNAVAILABLE.
import { isTaskAlreadyTerminal, toRunError } from "../a2a/error-mapping.js";
import type { RunContext } from "./run-context.js";
import { loadRecovered } from "./recovery.js";
import { hasPending, markTerminal } from "./thread-record.js";

export type CancelOutcome = "cancelled" | "already_terminal" | "not_found";

export function cancelExecution(context: RunContext, executionId: string, threadId: string, rosInvocationId: string): Promise<CancelOutcome> {
  return context.threads.locked(threadId, async () => {
    const record = await loadRecovered(context, threadId);
    if (!record) return "not_found";
    const execution = record.execution;
    if (execution.executionId !== executionId) {
      return record.terminalExecutionIds.includes(executionId) ? "already_terminal" : "not_found";
    }
    if (execution.rosInvocationId !== rosInvocationId) return "not_found";
    const live = context.activeRuns.has(threadId);
    if (!live && !hasPending(record) && execution.taskId === null) return "already_terminal";
    if (execution.taskId !== null) {
      try {
        await context.a2a.cancelTask(execution.taskId);
      } catch (error) {
        if (!isTaskAlreadyTerminal(error)) throw toRunError(error, "A2A_UNAVAILABLE");
      }
    }
    execution.pending = {};
    markTerminal(record, context.window);
    context.threads.keep(record);
    await context.threads.persist(record);
    if (!live) context.threads.forget(threadId);
    return "cancelled";
  });
}
