// Transitions of one thread record: how it is born, how a turn rotates its execution, how a run ends.
// Pure functions of the record they are handed; the thread repository decides when they are written.
import { UPSTREAM_LIMITS, isBoundedId, oversizedFrame } from "../a2a/limits.js";
import { contextIdForThread } from "../a2a/index.js";
import type { ThreadRecord } from "../state/thread-store.js";
import { idRecord, rememberTerminalExecution } from "../state/windows.js";

export function newThreadRecord(threadId: string, cwd: string, userId: string | null, rosInvocationId: string, executionId: string): ThreadRecord {
  return {
    schemaVersion: 1,
    threadId,
    contextId: contextIdForThread(threadId),
    cwd,
    userId,
    iacCodeSessionId: null,
    execution: {
      executionId,
      rosInvocationId,
      taskId: null,
      lastTaskId: null,
      pipelineSequence: 0,
      pipelineOpenSteps: [],
      pending: idRecord(),
    },
    runDigests: [],
    appliedResumeDigests: [],
    terminalExecutionIds: [],
  };
}

/** A new normal turn starts a new execution; the context and the iac-code session are kept. */
export function rotateExecution(record: ThreadRecord, rosInvocationId: string, executionId: string, window: number): void {
  const old = record.execution;
  rememberTerminalExecution(record, old.executionId, window);
  record.execution = {
    executionId,
    rosInvocationId,
    taskId: null,
    lastTaskId: old.taskId ?? old.lastTaskId,
    pipelineSequence: 0,
    pipelineOpenSteps: [],
    pending: idRecord(),
  };
}

export function markTerminal(record: ThreadRecord, window: number): void {
  const execution = record.execution;
  if (execution.taskId !== null) execution.lastTaskId = execution.taskId;
  execution.taskId = null;
  rememberTerminalExecution(record, execution.executionId, window);
}

export function hasPending(record: ThreadRecord): boolean {
  return Object.keys(record.execution.pending).length > 0;
}

/** A resume reusing the id of the run that ended at the thread's pending interrupts (DESIGN: more lenient, 2). */
export function resumesUnderInterruptedRun(record: ThreadRecord, runId: string): boolean {
  return record.execution.interruptedRunId === runId && hasPending(record);
}

export function allExpired(record: ThreadRecord, now: number): boolean {
  const entries = Object.values(record.execution.pending);
  return entries.length > 0 && entries.every((e) => e.expiresAt !== undefined && Date.parse(e.expiresAt) <= now);
}

/** What the kernel reveals is kept in the thread's state: bounded like every other id there. */
export function boundedUpstreamId(id: string): string {
  if (!isBoundedId(id)) throw oversizedFrame();
  return id;
}

export function boundedOpenSteps(open: string[]): string[] {
  if (open.length > UPSTREAM_LIMITS.maxOpenSteps || !open.every((key) => isBoundedId(key, UPSTREAM_LIMITS.maxStepKeyCodePoints))) {
    throw oversizedFrame();
  }
  return open;
}
