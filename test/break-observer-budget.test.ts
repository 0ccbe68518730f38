// Outsider check of the observer route's body budget: each observer's request body is given back when its stream
// starts, so many open observers never starve POST / of the shared body budget.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDurableStack, type DurableStack } from "./helpers/durable.js";
import { liveSse, promptOf, sessionEventOf, slowTurn, type LiveSse } from "./helpers/e2e.js";
import { finishRun, postRun } from "./helpers/replicas.js";

// 4 KiB across all connections: one run body fits, a few dozen observer bodies held at once would not.
const BUDGET_MIB = 4 / 1024;
let stack: DurableStack;

beforeAll(async () => {
  stack = await startDurableStack({
    script: (turn) => slowTurn(`session-${turn.contextId}`, promptOf(turn).startsWith("slow") ? 200 : 2, 50),
    gateway: { bodyBudgetMib: BUDGET_MIB },
  });
});

afterAll(async () => {
  await stack?.close();
});

async function observe(executionId: string, body: object): Promise<LiveSse> {
  const controller = new AbortController();
  const response = await fetch(new URL(`extensions/iac-code/v1/executions/${executionId}/subscribe`, stack.gateway.url), {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  expect(response.status).toBe(200);
  return liveSse(response, controller);
}

describe("observers and the body budget", () => {
  it("60 open observers of a live run hold no budget: a new run is still admitted", async () => {
    const input = stack.input({ prompt: "slow count", threadId: `t-${"x".repeat(200)}-${randomUUID()}`, runId: `r-${"y".repeat(200)}-${randomUUID()}` });
    const posted = await postRun(stack.gateway.url, input);
    expect(posted.status).toBe(200);
    await posted.live!.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
    const executionId = sessionEventOf(posted.live!.events)["executionId"] as string;
    const body = { threadId: input.threadId, runId: input.runId, rosInvocationId: "invocation-1" };
    expect(JSON.stringify(body).length * 60, "the observers' bodies together exceed the budget").toBeGreaterThan(BUDGET_MIB * 1024 * 1024);
    const observers: LiveSse[] = [];
    try {
      for (let i = 0; i < 60; i++) {
        const observer = await observe(executionId, body);
        await observer.until((e) => e.type === "RUN_STARTED");
        observers.push(observer);
      }
      // The budget is live: a body larger than all of it is refused.
      const big = await postRun(stack.gateway.url, stack.input({ prompt: "z".repeat(5000) }));
      expect(big.status === 200 ? "admitted" : big.json?.error?.code).toBe("SERVER_BUSY");
      const other = await postRun(stack.gateway.url, stack.input({ prompt: "quick" }));
      expect(other.status === 200 ? "admitted" : other.json?.error?.code).toBe("admitted");
      await finishRun(other);
    } finally {
      for (const observer of observers) observer.abort();
      posted.live!.abort();
    }
  });
});
