// Every change to a thread record is a named, pure transition: each is tested here on a frozen record (a
// transition that wrote into its input would throw), with no store, no kernel and no clock but the one given.
import { describe, expect, it } from "vitest";
import type { PendingInterrupt, ProjectionFact } from "../operators/index.js";
import type { PendingEntry, ThreadRecord } from "../src/state/thread-store.js";
import {
  admit,
  applyAnswers,
  endExecution,
  foldFact,
  inOrder,
  isRefusal,
  mayUse,
  parkInterrupts,
  reconcilePending,
  rememberTextSegment,
  reopenInterruptedRun,
  startNewSession,
  stillRunning,
  type AdmissionRequest,
  type Refusal,
  type Transition,
} from "../src/runs/transitions.js";
import { DIGEST_A, DIGEST_B, threadRecord } from "./helpers/thread-record.js";

const NOW = Date.parse("2026-06-01T00:00:00.000Z");
const WINDOW = 4;

function frozen<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const key of Object.keys(value)) frozen((value as Record<string, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}

/** A record with nothing pending, its last run "run-1". */
function idle(overrides: Partial<ThreadRecord> = {}): ThreadRecord {
  const base = threadRecord("t", overrides);
  return frozen({ ...base, execution: { ...base.execution, pending: {}, ...overrides.execution } });
}

function parked(expiresAt?: string): ThreadRecord {
  const base = threadRecord("t");
  const entry = base.execution.pending["input-1"]!;
  return frozen({
    ...base,
    execution: { ...base.execution, interruptedRunId: "run-1", pending: { "input-1": { ...entry, ...(expiresAt !== undefined && { expiresAt }) } } },
  });
}

function request(overrides: Partial<AdmissionRequest> = {}): AdmissionRequest {
  return {
    threadId: "t",
    runId: "run-new",
    digest: DIGEST_B,
    resume: false,
    rosInvocationId: "ros-1",
    userId: null,
    caller: { kind: "anonymous" },
    cwd: "/work/project",
    agui1: false,
    newExecutionId: "exec-new",
    window: WINDOW,
    now: NOW,
    claimed: true,
    busy: false,
    interruptsOf: (pending) => Object.keys(pending).map((id) => ({ id, reason: "approval" })),
    ...overrides,
  };
}

function refusalCode(result: object): string | undefined {
  return isRefusal(result as Refusal) ? (result as Refusal & { refused: { code: string } }).refused.code : undefined;
}

function applied(transition: Transition, record: ThreadRecord): ThreadRecord {
  const next = transition(record);
  if (isRefusal(next)) throw next.refused;
  return next;
}

describe("admit", () => {
  it("starts a new thread with the run id remembered; a resume or an unclaimed new thread is refused", () => {
    const admitted = admit(undefined, request());
    expect(refusalCode(admitted)).toBeUndefined();
    if (isRefusal(admitted)) return;
    expect(admitted.kind).toBe("turn");
    expect(admitted.record).toMatchObject({ threadId: "t", cwd: "/work/project", execution: { executionId: "exec-new", taskId: null } });
    expect(admitted.record.runDigests).toEqual([{ runId: "run-new", digest: DIGEST_B }]);
    expect(refusalCode(admit(undefined, request({ resume: true })))).toBe("EXECUTION_LOST");
    expect(refusalCode(admit(undefined, request({ claimed: false })))).toBe("THREAD_BUSY");
  });

  it("refuses a replayed run id (same body: DUPLICATE_RUN_ID, other body: RUN_ID_CONFLICT) before THREAD_BUSY", () => {
    expect(refusalCode(admit(idle(), request({ runId: "run-1", digest: DIGEST_A, busy: true })))).toBe("DUPLICATE_RUN_ID");
    expect(refusalCode(admit(idle(), request({ runId: "run-1", digest: DIGEST_B, busy: true })))).toBe("RUN_ID_CONFLICT");
    expect(refusalCode(admit(idle(), request({ busy: true })))).toBe("THREAD_BUSY");
    expect(refusalCode(admit(idle(), request({ claimed: false })))).toBe("THREAD_BUSY");
  });

  it("refuses another workspace or user, and a resume under another invocation", () => {
    expect(refusalCode(admit(idle(), request({ cwd: "/elsewhere" })))).toBe("THREAD_BINDING_CONFLICT");
    expect(refusalCode(admit(idle(), request({ userId: "mallory" })))).toBe("THREAD_BINDING_CONFLICT");
    expect(refusalCode(admit(parked(), request({ resume: true, rosInvocationId: "ros-other" })))).toBe("EXECUTION_LOST");
  });

  it("a user owns the thread it creates; a stranger is refused first, as THREAD_BINDING_CONFLICT, whatever else the request says", () => {
    const alice = { kind: "user", userId: "alice" } as const;
    const bob = { kind: "user", userId: "bob" } as const;
    const created = admit(undefined, request({ caller: alice, userId: "alice" }));
    if (isRefusal(created)) throw created.refused;
    expect(created.record).toMatchObject({ owner: "alice", createdAt: new Date(NOW).toISOString(), lastActiveAt: new Date(NOW).toISOString() });
    const owned = frozen({ ...created.record });
    // Not DUPLICATE_RUN_ID, THREAD_BUSY or RESUME_REQUIRED: those would tell the stranger the thread exists.
    for (const stranger of [request({ caller: bob }), request({ caller: bob, runId: "run-new", digest: DIGEST_B }), request({ caller: bob, busy: true }), request({ caller: bob, resume: true })]) {
      expect(refusalCode(admit(owned, stranger))).toBe("THREAD_BINDING_CONFLICT");
    }
    const later = admit(owned, request({ caller: alice, userId: "alice", runId: "run-2", now: NOW + 60_000 }));
    if (isRefusal(later)) throw later.refused;
    expect(later.record).toMatchObject({ createdAt: new Date(NOW).toISOString(), lastActiveAt: new Date(NOW + 60_000).toISOString() });
    // An ownerless thread (created by the trusted caller or without auth) is no user's.
    expect(refusalCode(admit(idle(), request({ caller: alice })))).toBe("THREAD_BINDING_CONFLICT");
  });

  it("the trusted caller and the anonymous one use any thread and own none", () => {
    const owned = idle({ owner: "alice" });
    expect(mayUse({ kind: "trusted" }, owned)).toBe(true);
    expect(mayUse({ kind: "anonymous" }, owned)).toBe(true);
    expect(mayUse({ kind: "user", userId: "alice" }, owned)).toBe(true);
    expect(mayUse({ kind: "user", userId: "bob" }, owned)).toBe(false);
    for (const caller of [{ kind: "trusted" }, { kind: "anonymous" }] as const) {
      const created = admit(undefined, request({ caller }));
      if (isRefusal(created)) throw created.refused;
      expect(Object.keys(created.record).filter((k) => ["owner", "createdAt", "lastActiveAt"].includes(k))).toEqual([]);
      expect(refusalCode(admit(owned, request({ caller })))).toBeUndefined();
    }
  });

  it("a turn rotates the execution: the old one is remembered as ended, its task kept as the last one", () => {
    const admitted = admit(idle(), request());
    if (isRefusal(admitted)) throw admitted.refused;
    expect(admitted.record.execution).toMatchObject({ executionId: "exec-new", taskId: null, lastTaskId: "task-1", pipelineSequence: 0 });
    expect(admitted.record.terminalExecutionIds).toContain(threadRecord().execution.executionId);
    expect(admitted.record.iacCodeSessionId).toBe("session-1");
  });

  it("a turn while interrupts wait: RESUME_REQUIRED with them, or a re-show for an AG-UI 1.0 client", () => {
    const refused = admit(parked(), request());
    expect(refusalCode(refused)).toBe("RESUME_REQUIRED");
    const reshow = admit(parked(), request({ agui1: true }));
    if (isRefusal(reshow)) throw reshow.refused;
    expect(reshow.kind).toBe("reshow");
    expect(Object.keys(reshow.record.execution.pending)).toEqual(["input-1"]);
  });

  it("a turn after every interrupt expired drops them and names the parked task to cancel", () => {
    const admitted = admit(parked(new Date(NOW - 1).toISOString()), request());
    if (isRefusal(admitted)) throw admitted.refused;
    expect(admitted.expiredTaskId).toBe("task-1");
    expect(admitted.kind).toBe("turn");
    expect(admitted.record.execution.pending).toEqual({});
  });

  it("a resume may reuse the interrupted run's id once (another body), and spends it", () => {
    const admitted = admit(parked(), request({ resume: true, runId: "run-1", digest: DIGEST_B }));
    if (isRefusal(admitted)) throw admitted.refused;
    expect(admitted.kind).toBe("resume");
    expect(admitted.record.execution.interruptedRunId).toBeUndefined();
    expect(refusalCode(admit(admitted.record, request({ resume: true, runId: "run-1", digest: DIGEST_A })))).toBe("RUN_ID_CONFLICT");
  });

  it("a resume under the interrupted run's id after its interrupts were cancelled is admitted, to be told EXECUTION_LOST", () => {
    const cancelled = applied(endExecution({ window: WINDOW, clearPending: true }), parked());
    expect(cancelled.execution.pending).toEqual({});
    const admitted = admit(cancelled, request({ resume: true, runId: "run-1", digest: DIGEST_B }));
    if (isRefusal(admitted)) throw admitted.refused;
    expect(admitted.kind).toBe("resume");
  });

  it("keeps the run-id window bounded", () => {
    let record: ThreadRecord = idle();
    for (let i = 0; i < 10; i++) {
      const admitted = admit(record, request({ runId: `r-${i}`, newExecutionId: `e-${i}` }));
      if (isRefusal(admitted)) throw admitted.refused;
      record = frozen(admitted.record);
    }
    expect(record.runDigests.map((d) => d.runId)).toEqual(["r-6", "r-7", "r-8", "r-9"]);
    expect(record.terminalExecutionIds).toHaveLength(WINDOW);
  });
});

describe("what a run's stream folds in", () => {
  it("folds the task and session ids, the pipeline cursor and open steps; other facts change nothing", () => {
    const facts: ProjectionFact[] = [
      { type: "IAC_CODE_FACT", fact: "taskId", taskId: "task-9" },
      { type: "IAC_CODE_FACT", fact: "sessionId", sessionId: "session-9" },
      { type: "IAC_CODE_FACT", fact: "pipelineCursor", sequence: 12 },
      { type: "IAC_CODE_FACT", fact: "openSteps", openSteps: ["step:a"] },
      { type: "IAC_CODE_FACT", fact: "outcome", outcome: "success", endedBy: "kernel" },
    ];
    const record = applied(inOrder(...facts.map(foldFact)), idle());
    expect(record.execution).toMatchObject({ taskId: "task-9", pipelineSequence: 12, pipelineOpenSteps: ["step:a"] });
    expect(record.iacCodeSessionId).toBe("session-9");
  });

  it("refuses an id the kernel sends past the bound (the state keeps ids only)", () => {
    const long = "x".repeat(600);
    expect(refusalCode(foldFact({ type: "IAC_CODE_FACT", fact: "taskId", taskId: long })(idle()))).toBe("A2A_PROTOCOL_ERROR");
    expect(refusalCode(foldFact({ type: "IAC_CODE_FACT", fact: "openSteps", openSteps: [long] })(idle()))).toBe("A2A_PROTOCOL_ERROR");
  });

  it("remembers text segments by digest, once each; a new session forgets the old one", () => {
    const record = applied(inOrder(rememberTextSegment(DIGEST_A), rememberTextSegment(DIGEST_A), startNewSession), idle());
    expect(record.execution.textSnapshotDigests).toEqual([DIGEST_A]);
    expect(record.iacCodeSessionId).toBeNull();
  });

  it("stillRunning refuses with CANCELLED once the execution ended", () => {
    const record = idle();
    expect(stillRunning(record.execution.executionId)(record)).toBe(record);
    const ended = applied(endExecution({ window: WINDOW, clearPending: true }), record);
    expect(refusalCode(stillRunning(record.execution.executionId)(ended))).toBe("CANCELLED");
  });
});

describe("interrupts and answers", () => {
  const pendingInterrupt = (id: string, expiresAt?: string): PendingInterrupt =>
    ({
      input: { value: { inputId: id, kind: "permission" }, sideband: false },
      interrupt: { id, reason: "approval", ...(expiresAt !== undefined && { expiresAt }) },
    }) as PendingInterrupt;

  it("parks interrupts with their expiry, names the run that ended at them and the replica that holds the task", () => {
    const record = idle();
    const next = applied(
      parkInterrupts({ executionId: record.execution.executionId, runId: "run-7", parkedBy: "replica-a", pending: [pendingInterrupt("__proto__", "2030-01-01T00:00:00.000Z")] }),
      record,
    );
    expect(Object.keys(next.execution.pending)).toEqual(["__proto__"]);
    expect(next.execution.pending["__proto__"]).toMatchObject({ expiresAt: "2030-01-01T00:00:00.000Z", sideband: false });
    expect(next.execution).toMatchObject({ interruptedRunId: "run-7", parkedBy: "replica-a" });
  });

  it("keeps the parking run's span for the resume (a re-show leaves it) and forgets it once the execution ends", () => {
    const record = idle();
    const span = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", parkedAt: "2030-01-01T00:00:00.000Z" };
    const parkedHere = applied(parkInterrupts({ executionId: record.execution.executionId, runId: "run-7", pending: [pendingInterrupt("input-1")], span }), record);
    expect(parkedHere.execution.parkedSpan).toEqual(span);
    const reshown = applied(parkInterrupts({ executionId: record.execution.executionId, runId: "run-8", pending: [] }), parkedHere);
    expect(reshown.execution.parkedSpan).toEqual(span);
    const answered = applied(applyAnswers([{ interruptId: "input-1", digest: DIGEST_A }], WINDOW), reshown);
    expect(answered.execution.parkedSpan).toEqual(span);
    expect(applied(endExecution({ window: WINDOW, clearPending: false }), answered).execution).not.toHaveProperty("parkedSpan");
  });

  it("refuses to park for an execution the cancel route ended (announcing it would revive it)", () => {
    const record = applied(endExecution({ window: WINDOW, clearPending: true }), parked());
    expect(refusalCode(parkInterrupts({ executionId: record.execution.executionId, runId: "r", pending: [] })(record))).toBe("CANCELLED");
  });

  it("applies answers: remembered for replays, no longer pending; reopening gives a refused resume its run id back", () => {
    const record = parked();
    const answered = applied(applyAnswers([{ interruptId: "input-1", digest: DIGEST_A }], WINDOW), record);
    expect(answered.execution.pending).toEqual({});
    expect(answered.appliedResumeDigests.at(-1)).toEqual({ executionId: record.execution.executionId, interruptId: "input-1", digest: DIGEST_A });
    expect(applied(reopenInterruptedRun("run-1"), answered).execution.interruptedRunId).toBe("run-1");
    const spent = frozen({ ...record, execution: { ...record.execution, interruptedRunId: undefined } });
    expect(applied(reopenInterruptedRun("run-1"), spent).execution.interruptedRunId).toBe("run-1");
    expect(applied(reopenInterruptedRun(undefined), spent)).toBe(spent);
  });

  it("reconciles the pending set a resume plan settled on, with answers the kernel took unrecorded", () => {
    const entry: PendingEntry = { value: { inputId: "input-2", kind: "question" }, sideband: true };
    const next = applied(reconcilePending({ "input-2": entry }, [{ executionId: "e", interruptId: "input-1", digest: DIGEST_A }], WINDOW), parked());
    expect(next.execution.pending).toEqual({ "input-2": entry });
    expect(next.appliedResumeDigests.at(-1)).toEqual({ executionId: "e", interruptId: "input-1", digest: DIGEST_A });
  });

  it("ends an execution: task id kept as the last one, remembered as ended, its interrupts cleared when asked", () => {
    const record = parked();
    const kept = applied(endExecution({ window: WINDOW, clearPending: false }), record);
    expect(kept.execution).toMatchObject({ taskId: null, lastTaskId: "task-1" });
    expect(Object.keys(kept.execution.pending)).toEqual(["input-1"]);
    expect(kept.terminalExecutionIds).toContain(record.execution.executionId);
    const cleared = applied(endExecution({ window: WINDOW, clearPending: true }), record);
    expect(cleared.execution.pending).toEqual({});
    // Idempotent: a run that ends after the cancel route ended its execution changes nothing more.
    expect(applied(endExecution({ window: WINDOW, clearPending: true }), frozen(cleared))).toEqual(cleared);
  });

  it("inOrder stops at the first refusal", () => {
    const record = applied(endExecution({ window: WINDOW, clearPending: true }), idle());
    const refused = inOrder(rememberTextSegment(DIGEST_A), stillRunning(record.execution.executionId), startNewSession)(record);
    expect(refusalCode(refused)).toBe("CANCELLED");
  });
});
