// --a2a-http2: the gateway speaks HTTP/2 (h2c) to a real @a2a-js/sdk upstream served by node:http2. Every
// run, its interrupt and its resume go over one shared connection instead of a socket each, and the
// AG-UI side cannot tell the difference.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { allowOnce, interruptsOf, resumeInput } from "./helpers/durable.js";
import { runWithHttpAgent, startStack, typesOf, type Stack } from "./helpers/e2e.js";

let stack: Stack<ScriptedA2AServer>;

beforeAll(async () => {
  stack = await startStack({ http2: true });
});
afterAll(async () => {
  await stack.close();
});

describe("HTTP/2 upstream", () => {
  it("runs 20 concurrent turns over a handful of upstream connections, each stream valid and complete", async () => {
    const runs = await Promise.all(
      Array.from({ length: 20 }, (_, i) => runWithHttpAgent(stack.gateway.url, stack.input({ prompt: `Describe stack ${i}` }))),
    );
    for (const run of runs) {
      expect(run.status).toBe(200);
      expect(typesOf(run.events)).toContain("TEXT_MESSAGE_CONTENT");
      expect(run.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    }
    const streams = stack.upstream.requests.filter((r) => r.method === "SendStreamingMessage");
    expect(streams.length).toBeGreaterThanOrEqual(20);
    // Requests that arrive while the first session is still connecting may open a few more; never one per run.
    expect(stack.upstream.connections()).toBeGreaterThanOrEqual(1);
    expect(stack.upstream.connections()).toBeLessThanOrEqual(5);
  });

  it("parks an interrupt and resumes it on the same task over HTTP/2, opening no new connection", async () => {
    const connections = stack.upstream.connections();
    const input = stack.input({ prompt: "Please deploy the stack" });
    const first = await runWithHttpAgent(stack.gateway.url, input);
    const [interrupt] = interruptsOf(first.events);
    expect(interrupt).toMatchObject({ reason: "tool_call" });
    expect(first.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt" } });
    const resumed = await runWithHttpAgent(stack.gateway.url, resumeInput(input, [allowOnce(interrupt!.id)]), { agent: first.agent });
    expect(resumed.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(stack.upstream.connections()).toBe(connections);
  });
});
