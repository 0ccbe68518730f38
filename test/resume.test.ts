// Unit tests of the resume rules (src/runs/resume.ts) without HTTP: which answers apply, every refusal code,
// the reconcile against the kernel's task, and how each kind of answer is encoded for A2A.
import { describe, expect, it } from "vitest";
import { RunError, type A2ATask, type InputValue } from "../operators/index.js";
import { encodeAnswer, planResume, resumeDigest, type PlannedAnswer, type ResumePlan } from "../src/runs/resume.js";
import { isRefusal, reconcilePending } from "../src/runs/transitions.js";
import type { ResumeEntry } from "../src/runs/input.js";
import type { PendingEntry, ThreadRecord } from "../src/state/thread-store.js";

const NOW = Date.parse("2026-01-01T00:00:00Z");
const permission: InputValue = { inputId: "perm-1", kind: "permission", toolUseId: "tool-1", required: true };
const question: InputValue = {
  inputId: "q-1",
  kind: "question",
  toolUseId: "tool-q",
  required: true,
  options: [{ id: "a", label: "Option A" }, { id: "b" }],
};

function record(pending: Record<string, PendingEntry> = { [permission.inputId]: { value: permission, sideband: false } }): ThreadRecord {
  return {
    schemaVersion: 1,
    threadId: "thread-1",
    contextId: "context-1",
    cwd: "/tmp/ws",
    userId: null,
    iacCodeSessionId: "session-1",
    execution: {
      executionId: "exec-1",
      rosInvocationId: "inv-1",
      taskId: "task-1",
      lastTaskId: "task-1",
      pipelineSequence: 0,
      pipelineOpenSteps: [],
      pending,
    },
    runDigests: [],
    appliedResumeDigests: [],
    terminalExecutionIds: [],
  };
}

const allow = (interruptId = permission.inputId): ResumeEntry => ({ interruptId, status: "resolved", payload: { decision: "allow_once" } });
const waitingTask = (...inputs: InputValue[]): A2ATask =>
  ({
    id: "task-1",
    contextId: "context-1",
    status: { state: "TASK_STATE_INPUT_REQUIRED" },
    metadata: { iac_code: { ...(inputs[0] && { input: inputs[0] }), pendingPermissions: inputs.slice(1) } },
  }) as A2ATask;

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(RunError);
    return (error as RunError).code;
  }
  throw new Error("expected a RunError");
}

/** The plan, a refusal thrown (as the resume flow meets it). */
function plan(...args: Parameters<typeof planResume>): Exclude<ResumePlan, { kind: "refused" }> {
  const planned = planResume(...args).plan;
  if (planned.kind === "refused") throw planned.error;
  return planned;
}

/** The record as the resume flow writes it after planning, refused or not (planResume itself changes nothing). */
function reconciled(...args: Parameters<typeof planResume>): ThreadRecord {
  const before = structuredClone(args[0]);
  const planned = planResume(...args);
  expect(args[0]).toEqual(before);
  const after = reconcilePending(planned.pending, planned.recovered, 256)(args[0]);
  if (isRefusal(after)) throw after.refused;
  return after;
}

describe("planResume", () => {
  it("applies a resolved permission with its decision and the entry's digest", () => {
    const entry = allow();
    const planned = plan(record(), [entry], undefined, NOW);
    expect(planned.kind).toBe("apply");
    if (planned.kind !== "apply") return;
    expect(planned.answers).toHaveLength(1);
    expect(planned.answers[0]).toMatchObject({ entry, decision: "allow_once", digest: resumeDigest(entry) });
  });

  it("turns a cancelled permission into deny, and a cancelled question into cancelling the task", () => {
    const deny = plan(record(), [{ interruptId: permission.inputId, status: "cancelled" }], undefined, NOW);
    expect(deny.kind === "apply" && deny.answers[0]?.decision).toBe("deny");
    const pending = { [question.inputId]: { value: question, sideband: false } };
    expect(plan(record(pending), [{ interruptId: question.inputId, status: "cancelled" }], undefined, NOW).kind).toBe("cancel");
  });

  it("refuses when there is no task or nothing pending: EXECUTION_LOST, or RESUME_ALREADY_APPLIED for the same answer again", () => {
    const lost = record();
    lost.execution.taskId = null;
    expect(refusal(() => plan(lost, [allow()], undefined, NOW))).toBe("EXECUTION_LOST");
    const done = record({});
    done.appliedResumeDigests.push({ executionId: "exec-1", interruptId: permission.inputId, digest: resumeDigest(allow()) });
    expect(refusal(() => plan(done, [allow()], undefined, NOW))).toBe("RESUME_ALREADY_APPLIED");
    const other = { interruptId: permission.inputId, status: "resolved" as const, payload: { decision: "deny" } };
    expect(refusal(() => plan(done, [other], undefined, NOW))).toBe("EXECUTION_LOST");
  });

  it("refuses an expired interrupt with EXECUTION_EXPIRED", () => {
    const expired = record({ [permission.inputId]: { value: permission, sideband: false, expiresAt: new Date(NOW - 1).toISOString() } });
    expect(refusal(() => plan(expired, [allow()], undefined, NOW))).toBe("EXECUTION_EXPIRED");
    const fresh = record({ [permission.inputId]: { value: permission, sideband: false, expiresAt: new Date(NOW + 1).toISOString() } });
    expect(plan(fresh, [allow()], undefined, NOW).kind).toBe("apply");
  });

  it("refuses duplicate ids, unknown ids and a partial answer set", () => {
    expect(refusal(() => plan(record(), [allow(), allow()], undefined, NOW))).toBe("INCOMPLETE_RESUME");
    expect(refusal(() => plan(record(), [allow(), allow("nobody")], undefined, NOW))).toBe("UNKNOWN_INTERRUPT");
    const two = record({ [permission.inputId]: { value: permission, sideband: false }, [question.inputId]: { value: question, sideband: false } });
    expect(refusal(() => plan(two, [allow()], undefined, NOW))).toBe("INCOMPLETE_RESUME");
  });

  it("refuses a resolved answer without a payload or with one its schema rejects", () => {
    expect(refusal(() => plan(record(), [{ interruptId: permission.inputId, status: "resolved" }], undefined, NOW))).toBe("RESUME_PAYLOAD_INVALID");
    const bad = { interruptId: permission.inputId, status: "resolved" as const, payload: { decision: "always" } };
    expect(refusal(() => plan(record(), [bad], undefined, NOW))).toBe("RESUME_PAYLOAD_INVALID");
  });

  it("refuses a different answer to an id already applied, and drops an id applied with the same answer", () => {
    const changed = record();
    changed.appliedResumeDigests.push({ executionId: "exec-1", interruptId: permission.inputId, digest: "0".repeat(64) });
    expect(refusal(() => plan(changed, [allow()], undefined, NOW))).toBe("RESUME_ALREADY_APPLIED");
    // Applied digests of another execution do not count.
    const elsewhere = record();
    elsewhere.appliedResumeDigests.push({ executionId: "exec-0", interruptId: permission.inputId, digest: "0".repeat(64) });
    expect(plan(elsewhere, [allow()], undefined, NOW).kind).toBe("apply");
  });

  it("clears the pending set and refuses when the kernel's task is already terminal", () => {
    const r = record();
    const task = { id: "task-1", contextId: "context-1", status: { state: "TASK_STATE_COMPLETED" } } as A2ATask;
    expect(refusal(() => plan(r, [allow()], task, NOW))).toBe("EXECUTION_LOST");
    expect(reconciled(r, [allow()], task, NOW).execution.pending).toEqual({});
  });

  it("announces inputs the kernel shows that nobody has seen yet instead of sending anything", () => {
    const r = record();
    const planned = plan(r, [allow()], waitingTask(permission, question), NOW);
    expect(planned.kind).toBe("announce");
    if (planned.kind !== "announce") return;
    expect(Object.keys(planned.pending).sort()).toEqual([permission.inputId, question.inputId].sort());
    expect(planned.pending[question.inputId]?.sideband).toBe(true);
  });

  it("records an answer the kernel took but the gateway never recorded, so it is never sent twice", () => {
    const r = record();
    const task = {
      id: "task-1",
      contextId: "context-1",
      status: { state: "TASK_STATE_WORKING" },
      history: [{ messageId: `agui-resume-x-${permission.inputId}`, role: "ROLE_USER", parts: [] }],
    } as unknown as A2ATask;
    expect(refusal(() => plan(r, [allow()], task, NOW))).toBe("RESUME_ALREADY_APPLIED");
    const after = reconciled(r, [allow()], task, NOW);
    expect(after.appliedResumeDigests).toEqual([{ executionId: "exec-1", interruptId: permission.inputId, digest: resumeDigest(allow()) }]);
    expect(after.execution.pending).toEqual({});
  });

  it("gives up an interrupt the waiting kernel no longer asks for (EXECUTION_LOST)", () => {
    const r = record();
    expect(refusal(() => plan(r, [allow()], waitingTask(question), NOW))).toBe("EXECUTION_LOST");
    expect(reconciled(r, [allow()], waitingTask(question), NOW).execution.pending).toEqual({});
  });
});

describe("resumeDigest", () => {
  it("depends on status and payload only, not on key order", () => {
    const a = resumeDigest({ interruptId: "x", status: "resolved", payload: { a: 1, b: 2 } });
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(resumeDigest({ interruptId: "y", status: "resolved", payload: { b: 2, a: 1 } })).toBe(a);
    expect(resumeDigest({ interruptId: "x", status: "cancelled", payload: { a: 1, b: 2 } })).not.toBe(a);
  });
});

const planned = (value: InputValue, entry: Omit<ResumeEntry, "interruptId">, decision?: "allow_once" | "deny"): PlannedAnswer => ({
  entry: { interruptId: value.inputId, ...entry },
  pending: { value, sideband: false },
  digest: "d",
  ...(decision && { decision }),
});

describe("encodeAnswer", () => {
  it("sends a permission as the iac-code data part, deny unless allowed", () => {
    expect(encodeAnswer(planned(permission, { status: "resolved" }, "allow_once"), "task-1", "context-1")).toEqual({
      parts: [
        {
          data: { schemaVersion: 1, kind: "permission", requestTaskId: "task-1", inputId: "perm-1", toolUseId: "tool-1", decision: "allow_once" },
          mediaType: "application/json",
        },
      ],
    });
    const bare = { inputId: "perm-2", kind: "permission" };
    const encoded = encodeAnswer(planned(bare, { status: "cancelled" }), "task-1", "context-1");
    expect(encoded.parts[0]?.data).toMatchObject({ toolUseId: "", decision: "deny" });
    expect(encoded.toolResult).toBeUndefined();
  });

  it("sends a question's free text, else the chosen option's label, else its id; an empty answer is refused", () => {
    const free = encodeAnswer(planned(question, { status: "resolved", payload: { freeText: "my words" } }), "task-1", "context-1");
    expect(free).toEqual({ parts: [{ text: "my words" }], toolResult: { toolCallId: "tool-q", content: "my words" } });
    expect(encodeAnswer(planned(question, { status: "resolved", payload: { selectedId: "a" } }), "t", "c").parts).toEqual([{ text: "Option A" }]);
    expect(encodeAnswer(planned(question, { status: "resolved", payload: { selectedId: "b" } }), "t", "c").parts).toEqual([{ text: "b" }]);
    expect(refusal(() => encodeAnswer(planned(question, { status: "resolved", payload: {} }), "t", "c"))).toBe("RESUME_PAYLOAD_INVALID");
  });

  it("sends a deployment confirmation as the kernel's JSON (Python separators, lower-case action)", () => {
    const confirmation: InputValue = { inputId: "dep-1", kind: "deployment_confirmation", options: [{ id: "go", action: "Confirm" }] };
    const direct = encodeAnswer(planned(confirmation, { status: "resolved", payload: { action: "ADJUST", parameter_overrides: { size: 2, zone: null, tags: ["a", "b"] } } }), "t", "c");
    expect(direct.parts).toEqual([{ text: '{"action": "adjust", "parameter_overrides": {"size": 2, "tags": ["a", "b"]}}' }]);
    expect(direct.toolResult).toBeUndefined();
    const byOption = encodeAnswer(planned(confirmation, { status: "resolved", payload: { selectedId: "go" } }), "t", "c");
    expect(byOption.parts).toEqual([{ text: '{"action": "confirm", "parameter_overrides": {}}' }]);
    expect(refusal(() => encodeAnswer(planned(confirmation, { status: "resolved", payload: { selectedId: "nope" } }), "t", "c"))).toBe("RESUME_PAYLOAD_INVALID");
  });

  it("sends a resource selection as its label plus the inputResponse metadata channel", () => {
    const selection: InputValue = { inputId: "sel-1", kind: "cloud_resource_selection", toolUseId: "tool-s", selector: { id: "vpc-selector" } };
    const encoded = encodeAnswer(planned(selection, { status: "resolved", payload: { value: "vpc-123", label: "Main VPC" } }), "task-1", "context-1");
    expect(encoded).toEqual({
      parts: [{ text: "Main VPC" }],
      metadata: {
        inputResponse: {
          schemaVersion: 1,
          kind: "cloud_resource_selection",
          status: "selected",
          requestTaskId: "task-1",
          contextId: "context-1",
          inputId: "sel-1",
          toolUseId: "tool-s",
          selectorId: "vpc-selector",
          value: "vpc-123",
          label: "Main VPC",
        },
      },
      toolResult: { toolCallId: "tool-s", content: "Main VPC" },
    });
    const free = encodeAnswer(planned(selection, { status: "resolved", payload: { freeText: "vpc-999" } }), "t", "c");
    expect(free.parts).toEqual([{ text: "vpc-999" }]);
  });
});
