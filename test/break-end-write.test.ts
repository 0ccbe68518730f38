// Outsider checks of the run's end on a disk that fails: when the end of a run cannot be written, the run ends
// RUN_ERROR STATE_PERSISTENCE_FAILED (never RUN_FINISHED), and once the disk is back the thread takes a new turn.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileThreadStore } from "../src/state/file-store.js";
import { streamProblems } from "./helpers/checks.js";
import { RenameFault, interruptsOf, resumeInput, startDurableStack, type DurableStack } from "./helpers/durable.js";
import { postRun, finishRun } from "./helpers/replicas.js";

let stack: DurableStack;
const fault = new RenameFault();

beforeAll(async () => {
  stack = await startDurableStack();
  await stack.restart({ store: new FileThreadStore({ dir: stack.stateDir, fs: fault.fs }) });
});

afterAll(async () => {
  fault.heal();
  await stack?.close();
});

describe("a run whose end cannot be written", () => {
  it("ends RUN_ERROR STATE_PERSISTENCE_FAILED, and the thread takes the next turn once the disk is back", async () => {
    // How many saves an ordinary turn makes: the last one is its end.
    const calibration = stack.input();
    const from = fault.attempts.length;
    const calibrated = await finishRun(await postRun(stack.gateway.url, calibration));
    expect(calibrated.at(-1)).toMatchObject({ type: "RUN_FINISHED" });
    const saves = fault.attempts.slice(from).filter((a) => a.threadId === calibration.threadId).length;
    expect(saves).toBeGreaterThan(1);

    const input = stack.input();
    const start = fault.attempts.length;
    fault.failAfter(saves - 1);
    let events;
    try {
      const posted = await postRun(stack.gateway.url, input);
      expect(posted.status).toBe(200);
      events = await posted.live!.rest();
    } finally {
      fault.heal();
    }
    const attempts = fault.attempts.slice(start).filter((a) => a.threadId === input.threadId);
    expect(attempts.at(-1), "the end's save was the one that failed").toMatchObject({ failed: true });
    expect(streamProblems(events)).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "STATE_PERSISTENCE_FAILED" });

    const next = await postRun(stack.gateway.url, { ...input, runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content: "disk is back" }] });
    expect(next.status === 200 ? "admitted" : next.json?.error?.code).toBe("admitted");
    expect((await finishRun(next)).at(-1)).toMatchObject({ type: "RUN_FINISHED" });
  });
});

describe("a resume that cancels the task (a prompt answered cancelled) on a disk that fails from the cancel on", () => {
  it("does not end as cancelled when the cancelled execution could not be written; the next turn is admitted once the disk is back", async () => {
    const pipeline = { runMode: "pipeline", pipelineName: "selling" };
    const parkAndCancel = async (failFrom?: number) => {
      const input = stack.input({ prompt: "Create a vswitch in an existing VPC", iacCode: pipeline });
      const first = await finishRun(await postRun(stack.gateway.url, input));
      const [interrupt] = interruptsOf(first);
      const start = fault.attempts.length;
      if (failFrom !== undefined) fault.failAfter(failFrom);
      let events;
      try {
        const posted = await postRun(stack.gateway.url, resumeInput(input, [{ interruptId: interrupt!.id, status: "cancelled" }]));
        expect(posted.status, JSON.stringify(posted.json)).toBe(200);
        events = await posted.live!.rest();
      } finally {
        fault.heal();
      }
      return { input, events, saves: fault.attempts.slice(start).filter((a) => a.threadId === input.threadId) };
    };
    // On a healthy disk: which save of the resume is the first without the pending interrupt (the cancel's).
    const healthy = await parkAndCancel();
    expect(streamProblems(healthy.events)).toEqual([]);
    expect(healthy.events.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "CANCELLED" });
    const cancelSave = healthy.saves.findIndex((s) => !s.hasPending);
    expect(cancelSave).toBeGreaterThan(0);

    const broken = await parkAndCancel(cancelSave);
    expect(broken.saves[cancelSave], "the cancel's save failed").toMatchObject({ failed: true, hasPending: false });
    expect(streamProblems(broken.events)).toEqual([]);
    const next = await postRun(stack.gateway.url, { ...broken.input, runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content: "disk is back" }] });
    const nextOutcome = next.status === 200 ? "admitted" : next.json?.error?.code;
    if (next.status === 200) await finishRun(next);
    // Either the end is durable and the next turn is admitted, or the client was told it is not (fail closed) and the
    // stale interrupt it then meets is answered with EXECUTION_LOST, which frees the thread.
    if (nextOutcome !== "admitted") {
      expect(broken.events.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "STATE_PERSISTENCE_FAILED" });
      expect(nextOutcome).toBe("RESUME_REQUIRED");
      const stale = (next.json.error.interrupts as { id: string }[])[0]!;
      const answered = await finishRun(await postRun(stack.gateway.url, resumeInput(broken.input, [{ interruptId: stale.id, status: "cancelled" }])));
      expect(answered.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "EXECUTION_LOST" });
      const after = await postRun(stack.gateway.url, { ...broken.input, runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content: "and now" }] });
      expect(after.status).toBe(200);
      await finishRun(after);
    }
  });
});
