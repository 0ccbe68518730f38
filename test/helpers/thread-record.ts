// A valid, fully populated thread record for the state-store tests (every field the schema knows).
import type { ThreadRecord } from "../../src/state/thread-store.js";

export const DIGEST_A = "a".repeat(64);
export const DIGEST_B = "0123456789abcdef".repeat(4);

export function threadRecord(threadId = "thread-1", overrides: Partial<ThreadRecord> = {}): ThreadRecord {
  return {
    schemaVersion: 1,
    threadId,
    contextId: `agui-${"c".repeat(40)}`,
    cwd: "/work/project",
    userId: null,
    iacCodeSessionId: "session-1",
    execution: {
      executionId: "2f0c6f0e-8d8a-4a57-9c4e-1d1d7f6f8b10",
      rosInvocationId: "ros-1",
      taskId: "task-1",
      lastTaskId: null,
      pipelineSequence: 3,
      pipelineOpenSteps: ["step:evaluate_candidates"],
      pending: {
        "input-1": {
          value: { inputId: "input-1", kind: "permission", toolName: "deploy", title: "Deploy?", required: true },
          sideband: false,
          expiresAt: "2030-01-01T00:00:00.000Z",
        },
      },
      interruptedRunId: "run-1",
      parkedSpan: { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", parkedAt: "2029-12-31T23:51:00.000Z" },
    },
    // "42" before "run-1": integer-like keys are where JSON.stringify and the stored text would differ.
    runDigests: [{ runId: "run-1", digest: DIGEST_A }, { runId: "42", digest: DIGEST_B }],
    appliedResumeDigests: [{ executionId: "exec-0", interruptId: "input-0", digest: DIGEST_B }],
    terminalExecutionIds: ["exec-0"],
    ...overrides,
  };
}
