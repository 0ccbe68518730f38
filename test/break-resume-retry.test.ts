// Outsider checks of "a resume refused for its payload under the interrupted run's id leaves that id to the corrected
// retry": refused twice, refused under another id first, and on a disk that fails when the id is given back.
import { randomUUID } from "node:crypto";
import type { RunAgentInput } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileThreadStore } from "../src/state/file-store.js";
import { streamProblems } from "./helpers/checks.js";
import { RenameFault, allowOnce, interruptsOf, resumeInput, startDurableStack, type DurableStack, type ResumeEntry } from "./helpers/durable.js";
import { finishRun, postRun } from "./helpers/replicas.js";
import type { WireEvent } from "./helpers/sse.js";

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

const mistyped = (id: string): ResumeEntry => ({ interruptId: id, status: "resolved", payload: { decision: "maybe" } });

async function park(): Promise<{ input: RunAgentInput; id: string }> {
  const input = stack.input({ prompt: "deploy the stack" });
  const [interrupt] = interruptsOf(await finishRun(await postRun(stack.gateway.url, input)));
  return { input, id: interrupt!.id };
}

/** The outcome of a resume: its refusal code, or its terminal event's code/outcome. */
async function outcomeOf(body: unknown): Promise<string> {
  const posted = await postRun(stack.gateway.url, body);
  if (posted.status !== 200) return `refused:${posted.json.error.code}`;
  const events: WireEvent[] = await posted.live!.rest();
  expect(streamProblems(events)).toEqual([]);
  const last = events.at(-1)!;
  return last.type === "RUN_ERROR" ? `error:${String(last["code"])}` : `finished:${(last["outcome"] as { type: string }).type}`;
}

describe("the interrupted run's id after a refused resume", () => {
  it("refused twice under it, then the corrected retry under it applies", async () => {
    const { input, id } = await park();
    const runId = input.runId;
    expect(await outcomeOf(resumeInput(input, [mistyped(id)], { runId }))).toBe("error:RESUME_PAYLOAD_INVALID");
    expect(await outcomeOf(resumeInput(input, [{ ...mistyped(id), payload: { decision: "perhaps" } }], { runId }))).toBe("error:RESUME_PAYLOAD_INVALID");
    expect(await outcomeOf(resumeInput(input, [allowOnce(id)], { runId }))).toBe("finished:success");
  });

  it("refused under a new id first, then the corrected retry under the interrupted run's id applies", async () => {
    const { input, id } = await park();
    expect(await outcomeOf(resumeInput(input, [mistyped(id)], { runId: randomUUID() }))).toBe("error:RESUME_PAYLOAD_INVALID");
    expect(await outcomeOf(resumeInput(input, [allowOnce(id)], { runId: input.runId }))).toBe("finished:success");
  });

  it("refused while the disk fails to give the id back: the client is told STATE_PERSISTENCE_FAILED, or the retry under the id applies", async () => {
    const { input, id } = await park();
    // Every save from the refused resume's third on fails: its admission and its reconciled pending set are
    // written, the id's return is not.
    const start = fault.attempts.length;
    fault.failAfter(2);
    let refused: string;
    try {
      refused = await outcomeOf(resumeInput(input, [mistyped(id)], { runId: input.runId }));
    } finally {
      fault.heal();
    }
    const saves = fault.attempts.slice(start).filter((a) => a.threadId === input.threadId);
    expect(saves.slice(0, 3).map((a) => a.failed), "admission, reconcile, then the id's return (failed)").toEqual([false, false, true]);
    const retry = await outcomeOf(resumeInput(input, [allowOnce(id)], { runId: input.runId }));
    expect({ refused, retry }).toSatisfy(
      (o: { refused: string; retry: string }) => o.refused === "error:STATE_PERSISTENCE_FAILED" || o.retry === "finished:success",
      JSON.stringify({ refused, retry }),
    );
  });
});
