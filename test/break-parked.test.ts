// Outsider checks around a parked execution: an observer of it, and an answer under the interrupted run's id
// after the cancel route ended it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamProblems } from "./helpers/checks.js";
import { allowOnce, interruptsOf, postCancel, resumeInput, startDurableStack, type DurableStack } from "./helpers/durable.js";
import { liveSse, sessionEventOf } from "./helpers/e2e.js";
import { finishRun, postRun } from "./helpers/replicas.js";
import { isTerminal } from "./helpers/sse.js";

let stack: DurableStack;

beforeAll(async () => {
  stack = await startDurableStack();
});

afterAll(async () => {
  await stack?.close();
});

describe("a parked execution", () => {
  it("an observer of it ends with one terminal event once the answer's run ends, and does not keep the answer out", async () => {
    const input = stack.input({ prompt: "deploy the stack" });
    const first = await finishRun(await postRun(stack.gateway.url, input));
    const [interrupt] = interruptsOf(first);
    const executionId = sessionEventOf(first)["executionId"] as string;
    const controller = new AbortController();
    const response = await fetch(new URL(`extensions/iac-code/v1/executions/${executionId}/subscribe`, stack.gateway.url), {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ threadId: input.threadId, runId: input.runId, rosInvocationId: "invocation-1" }),
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const observer = liveSse(response, controller);
    try {
      await observer.until((e) => e.type === "RUN_STARTED");
      const answered = await finishRun(await postRun(stack.gateway.url, resumeInput(input, [allowOnce(interrupt!.id)])));
      expect(answered.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
      const timer = setTimeout(() => observer.abort(), 10_000);
      const seen = await observer.rest();
      clearTimeout(timer);
      expect(seen.filter(isTerminal), "the observer ended by itself with one terminal event").toHaveLength(1);
      expect(streamProblems(seen)).toEqual([]);
    } finally {
      observer.abort();
    }
  });

  it("an answer under the interrupted run's id after the cancel route ended the execution: EXECUTION_LOST, as under any other id", async () => {
    const input = stack.input({ prompt: "deploy the stack" });
    const first = await finishRun(await postRun(stack.gateway.url, input));
    const [interrupt] = interruptsOf(first);
    const executionId = sessionEventOf(first)["executionId"] as string;
    expect((await postCancel(stack.gateway.url, executionId, { threadId: input.threadId, rosInvocationId: "invocation-1" })).json).toMatchObject({ status: "cancelled" });
    const outcome = async (runId?: string) => {
      const posted = await postRun(stack.gateway.url, resumeInput(input, [allowOnce(interrupt!.id)], runId ? { runId } : {}));
      if (posted.status !== 200) return `refused:${posted.json.error.code}`;
      const events = await finishRun(posted);
      return `${events.at(-1)!.type}:${String(events.at(-1)!["code"])}`;
    };
    // The pinned client (CopilotKit) answers first, under the run that ended at the interrupt; then one under a new id.
    const underInterruptedId = await outcome(input.runId);
    const underNewId = await outcome();
    expect(underNewId).toMatch(/EXECUTION_LOST/);
    expect(underInterruptedId, `under a new id: ${underNewId}`).toMatch(/EXECUTION_LOST/);
  });
});
