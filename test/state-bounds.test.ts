// Thread state stays bounded and ids are ids (issue 14): ids of at most 256 code points of well-formed
// Unicode, run ids remembered for a window (the file stops growing; recent ids stay single-use), and
// "__proto__" an id like any other — as a run id and as an upstream interrupt id.
import { readFile, stat } from "node:fs/promises";
import { createHash, randomUUID } from "node:crypto";
import type { RunAgentInput } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoScript, type TurnScript } from "../src/demo/index.js";
import { serializeThreadRecord } from "../src/state/file-store.js";
import type { ThreadRecord } from "../src/state/thread-store.js";
import { parseThreadRecord } from "../src/state/validate.js";
import {
  CURRENT_EXECUTION_ANSWERS,
  DEFAULT_RUN_ID_WINDOW,
  TEXT_SEGMENT_WINDOW,
  idRecord,
  withAppliedDigest,
  withRunDigest,
  withTerminalExecution,
  withTextSegment,
} from "../src/state/windows.js";
import { allowOnce, interruptsOf, resumeInput, startDurableStack, type DurableStack } from "./helpers/durable.js";
import { frame, postRaw, promptOf, runWithHttpAgent } from "./helpers/e2e.js";
import { sseEvents } from "./helpers/faults.js";

const WINDOW = 8;
const SESSION = "session-bounds";
const PID = process.pid;

const demo = createDemoScript({ frameDelayMs: 0 });
const script: TurnScript = (turn) => {
  if (promptOf(turn) === "proto input") {
    return [
      frame.working({ sessionId: SESSION }),
      frame.status("TASK_STATE_INPUT_REQUIRED", {
        sessionId: SESSION,
        iac: {
          input: { schemaVersion: 1, kind: "permission", requestTaskId: turn.taskId, contextId: turn.contextId, inputId: "__proto__", toolUseId: "tool-p", prompt: "Allow?", required: true },
        },
      }),
    ];
  }
  if (turn.existingTask) return [frame.working({ text: "Answer received.", messageId: `m-${turn.turnIndex}` }), frame.status("TASK_STATE_INPUT_REQUIRED", { sessionId: SESSION })];
  return demo(turn);
};

let stack: DurableStack;

beforeAll(async () => {
  stack = await startDurableStack({ script, gateway: { runIdWindow: WINDOW, interruptTtlSeconds: 0 } });
});

afterAll(async () => {
  await stack?.close();
});

async function expectAlive(): Promise<void> {
  expect(process.pid).toBe(PID);
  const health = await fetch(new URL("/health", stack.gateway.url), { signal: AbortSignal.timeout(5_000) });
  expect(health.status).toBe(200);
}

const threadFile = (threadId: string) => `${stack.stateDir}/threads/${threadId}.json`;

async function turn(input: RunAgentInput): Promise<{ status: number; code?: string; last?: string }> {
  const reply = await postRaw(stack.gateway.url, input);
  if (reply.status !== 200) return { status: reply.status, code: (reply.json as { error?: { code?: string } })?.error?.code };
  const events = sseEvents(reply.text).events;
  return { status: 200, ...(events.at(-1) && { last: events.at(-1)!.type }) };
}

describe("ids", () => {
  it("a thread id with a lone surrogate is INVALID_INPUT, so it never collides with its U+FFFD twin", async () => {
    const lone = await turn(stack.input({ threadId: "coll-\ud800" }));
    expect(lone).toMatchObject({ status: 400, code: "INVALID_INPUT" });
    expect(await turn(stack.input({ threadId: "coll-\ufffd" }))).toMatchObject({ status: 200, last: "RUN_FINISHED" });
    expect(await turn(stack.input({ threadId: "coll-\ufffd", runId: randomUUID() }))).toMatchObject({ status: 200, last: "RUN_FINISHED" });
    await expectAlive();
  });

  it("thread, run and interrupt ids of more than 256 code points are INVALID_INPUT; 256 pass", async () => {
    const long = "\u{1F642}".repeat(257);
    for (const overrides of [{ threadId: long }, { runId: long }, { runId: "r".repeat(100_000) }, { resume: [allowOnce(long)] }]) {
      const reply = await postRaw(stack.gateway.url, stack.input(overrides));
      expect(reply.status).toBe(400);
      expect((reply.json as { error: { code: string; message: string } }).error.code).toBe("INVALID_INPUT");
    }
    expect(await turn(stack.input({ threadId: "\u{1F642}".repeat(256), runId: "r".repeat(256) }))).toMatchObject({ status: 200, last: "RUN_FINISHED" });
    await expectAlive();
  });

  it('"__proto__" as a run id is recorded: its replay is refused, also after a restart', async () => {
    const first = stack.input({ runId: "__proto__" });
    expect(await turn(first)).toMatchObject({ status: 200, last: "RUN_FINISHED" });
    expect(await turn(first)).toMatchObject({ status: 409, code: "DUPLICATE_RUN_ID" });
    const stored = JSON.parse(await readFile(threadFile(first.threadId), "utf8")) as ThreadRecord;
    expect(stored.runDigests.map((entry) => entry.runId)).toContain("__proto__");
    await stack.restart();
    expect(await turn(first)).toMatchObject({ status: 409, code: "DUPLICATE_RUN_ID" });
    await expectAlive();
  });

  it('an upstream interrupt id "__proto__" is stored as pending and can be answered, also after a restart', async () => {
    const first = stack.input({ prompt: "proto input" });
    const parked = await runWithHttpAgent(stack.gateway.url, first);
    expect(interruptsOf(parked.events).map((i) => i.id)).toEqual(["__proto__"]);
    const stored = JSON.parse(await readFile(threadFile(first.threadId), "utf8")) as ThreadRecord;
    expect(Object.keys(stored.execution.pending)).toEqual(["__proto__"]);
    await stack.restart();
    const answered = await postRaw(stack.gateway.url, resumeInput(first, [allowOnce("__proto__")]));
    expect(answered.status).toBe(200);
    const events = sseEvents(answered.text).events;
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    const after = JSON.parse(await readFile(threadFile(first.threadId), "utf8")) as ThreadRecord;
    expect(Object.keys(after.execution.pending)).toEqual([]);
    expect(after.appliedResumeDigests.map((d) => d.interruptId)).toEqual(["__proto__"]);
    await expectAlive();
  });
});

describe("state growth", () => {
  it(`the thread file stops growing after ${WINDOW} turns; the last ${WINDOW} run ids stay single-use`, async () => {
    const threadId = `growth-${randomUUID()}`;
    const inputs: RunAgentInput[] = [];
    const sizes: number[] = [];
    for (let i = 0; i < 4 * WINDOW; i++) {
      // Same-length run ids, so a stable window means a stable size.
      const input = stack.input({ threadId, runId: `run-${String(i).padStart(4, "0")}` });
      inputs.push(input);
      expect(await turn(input)).toMatchObject({ status: 200, last: "RUN_FINISHED" });
      sizes.push((await stat(threadFile(threadId))).size);
    }
    expect(new Set(sizes.slice(WINDOW + 1)).size).toBe(1);
    const record = JSON.parse(await readFile(threadFile(threadId), "utf8")) as ThreadRecord;
    expect(record.runDigests.map((entry) => entry.runId)).toEqual(inputs.slice(-WINDOW).map((i) => i.runId));
    expect(record.terminalExecutionIds.length).toBeLessThanOrEqual(WINDOW);
    for (const recent of inputs.slice(-WINDOW)) expect(await turn(recent)).toMatchObject({ status: 409, code: "DUPLICATE_RUN_ID" });
    await expectAlive();
  });

  it("an integer-like run id (\"42\") is remembered like any other once the window is full: its replay is refused", async () => {
    const threadId = `numeric-${randomUUID()}`;
    for (let i = 0; i < WINDOW; i++) expect(await turn(stack.input({ threadId, runId: `run-${i}` }))).toMatchObject({ status: 200, last: "RUN_FINISHED" });
    const numeric = stack.input({ threadId, runId: "42" });
    expect(await turn(numeric)).toMatchObject({ status: 200, last: "RUN_FINISHED" });
    // The newest id of the window: a replay must be refused, also after a restart.
    expect(await turn(numeric)).toMatchObject({ status: 409, code: "DUPLICATE_RUN_ID" });
    await stack.restart();
    expect(await turn(numeric)).toMatchObject({ status: 409, code: "DUPLICATE_RUN_ID" });
    await expectAlive();
  });

  it(`applied answers of one execution stop at ${CURRENT_EXECUTION_ANSWERS}, oldest dropped first`, () => {
    const record = { appliedResumeDigests: [] } as unknown as ThreadRecord;
    for (let i = 0; i < CURRENT_EXECUTION_ANSWERS + 10; i++) {
      record.appliedResumeDigests = withAppliedDigest(record.appliedResumeDigests, { executionId: "now", interruptId: `i-${i}`, digest: "d".repeat(64) }, 8);
    }
    expect(record.appliedResumeDigests).toHaveLength(CURRENT_EXECUTION_ANSWERS);
    expect(record.appliedResumeDigests[0]!.interruptId).toBe("i-10");
    expect(record.appliedResumeDigests.at(-1)!.interruptId).toBe(`i-${CURRENT_EXECUTION_ANSWERS + 9}`);
  });

  it("applied answers: older executions' leave the window oldest first, the current execution's all stay", () => {
    const record = { appliedResumeDigests: [] } as unknown as ThreadRecord;
    const answer = (executionId: string, interruptId: string) => ({ executionId, interruptId, digest: "d".repeat(64) });
    const remember = (entry: ReturnType<typeof answer>) => (record.appliedResumeDigests = withAppliedDigest(record.appliedResumeDigests, entry, 3));
    for (const id of ["a", "b", "c"]) remember(answer("old", id));
    remember(answer("now", "x"));
    expect(record.appliedResumeDigests.map((d) => `${d.executionId}:${d.interruptId}`)).toEqual(["old:b", "old:c", "now:x"]);
    for (const id of ["y", "z", "w"]) remember(answer("now", id));
    expect(record.appliedResumeDigests.map((d) => `${d.executionId}:${d.interruptId}`)).toEqual(["now:x", "now:y", "now:z", "now:w"]);
  });

  it(`text-segment digests of one execution stop at ${TEXT_SEGMENT_WINDOW}, oldest dropped first, and load back in that order`, () => {
    const execution = { textSnapshotDigests: [] } as unknown as ThreadRecord["execution"];
    const digestOf = (i: number) => createHash("sha256").update(`segment ${i}`).digest("hex");
    const remember = (digest: string) => (execution.textSnapshotDigests = withTextSegment(execution.textSnapshotDigests, digest));
    for (let i = 0; i < TEXT_SEGMENT_WINDOW + 500; i++) remember(digestOf(i));
    remember(digestOf(TEXT_SEGMENT_WINDOW + 499)); // a repeat changes nothing
    expect(execution.textSnapshotDigests).toHaveLength(TEXT_SEGMENT_WINDOW);
    expect(execution.textSnapshotDigests![0]).toBe(digestOf(500));
    expect(execution.textSnapshotDigests!.at(-1)).toBe(digestOf(TEXT_SEGMENT_WINDOW + 499));
  });

  it(`with the default window (${DEFAULT_RUN_ID_WINDOW}) a record of 1,000 turns is the size of one of ${DEFAULT_RUN_ID_WINDOW}`, () => {
    const record: ThreadRecord = {
      schemaVersion: 1,
      threadId: "t",
      contextId: "c",
      cwd: "/w",
      userId: null,
      iacCodeSessionId: null,
      execution: { executionId: "e", rosInvocationId: "r", taskId: null, lastTaskId: null, pipelineSequence: 0, pipelineOpenSteps: [], pending: idRecord() },
      runDigests: [],
      appliedResumeDigests: [],
      terminalExecutionIds: [],
    };
    const sizes: number[] = [];
    for (let i = 0; i < 1_000; i++) {
      record.runDigests = withRunDigest(record.runDigests, randomUUID(), "a".repeat(64), DEFAULT_RUN_ID_WINDOW);
      record.terminalExecutionIds = withTerminalExecution(record.terminalExecutionIds, randomUUID(), DEFAULT_RUN_ID_WINDOW);
      sizes.push(serializeThreadRecord(record).length);
    }
    expect(sizes[999]).toBe(sizes[DEFAULT_RUN_ID_WINDOW]);
    expect(sizes[999]).toBeLessThan(64 * 1024);
    // The window survives a round trip through the file in order: what leaves next is still the oldest.
    const reread = parseThreadRecord(JSON.parse(serializeThreadRecord(record)), "t");
    expect(reread.runDigests).toEqual(record.runDigests);
  });
});
