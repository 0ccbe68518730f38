// Outsider check: a burst of concurrent requests on one parked thread (two answers, a re-show, a cancel), every
// stream read to its terminal event. Afterwards the thread is never THREAD_BUSY, and its state is consistent.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamProblems } from "./helpers/checks.js";
import { allowOnce, interruptsOf, postCancel, resumeInput, startDurableStack, type DurableStack } from "./helpers/durable.js";
import { sessionEventOf } from "./helpers/e2e.js";
import { finishRun, postRun, type Posted } from "./helpers/replicas.js";
import { isTerminal } from "./helpers/sse.js";

let stack: DurableStack;

beforeAll(async () => {
  stack = await startDurableStack();
});

afterAll(async () => {
  await stack?.close();
});

async function settle(posted: Posted): Promise<string> {
  if (posted.status !== 200) return `refused:${posted.json.error.code}`;
  const events = await posted.live!.rest();
  expect(streamProblems(events)).toEqual([]);
  expect(events.filter(isTerminal)).toHaveLength(1);
  const last = events.at(-1)!;
  return last.type === "RUN_ERROR" ? `error:${String(last["code"])}` : `finished:${(last["outcome"] as { type: string }).type}`;
}

describe("a burst on one parked thread", () => {
  it("20 rounds: answers, a re-show and a cancel at once; afterwards the thread is free (or asks for its interrupts)", async () => {
    for (let round = 0; round < 20; round++) {
      const input = { ...stack.input({ prompt: "deploy the stack" }), protocolVersion: "1.0" };
      const first = await finishRun(await postRun(stack.gateway.url, input));
      const [interrupt] = interruptsOf(first);
      const executionId = sessionEventOf(first)["executionId"] as string;
      const [pinned, fresh, reshow, cancelled] = await Promise.all([
        postRun(stack.gateway.url, resumeInput(input, [allowOnce(interrupt!.id)], { runId: input.runId })).then(settle),
        postRun(stack.gateway.url, resumeInput(input, [allowOnce(interrupt!.id)])).then(settle),
        postRun(stack.gateway.url, { ...input, runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content: "again" }] }).then(settle),
        postCancel(stack.gateway.url, executionId, { threadId: input.threadId, rosInvocationId: "invocation-1" }).then((r) => `cancel:${r.status}:${r.json?.status ?? r.json?.error?.code}`),
      ]);
      const outcomes = { pinned, fresh, reshow, cancelled };
      // The answer applied at most once.
      expect([pinned, fresh].filter((o) => o === "finished:success").length, JSON.stringify(outcomes)).toBeLessThanOrEqual(1);
      // Now, with every stream read to its end, a new turn is never THREAD_BUSY.
      const next = await postRun(stack.gateway.url, { ...input, runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content: "next" }] });
      const nextOutcome = await settle(next);
      expect(nextOutcome, JSON.stringify(outcomes)).not.toBe("refused:THREAD_BUSY");
      expect(nextOutcome, JSON.stringify(outcomes)).toMatch(/^finished:(success|interrupt)$/);
    }
  }, 120_000);
});
