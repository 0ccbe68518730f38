// Many sequential GatewayAgent runs (bounded): timers, sockets and abort listeners must not pile up, on fresh agents
// or on one agent reused run after run; a connect whose stream is cut splices the live run without a duplicate.
import { setTimeout as sleep } from "node:timers/promises";
import type { BaseEvent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayAgent } from "../src/client/index.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { at, plannedFetch } from "./helpers/break-client-fetch.js";
import { scriptByPrompt, slowTurn, startStack, type Stack } from "./helpers/e2e.js";

const QUICK = "count quickly";
const SLOW = "count slowly";

function resources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of process.getActiveResourcesInfo()) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

describe("sequential runs", () => {
  let stack: Stack<ScriptedA2AServer>;
  beforeAll(async () => {
    stack = await startStack({ script: scriptByPrompt({ [QUICK]: () => slowTurn("session-q", 3, 0), [SLOW]: () => slowTurn("session-q", 40, 40) }), gateway: { reconnectGraceSeconds: 30 } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("200 runs on one reused agent: no growth in timers/handles, every run valid", async () => {
    const input = stack.input({ prompt: QUICK });
    const agent = new GatewayAgent({ url: stack.gateway.url, threadId: input.threadId, initialMessages: input.messages, backoffMs: 10 });
    const before = resources();
    for (let i = 0; i < 200; i++) {
      const events: BaseEvent[] = [];
      if (i > 0) agent.setMessages([{ id: `u-${i}`, role: "user", content: QUICK }]);
      await agent.runAgent({ runId: `${input.runId}-${i}`, forwardedProps: input.forwardedProps }, { onEvent: ({ event }) => void events.push(event) });
      expect(events.at(-1)?.type, `run ${i}`).toBe("RUN_FINISHED");
      for (const event of events) expect(EventSchema.safeParse(event).success).toBe(true);
    }
    await sleep(200);
    const after = resources();
    expect((after.Timeout ?? 0) - (before.Timeout ?? 0)).toBeLessThanOrEqual(2);
    expect((after.TCPSocketWrap ?? 0) - (before.TCPSocketWrap ?? 0)).toBeLessThanOrEqual(12);
  }, 120_000);

  it("connectAgent follows a live run; its own connection is cut twice mid-run: no event twice, every tick once", async () => {
    const input = stack.input({ prompt: SLOW });
    const runner = new GatewayAgent({ url: stack.gateway.url, threadId: input.threadId, initialMessages: input.messages });
    let ticks = 0;
    let live!: () => void;
    const streaming = new Promise<void>((resolve) => (live = resolve));
    const running = runner.runAgent({ runId: input.runId, forwardedProps: input.forwardedProps }, {
      onEvent: ({ event }) => void (event.type === "TEXT_MESSAGE_CONTENT" && ++ticks === 3 && live()),
    });
    await streaming;
    const planned = plannedFetch((n) => (n <= 1 ? { cut: at((e, i) => e.type === "TEXT_MESSAGE_CONTENT" && i >= 6, (r) => r.end) } : undefined));
    const reader = new GatewayAgent({ url: stack.gateway.url, threadId: input.threadId, backoffMs: 20 });
    reader.fetch = planned.fetch as never;
    const events: BaseEvent[] = [];
    await reader.connectAgent({ forwardedProps: input.forwardedProps }, { onEvent: ({ event }) => void events.push(event) });
    await running;
    for (const event of events) expect(EventSchema.safeParse(event).success).toBe(true);
    const trace = `${JSON.stringify(planned.requests.map((r) => r.url.replace(/^http:\/\/[^/]+/, "")))} ${events.map((e) => e.type).join(",")}`;
    expect(events.filter((e) => e.type === "RUN_STARTED"), trace).toHaveLength(1);
    expect(events.at(-1)?.type, trace).toBe("RUN_FINISHED");
    const text = reader.messages.filter((m) => m.role === "assistant").map((m) => String(m.content)).join("|");
    const wrong = Array.from({ length: 40 }, (_, i) => i).filter((i) => text.split(`tick ${i} `).length !== 2);
    expect(wrong, `${trace} ${text}`).toEqual([]);
  }, 60_000);
});
