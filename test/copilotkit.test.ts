// @vitest-environment jsdom
// The real CopilotKit stack in front of the gateway (issue 13): @copilotkit/runtime 1.75 serving an @ag-ui/client
// HttpAgent for the gateway, driven by @copilotkit/core 1.74's client — what @copilotkit/react-core wraps — on
// 127.0.0.1 only, telemetry off. Answers go the way useInterrupt sends them (the interrupted run's id pinned);
// test/copilotkit-hook.test.ts renders the real hook. Every gateway stream and every client event is validated
// with EventSchema.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { JsonObject } from "../operators/types.js";
import { connectClient, expectValidTraffic, finishedOf, iacAgents, startCopilotRuntime, type CopilotRuntimeServer } from "./helpers/copilotkit.js";
import { postCancel } from "./helpers/durable.js";
import { frame, scriptByPrompt, slowTurn, startStack, type Stack } from "./helpers/e2e.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";

let stack: Stack<ScriptedA2AServer>;
let runtime: CopilotRuntimeServer;
let iacCode: JsonObject;

beforeAll(async () => {
  stack = await startStack({
    script: scriptByPrompt({
      "stream slowly": () => slowTurn("session-slow", 400, 25),
      // The slow turn's iac-code session: a thread keeps its session across turns.
      "answer quickly": () => [
        frame.working({ sessionId: "session-slow", text: "Quick answer.", messageId: "m-quick" }),
        frame.status("TASK_STATE_COMPLETED", { sessionId: "session-slow" }),
      ],
    }),
  });
  iacCode = (stack.input().forwardedProps as { iacCode: JsonObject }).iacCode;
  runtime = await startCopilotRuntime(stack.gateway.url, iacAgents(iacCode));
});

afterAll(async () => {
  await runtime?.close();
  await stack?.close();
});

const textOf = (events: readonly { type: string }[]) =>
  events.flatMap((e) => (e.type === "TEXT_MESSAGE_CONTENT" ? [(e as unknown as { delta: string }).delta] : [])).join("");

describe("CopilotKit chat turns", () => {
  it("a turn, then a second turn on the same thread", async () => {
    const client = await connectClient(runtime.url, "iac");
    const first = await client.send("hello");
    expect(finishedOf(first).outcome?.type).toBe("success");
    expect(textOf(first)).toContain('I\'ll help with "hello"');
    const second = await client.send("and once more");
    expect(finishedOf(second).outcome?.type).toBe("success");
    expect(textOf(second)).toContain('"and once more"');
    // The page shows both answers; the gateway saw one thread.
    expect(client.agent.messages.filter((m) => m.role === "assistant").length).toBeGreaterThanOrEqual(2);
    const threadIds = new Set(runtime.exchanges.slice(-2).map((x) => x.body["threadId"]));
    expect([...threadIds]).toEqual([client.agent.threadId]);
    expect(client.errors).toEqual([]);
    await expectValidTraffic(runtime, client);
  });

  it("properties with extra keys reach the gateway as forwardedProps and are ignored there", async () => {
    const before = (await stack.gateway.metrics.forwardedPropsIgnored.get()).values[0]?.value ?? 0;
    const client = await connectClient(runtime.url, "iac", { properties: { appTheme: "dark", toolChoice: "auto" } });
    const events = await client.send("hello with properties");
    expect(finishedOf(events).outcome?.type).toBe("success");
    const sent = runtime.exchanges.at(-1)!.body["forwardedProps"] as JsonObject;
    expect(Object.keys(sent).sort()).toEqual(["appTheme", "iacCode", "toolChoice"]);
    expect(((await stack.gateway.metrics.forwardedPropsIgnored.get()).values[0]?.value ?? 0) - before).toBe(2);
    expect(JSON.stringify(stack.upstream.requests)).not.toContain("appTheme");
    expect(client.errors).toEqual([]);
    await expectValidTraffic(runtime, client);
  });

  it("A2UI switched on for this agent: the refusal names the tool CopilotKit added", async () => {
    const client = await connectClient(runtime.url, "iac", { properties: { a2uiCatalogAvailable: true } });
    // CopilotKit logs the failed run on the console; the test reads it from the client's error channel instead.
    const quiet = vi.spyOn(console, "error").mockImplementation(() => undefined);
    try {
      await client.send("hello");
    } finally {
      quiet.mockRestore();
    }
    const refused = runtime.exchanges.at(-1)!;
    expect(refused.status).toBe(400);
    expect(JSON.parse(await refused.text)).toEqual({
      error: { code: "INVALID_INPUT", message: 'Client-defined tools are not supported. tools: "render_a2ui"' },
    });
    expect(client.errors.map((e) => e.message).join("\n")).toContain("render_a2ui");
  });

  it("stop mid-run, then the next turn", async () => {
    const client = await connectClient(runtime.url, "iac");
    const cancelsBefore = stack.upstream.cancelled.length;
    const running = client.send("stream slowly");
    for (let i = 0; i < 200 && !client.events.some((e) => e.type === "TEXT_MESSAGE_CONTENT"); i++) await new Promise((r) => setTimeout(r, 25));
    expect(client.events.some((e) => e.type === "TEXT_MESSAGE_CONTENT"), "the slow turn is streaming").toBe(true);
    client.core.stopAgent({ agent: client.agent as never });
    await running;
    const stopped = runtime.exchanges.at(-1)!;
    // The gateway saw the client leave an active run and cancelled its A2A task.
    expect(await waitUntil(() => stack.upstream.cancelled.length > cancelsBefore && stack.gateway.runs.activeRunCount === 0)).toBe(true);
    expect(client.events.some((e) => e.type === "TEXT_MESSAGE_CONTENT" && (e as unknown as { delta: string }).delta === "tick 399 ")).toBe(false);
    const next = await client.send("answer quickly");
    expect(finishedOf(next).outcome?.type).toBe("success");
    expect(textOf(next)).toBe("Quick answer.");
    expect(runtime.exchanges.at(-1)!.body["threadId"]).toBe(stopped.body["threadId"]);
    await expectValidTraffic(runtime, client);
  });

  it("stopped by the cancel extension (another tab, an operator): the page's run ends without an error, the next turn works", async () => {
    const client = await connectClient(runtime.url, "iac");
    const running = client.send("stream slowly");
    const sessionEvent = () => client.events.find((e) => e.type === "CUSTOM" && (e as unknown as { name: string }).name === "iac-code.session.v1");
    for (let i = 0; i < 200 && !(sessionEvent() && client.events.some((e) => e.type === "TEXT_MESSAGE_CONTENT")); i++) await new Promise((r) => setTimeout(r, 25));
    const session = (sessionEvent() as unknown as { value: { executionId: string; rosInvocationId: string } }).value;
    const cancelled = await postCancel(stack.gateway.url, session.executionId, { threadId: client.agent.threadId, rosInvocationId: session.rosInvocationId });
    expect(cancelled.json).toMatchObject({ status: "cancelled" });
    await running;
    // The runtime's HttpAgent declares AG-UI 1.0: the gateway ends the run RUN_FINISHED cancelled, spans closed first.
    const streams = await expectValidTraffic(runtime, client);
    expect(streams.at(-1)!.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
    expect(client.errors).toEqual([]);
    const next = await client.send("answer quickly");
    expect(finishedOf(next).outcome?.type).toBe("success");
  });
});

describe("CopilotKit interrupts", () => {
  it("deploy → interrupt → approval under the interrupted run's id, as useInterrupt sends it", async () => {
    const client = await connectClient(runtime.url, "iac");
    const parked = finishedOf(await client.send("deploy the stack"));
    expect(parked.outcome?.type).toBe("interrupt");
    const interrupt = parked.outcome!.interrupts![0]!;
    const answered = await answer(client, parked.runId, interrupt.id, { decision: "allow_once" });
    expect(finishedOf(answered).outcome?.type).toBe("success");
    expect(textOf(answered)).toContain("deployed");
    expect(runtime.exchanges.at(-1)!.body["runId"]).toBe(parked.runId);
    expect(client.errors).toEqual([]);
    await expectValidTraffic(runtime, client);
  });

  it("a pipeline candidate selection", async () => {
    const client = await connectClient(runtime.url, "iac-pipeline");
    const parked = finishedOf(await client.send("build a VPC"));
    expect(parked.outcome?.type).toBe("interrupt");
    const interrupt = parked.outcome!.interrupts![0]!;
    const answered = await answer(client, parked.runId, interrupt.id, { selectedId: "1" });
    expect(finishedOf(answered).outcome?.type).toBe("success");
    expect(answered.some((e) => e.type === "STEP_FINISHED")).toBe(true);
    expect(client.errors).toEqual([]);
    await expectValidTraffic(runtime, client);
  });

  it("a runtime restart with an interrupt pending: a new message shows it again and it can be answered", async () => {
    const before = await connectClient(runtime.url, "iac");
    const parked = finishedOf(await before.send("deploy the stack"));
    const interrupt = parked.outcome!.interrupts![0]!;
    await runtime.close();
    // A new runtime process (empty in-memory runner) and a reloaded page on the same thread.
    runtime = await startCopilotRuntime(stack.gateway.url, iacAgents(iacCode));
    const page = await connectClient(runtime.url, "iac", { threadId: before.agent.threadId });
    const shown = finishedOf(await page.send("is anyone there?"));
    expect(shown.outcome?.type).toBe("interrupt");
    expect(shown.outcome!.interrupts!.map((i) => i.id)).toEqual([interrupt.id]);
    expect(JSON.stringify(stack.upstream.requests)).not.toContain("is anyone there?");
    const answered = await answer(page, shown.runId, interrupt.id, { decision: "allow_once" });
    expect(finishedOf(answered).outcome?.type).toBe("success");
    expect(page.errors).toEqual([]);
    await expectValidTraffic(runtime, page);
  });
});

/** What useInterrupt's resolve does: one resume entry, the run id of the run that ended at the interrupt. */
async function answer(client: Awaited<ReturnType<typeof connectClient>>, runId: string, interruptId: string, payload: unknown) {
  const from = client.events.length;
  await client.core.runAgent({ agent: client.agent as never, resume: [{ interruptId, status: "resolved", payload }], runId } as never);
  return client.events.slice(from);
}

async function waitUntil(check: () => boolean, timeoutMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  return check();
}
