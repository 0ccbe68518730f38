// Cuts at adversarial places of a GatewayAgent run's first connection (exact SSE byte offsets), with the gateway's
// reconnect grace 30 s and 0 (the default). Every event the subscriber sees is checked with EventSchema.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayAgent } from "../src/client/index.js";
import { createDemoScript, type ScriptedA2AServer } from "../src/demo/index.js";
import { at, runPlanned, type Chooser, type Outcome } from "./helpers/break-client-fetch.js";
import { scriptByPrompt, slowTurn, startStack, type Stack } from "./helpers/e2e.js";

const LONG_TEXT = "write a long text";
const DEPLOY = "deploy the stack";

function script() {
  const demo = createDemoScript({ frameDelayMs: 40 });
  return scriptByPrompt({ [LONG_TEXT]: () => slowTurn("session-long", 30, 40), [DEPLOY]: (turn) => demo(turn) as never });
}

const CUTS: Record<string, Chooser> = {
  "no body byte": () => 0,
  "exactly after the first record": at((_, i) => i === 0, (r) => r.end),
  "inside the id: line of the 3rd record": at((_, i) => i === 2, (r) => r.start + 6),
  "between data: and the blank line of the 3rd record": at((_, i) => i === 2, (r) => r.end - 1),
  "right after the session event": at((e) => e.type === "CUSTOM", (r) => r.end),
  "right before the terminal record": at((e) => e.type === "RUN_FINISHED", (r) => r.start),
  "between the terminal's data: and its blank line": at((e) => e.type === "RUN_FINISHED", (r) => r.end - 1),
  "after a TEXT_MESSAGE_START": at((e) => e.type === "TEXT_MESSAGE_START", (r) => r.end),
};

function messageView(agent: GatewayAgent) {
  return agent.messages.map((m) => ({ role: m.role, content: typeof m.content === "string" ? m.content.replace(/demo-[0-9a-f]{6}/g, "demo-…") : m.content, tools: "toolCalls" in m ? m.toolCalls?.map((t) => t.function.name) : undefined }));
}

describe.each([30, 0])("cuts at exact places, reconnect grace %i s", (grace) => {
  let stack: Stack<ScriptedA2AServer>;
  const reference = new Map<string, Outcome>();
  beforeAll(async () => {
    stack = await startStack({ script: script(), gateway: { reconnectGraceSeconds: grace } });
    for (const prompt of [LONG_TEXT, DEPLOY]) reference.set(prompt, await runPlanned(stack.gateway.url, stack.input({ prompt }), () => undefined));
  });
  afterAll(async () => {
    await stack?.close();
  });

  for (const prompt of [LONG_TEXT, DEPLOY]) {
    for (const [where, chooser] of Object.entries(CUTS)) {
      it(`${prompt}: cut ${where}`, async () => {
        const input = stack.input({ prompt });
        const run = await runPlanned(stack.gateway.url, input, (n) => (n === 0 ? { cut: chooser } : undefined));
        const ref = reference.get(prompt)!;
        const trace = `requests: ${JSON.stringify(run.requests.map((r) => [r.url.replace(/^http:\/\/[^/]+/, ""), r.lastEventId]))} events: ${run.events.map((e) => e.type).join(",")} error: ${String(run.error)}`;
        expect(run.invalid, trace).toEqual([]);
        expect(run.error, trace).toBeUndefined();
        expect(run.events.filter((e) => e.type === "RUN_ERROR"), trace).toEqual([]);
        expect(run.events.filter((e) => e.type === "RUN_STARTED"), trace).toHaveLength(1);
        if (grace > 0) {
          expect(run.events.map((e) => e.type), trace).toEqual(ref.events.map((e) => e.type));
          expect(messageView(run.agent), trace).toEqual(messageView(ref.agent));
          expect((run.events.at(-1) as { outcome?: { type: string } }).outcome?.type, trace).toBe((ref.events.at(-1) as { outcome?: { type: string } }).outcome?.type);
        } else {
          // Grace 0: the run is cancelled when its connection breaks; the agent brings back how it ended. Still one
          // run: every span it opened is closed once, no message text twice.
          const starts = run.events.filter((e) => e.type === "TEXT_MESSAGE_START").map((e) => (e as unknown as { messageId: string }).messageId);
          expect(new Set(starts).size, trace).toBe(starts.length);
          for (const m of run.agent.messages) if (typeof m.content === "string") expect(m.content.split("tick 0 ").length, trace).toBeLessThanOrEqual(2);
        }
      }, 30_000);
    }
  }
});
