// The official clients: @ag-ui/client 0.0.58 (the version the reference documents) next to 1.0.0, for a
// normal turn, an interrupt with its resume, and a pipeline run; and HttpAgent's protobuf path.
import { HttpAgent as HttpAgent0058 } from "ag-ui-client-0058";
import { HttpAgent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyAguiStream } from "../operators/verify/index.js";
import { startStack, type Stack } from "./helpers/e2e.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";

let stack: Stack<ScriptedA2AServer>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.close());

type AnyAgent = {
  runAgent(p: Record<string, unknown>, s: { onEvent(x: { event: { type: string } }): void }): Promise<unknown>;
  pendingInterrupts?: { id: string }[];
};

async function run(agent: AnyAgent, params: Record<string, unknown>) {
  const events: { type: string; [k: string]: unknown }[] = [];
  await agent.runAgent(params, { onEvent: ({ event }) => void events.push(event as never) });
  for (const event of events) EventSchema.parse(event);
  expect(verifyAguiStream(events, { strict: true })).toEqual([]);
  return events;
}

const clients = {
  "1.0.0": (url: string, threadId: string) => new HttpAgent({ url, threadId }) as unknown as AnyAgent,
  "0.0.58": (url: string, threadId: string) => new HttpAgent0058({ url, threadId }) as unknown as AnyAgent,
};

describe.each(Object.entries(clients))("@ag-ui/client %s", (_version, make) => {
  it("a normal turn", async () => {
    const input = stack.input();
    const agent = make(stack.gateway.url, input.threadId);
    (agent as unknown as { messages: unknown[] }).messages = input.messages;
    const events = await run(agent, { runId: input.runId, forwardedProps: input.forwardedProps });
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(["REASONING_START", "TEXT_MESSAGE_CONTENT", "TOOL_CALL_RESULT"]));
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });

  it("an interrupt and its resume", async () => {
    const input = stack.input({ prompt: "deploy the stack" });
    const agent = make(stack.gateway.url, input.threadId);
    (agent as unknown as { messages: unknown[] }).messages = input.messages;
    const first = await run(agent, { runId: input.runId, forwardedProps: input.forwardedProps });
    const interrupts = (first.at(-1) as unknown as { outcome: { interrupts: { id: string }[] } }).outcome.interrupts;
    expect(interrupts).toHaveLength(1);
    const resume = interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: { decision: "allow_once" } }));
    const second = await run(agent, { runId: `${input.runId}-2`, forwardedProps: input.forwardedProps, resume });
    expect(second.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(second.some((e) => e.type === "TOOL_CALL_RESULT")).toBe(true);
  });

  it("a pipeline run with its selection interrupt", async () => {
    const input = stack.input({ iacCode: { runMode: "pipeline" } });
    const agent = make(stack.gateway.url, input.threadId);
    (agent as unknown as { messages: unknown[] }).messages = input.messages;
    const first = await run(agent, { runId: input.runId, forwardedProps: input.forwardedProps });
    const [interrupt] = (first.at(-1) as unknown as { outcome: { interrupts: { id: string }[] } }).outcome.interrupts;
    const second = await run(agent, {
      runId: `${input.runId}-2`,
      forwardedProps: input.forwardedProps,
      resume: [{ interruptId: interrupt!.id, status: "resolved", payload: { selectedId: "0" } }],
    });
    expect(second.filter((e) => e.type === "STEP_FINISHED").map((e) => e.stepName)).toEqual(["confirm_and_select", "deploying"]);
    expect(second.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });
});

describe("protobuf framing", () => {
  it("answers Accept: application/vnd.ag-ui.event+proto with length-prefixed protobuf that HttpAgent decodes", async () => {
    const input = stack.input();
    const agent = new HttpAgent({ url: stack.gateway.url, threadId: input.threadId, initialMessages: input.messages });
    let contentType: string | null = null;
    agent.fetch = async (url: string, init: RequestInit) => {
      const headers = new Headers(init.headers);
      headers.set("Accept", "application/vnd.ag-ui.event+proto");
      const response = await fetch(url, { ...init, headers });
      contentType = response.headers.get("content-type");
      return response;
    };
    const events = await run(agent as unknown as AnyAgent, { runId: input.runId, forwardedProps: input.forwardedProps });
    expect(contentType).toBe("application/vnd.ag-ui.event+proto");
    expect(events[0]?.type).toBe("RUN_STARTED");
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED" });
    expect(events.some((e) => e.type === "TOOL_CALL_ARGS")).toBe(true);
  });
});
