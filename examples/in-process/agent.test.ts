// The in-process agent against the scripted A2A 1.0 demo kernel, read through @ag-ui/client's own run loop.
import { EventSchema } from "@ag-ui/core/schemas";
import { verifyAguiStream } from "agui-gateway/marbles";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoScript, startScriptedA2AServer, type ScriptedA2AServer } from "../../src/demo/index.js";
import { InProcessA2AAgent } from "./agent.js";

let upstream: ScriptedA2AServer;
beforeAll(async () => {
  upstream = await startScriptedA2AServer({ script: createDemoScript({ frameDelayMs: 0 }) });
});
afterAll(() => upstream.close());

describe("in-process transport over createAguiPipeline", () => {
  it("runs a turn from plain A2A frames without the HTTP gateway", async () => {
    const agent = new InProcessA2AAgent(upstream.url, { threadId: "in-process-1" });
    agent.messages = [{ id: "m1", role: "user", content: "Create a VPC template" }];
    const events: { type: string }[] = [];
    await agent.runAgent({ runId: "run-1" }, { onEvent: ({ event }) => void events.push(event) });
    for (const event of events) EventSchema.parse(event);
    expect(verifyAguiStream(events, { strict: true })).toEqual([]);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe("RUN_STARTED");
    expect(types.at(-1)).toBe("RUN_FINISHED");
    expect(types).toEqual(expect.arrayContaining(["REASONING_START", "TEXT_MESSAGE_CONTENT", "TOOL_CALL_START", "TOOL_CALL_RESULT"]));
    expect(agent.messages.some((m) => m.role === "assistant")).toBe(true);
    expect(upstream.requests.map((r) => r.method)).toContain("SendStreamingMessage");
  });
});
