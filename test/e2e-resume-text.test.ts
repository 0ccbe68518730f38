// The resume-text rule end to end (reference-adapter §5.4, issue 13 item 6): a kernel that replays, after
// each answer, the whole text its message already streamed. The gateway shows only what is new, keeps
// nothing but digests in the state file, and is restarted between every two runs. Normal and pipeline mode.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject } from "../operators/types.js";
import type { ScriptItem, TurnContext, TurnScript } from "../src/demo/index.js";
import { allowOnce, interruptsOf, resumeInput, startDurableStack, type DurableStack } from "./helpers/durable.js";
import { frame, runWithHttpAgent, type WireEvent } from "./helpers/e2e.js";
import { permissionInput } from "./helpers/frames.js";

const SESSION_ID = "session-resume-text";
const sha = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");


let sequence = 0;
/** A pipeline envelope on the plan step (pipeline mode only). */
function envelope(turn: TurnContext, eventType: string, data: JsonObject = {}): JsonObject {
  sequence += 1;
  return { eventId: `evt-${turn.taskId}-${sequence}`, sequence, eventType, scope: "step", step: { id: "plan", runId: "step-plan-1" }, data };
}

/**
 * Every turn of a task repeats the cumulative text of message `<task>-m`, then appends to it: "first",
 * then "firstsecond", then "firstsecondthird" and an unrelated message. The first turn's interrupt frame
 * also carries a status text, which the resume preflight's GetTask therefore returns as well.
 */
const cumulativeScript: TurnScript = (turn) => {
  const pipeline = (turn.userMessage.metadata?.iac_code as JsonObject | undefined)?.run_mode === "pipeline";
  const messageId = `${turn.taskId}-m`;
  const say = (text: string, id = messageId) => frame.working({ text, messageId: id, sessionId: SESSION_ID });
  const step = (eventType: string, data?: JsonObject): ScriptItem[] =>
    pipeline ? [frame.working({ sessionId: SESSION_ID, iac: { pipeline: envelope(turn, eventType, data) } })] : [];
  const accepted = frame.working({ iac: { inputReceived: { kind: "permission" } } });
  const park = (inputId: string, text?: string) =>
    frame.status("TASK_STATE_INPUT_REQUIRED", {
      sessionId: SESSION_ID,
      iac: { input: permissionInput(turn, inputId, `call_${inputId}`) },
      ...(text !== undefined && { text, messageId: `${turn.taskId}-wait` }),
    });
  switch (turn.turnIndex) {
    case 0:
      return [frame.working({ sessionId: SESSION_ID }), ...step("step_started"), ...step("text_delta", { text: "Planning. " }), say("first"), park("permission-one", "Waiting for approval.")];
    case 1:
      return [accepted, say("firstsecond"), park("permission-two")];
    default:
      return [
        accepted,
        say("firstsecondthird"),
        say("An unrelated message.", `${turn.taskId}-other`),
        ...step("step_completed"),
        frame.status("TASK_STATE_INPUT_REQUIRED", { sessionId: SESSION_ID }),
      ];
  }
};

/** What each message of a run showed, by message id suffix (`m`, `wait`, `other`, or the pipeline step). */
function textsOf(events: readonly WireEvent[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of events) {
    if (e.type !== "TEXT_MESSAGE_CONTENT") continue;
    const id = String(e.messageId);
    const key = id.startsWith("pipeline-message:") ? "pipeline" : id.slice(id.lastIndexOf("-") + 1);
    out[key] = (out[key] ?? "") + String(e.delta);
  }
  return out;
}

let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack({ script: cumulativeScript });
});
afterAll(async () => {
  await stack.close();
});

async function stateOf(threadId: string): Promise<{ text: string; digests: string[] }> {
  const text = await readFile(path.join(stack.stateDir, "threads", `${threadId}.json`), "utf8");
  const execution = (JSON.parse(text) as { execution: { textSnapshotDigests?: string[] } }).execution;
  return { text, digests: execution.textSnapshotDigests ?? [] };
}

describe.each(["normal", "pipeline"] as const)("a kernel replaying cumulative text after each answer (%s mode)", (runMode) => {
  it('shows "first", then only "second", then only "third" and an unrelated text in full, across gateway restarts', async () => {
    const first = stack.input({ prompt: "replay what you said", iacCode: { runMode } });
    const one = await runWithHttpAgent(stack.gateway.url, first);
    expect(textsOf(one.events)).toEqual({ m: "first", wait: "Waiting for approval.", ...(runMode === "pipeline" && { pipeline: "Planning. " }) });
    const afterOne = await stateOf(first.threadId);
    expect(afterOne.digests).toEqual(expect.arrayContaining([sha("first"), sha("Waiting for approval.")]));
    // Digests only: no text of the run is in the state file.
    for (const text of ["first", "Waiting for approval", "Planning"]) expect(afterOne.text).not.toContain(text);

    await stack.restart();
    const resumeOne = resumeInput(first, [allowOnce(interruptsOf(one.events)[0]!.id)]);
    const two = await runWithHttpAgent(stack.gateway.url, resumeOne);
    // Neither the replayed "first" nor the GetTask snapshot's "Waiting for approval." is shown again.
    expect(textsOf(two.events)).toEqual({ m: "second" });
    expect((await stateOf(first.threadId)).digests).toContain(sha("firstsecond"));

    await stack.restart();
    const three = await runWithHttpAgent(stack.gateway.url, resumeInput(first, [allowOnce(interruptsOf(two.events)[0]!.id)]));
    expect(textsOf(three.events)).toEqual({ m: "third", other: "An unrelated message." });
    expect(three.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });

    // A new turn rotates the execution: the digests go with it, and the same text is shown in full again.
    const four = await runWithHttpAgent(stack.gateway.url, stack.input({ threadId: first.threadId, prompt: "again", iacCode: { runMode } }));
    expect(textsOf(four.events).m).toBe("first");
    expect((await stateOf(first.threadId)).digests).not.toContain(sha("firstsecond"));
  });
});
