// An interrupt run ("deploy the stack" on the demo script, real 40 ms between frames) cut right before its
// RUN_FINISHED interrupt: the agent ends with the interrupt outcome, the conversation as the uncut run shows it, and
// the resume is then sent on the same agent.
import type { BaseEvent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayAgent } from "../src/client/index.js";
import { createDemoScript, type ScriptedA2AServer } from "../src/demo/index.js";
import { at, runPlanned, type Outcome } from "./helpers/break-client-fetch.js";
import { startStack, type Stack } from "./helpers/e2e.js";

const DEPLOY = "deploy the stack";

function view(agent: GatewayAgent) {
  return agent.messages.map((m) => ({
    role: m.role,
    content: typeof m.content === "string" ? m.content.replace(/demo-[0-9a-f]{6}/g, "demo-…") : m.content,
    tools: "toolCalls" in m ? m.toolCalls?.map((t) => t.function.name) : undefined,
  }));
}

async function resume(run: Outcome, runId: string, forwardedProps: unknown): Promise<{ events: BaseEvent[]; error?: unknown }> {
  const interrupt = (run.events.at(-1) as unknown as { outcome?: { interrupts?: { id: string }[] } }).outcome?.interrupts?.[0];
  const events: BaseEvent[] = [];
  try {
    await run.agent.runAgent({ runId, forwardedProps, resume: [{ interruptId: interrupt!.id, status: "resolved", payload: { decision: "allow_once" } }] } as never, {
      onEvent: ({ event }) => void events.push(event),
    });
  } catch (error) {
    return { events, error };
  }
  return { events };
}

describe.each([30, 0])("an interrupt run cut before its RUN_FINISHED, reconnect grace %i s", (grace) => {
  let stack: Stack<ScriptedA2AServer>;
  let reference: Outcome;
  beforeAll(async () => {
    // The demo script itself (it keeps the pending permission its resume answers).
    stack = await startStack({ script: createDemoScript({ frameDelayMs: 40 }), gateway: { reconnectGraceSeconds: grace } });
    reference = await runPlanned(stack.gateway.url, stack.input({ prompt: DEPLOY }), () => undefined);
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("control: the uncut run's interrupt is answered on the same agent", async () => {
    const input = stack.input({ prompt: DEPLOY });
    const run = await runPlanned(stack.gateway.url, input, () => undefined);
    const answered = await resume(run, `${input.runId}-2`, input.forwardedProps);
    expect(answered.events.at(-1), JSON.stringify(answered.events.at(-1))).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  }, 30_000);

  for (const [where, cut] of [
    ["right before RUN_FINISHED", at((e) => e.type === "RUN_FINISHED", (r) => r.start)],
    ["right after TOOL_CALL_END", at((e) => e.type === "TOOL_CALL_END", (r) => r.end)],
    ["right after TOOL_CALL_ARGS", at((e) => e.type === "TOOL_CALL_ARGS", (r) => r.end)],
  ] as const) {
    it(`cut ${where}: the interrupt outcome, the uncut conversation, and the resume runs`, async () => {
      const input = stack.input({ prompt: DEPLOY });
      const run = await runPlanned(stack.gateway.url, input, (n) => (n === 0 ? { cut } : undefined));
      const trace = `requests: ${JSON.stringify(run.requests.map((r) => [r.url.replace(/^http:\/\/[^/]+/, ""), r.lastEventId]))} events: ${run.events.map((e) => e.type).join(",")} error: ${String(run.error)}`;
      expect(run.invalid, trace).toEqual([]);
      expect(run.error, trace).toBeUndefined();
      expect(run.events.at(-1), trace).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt", interrupts: [{ id: expect.stringMatching(/^permission-/) }] } });
      // The tool call the interrupt asks about is in the agent's conversation, as in the uncut run.
      expect(view(run.agent), trace).toEqual(view(reference.agent));
      const answered = await resume(run, `${input.runId}-2`, input.forwardedProps);
      for (const event of answered.events) expect(EventSchema.safeParse(event).success).toBe(true);
      expect(answered.error).toBeUndefined();
      expect(answered.events.at(-1), JSON.stringify(answered.events.at(-1))).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    }, 30_000);
  }
});
