// GatewayRunner (no runtime needed for isRunning/stop/connect) and GET /threads/{threadId} with thread ids a gateway
// accepts but a URL path may not carry as given: "a/b", "%2F", Unicode, 256 characters.
import { randomUUID } from "node:crypto";
import type { BaseEvent } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayAgent } from "../src/client/index.js";
import { GatewayRunner } from "../src/copilotkit/index.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { scriptByPrompt, slowTurn, startStack, type Stack } from "./helpers/e2e.js";

const SLOW = "count slowly";
const TRUSTED = "runner-break-token";
const FAST = "count fast";

describe("GatewayRunner.isRunning / stop for a run another runtime started, by thread id", () => {
  let stack: Stack<ScriptedA2AServer>;
  let runner: GatewayRunner;
  beforeAll(async () => {
    stack = await startStack({ script: scriptByPrompt({ [SLOW]: () => slowTurn("session-runner", 100, 40), [FAST]: () => slowTurn("session-runner", 2, 1) }), gateway: { reconnectGraceSeconds: 30, authToken: TRUSTED } });
    runner = new GatewayRunner({ url: stack.gateway.url, headers: { Authorization: `Bearer ${TRUSTED}` } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  const IDS: Record<string, () => string> = {
    uuid: () => randomUUID(),
    // ("." and ".." cannot be named in a path at all: URL parsers take even %2E%2E for a step up; see docs/auth.md.)
    "a/b": () => `a/${randomUUID()}`,
    "%2F": () => `%2F${randomUUID()}`,
    unicode: () => `線程-${randomUUID()}`,
    "256 chars": () => `${randomUUID()}${"x".repeat(220)}`,
  };

  for (const [name, make] of Object.entries(IDS)) {
    it(`thread id ${name}: isRunning true while it streams, stop cancels it, isRunning false after`, async () => {
      const threadId = make();
      const input = stack.input({ prompt: SLOW, threadId });
      const agent = new GatewayAgent({ url: stack.gateway.url, threadId, initialMessages: input.messages, headers: { Authorization: `Bearer ${TRUSTED}` } });
      const events: BaseEvent[] = [];
      let ticks = 0;
      let live!: () => void;
      const streaming = new Promise<void>((resolve) => (live = resolve));
      const done = agent
        .runAgent({ runId: input.runId, forwardedProps: input.forwardedProps }, {
          onEvent: ({ event }) => {
            events.push(event);
            if (event.type === "TEXT_MESSAGE_CONTENT" && ++ticks === 2) live();
          },
        })
        .catch((error: unknown) => error);
      await Promise.race([streaming, done]);
      expect(ticks, `run on ${threadId}: ${events.map((e) => e.type).join(",")} ${String(await Promise.race([done, 0]))}`).toBeGreaterThanOrEqual(2);
      const running = await runner.isRunning({ threadId });
      const stopped = await runner.stop({ threadId });
      if (!stopped) agent.abortRun(); // clean-up
      await done;
      expect({ running, stopped }).toEqual({ running: true, stopped: true });
      expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
    }, 30_000);
  }

  it("stop with the runId of an older run of the thread: false, the live run goes on", async () => {
    const threadId = randomUUID();
    const first = stack.input({ prompt: FAST, threadId });
    const agent = new GatewayAgent({ url: stack.gateway.url, threadId, initialMessages: first.messages, headers: { Authorization: `Bearer ${TRUSTED}` } });
    await agent.runAgent({ runId: first.runId, forwardedProps: first.forwardedProps });
    agent.addMessage({ id: randomUUID(), role: "user", content: SLOW });
    let ticks = 0;
    let live!: () => void;
    const streaming = new Promise<void>((resolve) => (live = resolve));
    const events: BaseEvent[] = [];
    const done = agent.runAgent({ runId: randomUUID(), forwardedProps: first.forwardedProps }, {
      onEvent: ({ event }) => {
        events.push(event);
        if (event.type === "TEXT_MESSAGE_CONTENT" && ++ticks === 2) live();
      },
    });
    await Promise.race([streaming, done]);
    expect(ticks, events.map((e) => e.type).join(",")).toBe(2);
    expect(await runner.stop({ threadId, runId: first.runId } as never)).toBe(false);
    expect(await runner.isRunning({ threadId: randomUUID() })).toBe(false);
    expect(await runner.stop({ threadId })).toBe(true);
    await done;
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
  }, 30_000);
});
