// Clients as they really are (DESIGN "more lenient"): forwardedProps open at the top level, a resume under the
// interrupted run's id (CopilotKit's useInterrupt pins it), AG-UI 1.0 run semantics for clients that declare
// protocolVersion "1.0" (cancelled outcome, pending interrupts shown again), RESUME_REQUIRED carrying the
// interrupts, and GET /capabilities. Undeclared clients keep the seeds' behaviour. Real HttpAgent, real A2A server.
import { promises as fsp } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import type { AgentCapabilities, Interrupt } from "@ag-ui/core";
import type { RunAgentInput } from "@ag-ui/client";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVER_VERSION } from "../src/gateway.js";
import { FileThreadStore, type FsLayer } from "../src/state/file-store.js";
import {
  agentWithPending,
  allowOnce,
  interruptsOf,
  postCancel,
  resumeInput,
  startDurableStack,
  type DurableStack,
} from "./helpers/durable.js";
import {
  expectValidRun,
  frame,
  openSse,
  postRaw,
  readSse,
  runWithHttpAgent,
  scriptByPrompt,
  slowTurn,
  typesOf,
  type WireEvent,
} from "./helpers/e2e.js";

const MARKER = "ignored-prop-value-marker-91";
const logLines: string[] = [];
const logSink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    logLines.push(chunk.toString("utf8"));
    done();
  },
});

let stack: DurableStack;

beforeAll(async () => {
  stack = await startDurableStack({
    script: scriptByPrompt({
      "stream slowly": () => slowTurn("session-slow", 400, 25),
      // The same iac-code session as the slow turn: a thread keeps its session.
      "answer quickly": () => [frame.working({ sessionId: "session-slow", text: "ok", messageId: "m-quick" }), frame.status("TASK_STATE_COMPLETED", { sessionId: "session-slow" })],
    }),
    gateway: { logger: pino({ level: "debug" }, logSink) },
  });
});

afterAll(async () => {
  await stack.close();
});

/** A body as AG-UI 1.0 clients send it (HttpAgent 1.0 adds protocolVersion "1.0"). */
const declared = (input: RunAgentInput): RunAgentInput & { protocolVersion: string } => ({ ...input, protocolVersion: "1.0" });

function streamRequests(): number {
  return stack.upstream.requests.filter((r) => r.method === "SendStreamingMessage").length;
}

async function threadDoc(threadId: string): Promise<any> {
  return JSON.parse(await readFile(path.join(stack.stateDir, "threads", `${threadId}.json`), "utf8"));
}

/** A first turn that ends at the demo's deploy permission. */
async function parkedDeploy(): Promise<{ input: RunAgentInput; interrupts: Interrupt[]; events: WireEvent[] }> {
  const input = stack.input({ prompt: "deploy the stack" });
  const run = await runWithHttpAgent(stack.gateway.url, input);
  const interrupts = interruptsOf(run.events);
  expect(interrupts).toHaveLength(1);
  return { input, interrupts, events: run.events };
}

function deployedText(events: readonly WireEvent[]): string {
  return events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e["delta"]).join("");
}

function expectSuccess(events: readonly WireEvent[]): void {
  expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
}

describe("forwardedProps: open at the top level, iacCode strict", () => {
  it("keys besides iacCode are ignored: never sent to A2A, stored or logged, and counted in /metrics", async () => {
    const before = (await stack.gateway.metrics.forwardedPropsIgnored.get()).values[0]?.value ?? 0;
    const input = stack.input({ prompt: "hello there" });
    const props = { ...(input.forwardedProps as object), a2uiCatalogAvailable: true, toolChoice: "auto", command: { note: MARKER } };
    const run = await runWithHttpAgent(stack.gateway.url, { ...input, forwardedProps: props });
    expectSuccess(run.events);
    expect(JSON.stringify(stack.upstream.requests)).not.toContain(MARKER);
    expect(JSON.stringify(stack.upstream.requests)).not.toContain("a2uiCatalogAvailable");
    expect(JSON.stringify(await threadDoc(input.threadId))).not.toContain(MARKER);
    expect(logLines.join("")).not.toContain(MARKER);
    const after = (await stack.gateway.metrics.forwardedPropsIgnored.get()).values[0]?.value ?? 0;
    expect(after - before).toBe(3);
    const text = await (await fetch(new URL("metrics", stack.gateway.url))).text();
    expect(text).toMatch(/^agui_gateway_forwarded_props_ignored_total \d+$/m);
  });

  it("an unknown key inside iacCode is still INVALID_INPUT naming it", async () => {
    const reply = await postRaw(stack.gateway.url, stack.input({ iacCode: { toolChoice: "auto" } }));
    expect(reply.status).toBe(400);
    expect(reply.json.error).toEqual({
      code: "INVALID_INPUT",
      message: "Invalid iac-code forwarded properties. forwardedProps.iacCode.toolChoice: Unknown field.",
    });
  });

  it("a refused tools list names the tools", async () => {
    const tools = [
      { name: "searchDocs", description: "d", parameters: {} },
      { name: "showChart", description: "d", parameters: {} },
    ];
    const reply = await postRaw(stack.gateway.url, stack.input({ tools }));
    expect(reply.status).toBe(400);
    expect(reply.json.error).toEqual({
      code: "INVALID_INPUT",
      message: 'Client-defined tools are not supported. tools: "searchDocs", "showChart"',
    });
  });
});

describe("a resume under the interrupted run's id", () => {
  it("is admitted once (HttpAgent with the run id pinned, as useInterrupt does) and the turn finishes", async () => {
    const parked = await parkedDeploy();
    expect((await threadDoc(parked.input.threadId)).execution.interruptedRunId).toBe(parked.input.runId);
    const agent = agentWithPending(stack.gateway.url, parked.input, parked.interrupts);
    const resume = resumeInput(parked.input, [allowOnce(parked.interrupts[0]!.id)], { runId: parked.input.runId });
    const resumed = await runWithHttpAgent(stack.gateway.url, resume, { agent });
    expectSuccess(resumed.events);
    expect((await threadDoc(parked.input.threadId)).execution.interruptedRunId).toBeUndefined();
  });

  it("a byte-identical replay is DUPLICATE_RUN_ID; any other request with that id is RUN_ID_CONFLICT", async () => {
    const parked = await parkedDeploy();
    // Before the resume: the first turn replayed is a duplicate, another turn under its id a conflict.
    expect((await postRaw(stack.gateway.url, declared(parked.input))).json.error.code).toBe("DUPLICATE_RUN_ID");
    const otherTurn = declared({ ...parked.input, messages: [{ id: "message-other", role: "user", content: "other" }] });
    expect((await postRaw(stack.gateway.url, otherTurn)).json.error.code).toBe("RUN_ID_CONFLICT");
    const body = declared(resumeInput(parked.input, [allowOnce(parked.interrupts[0]!.id)], { runId: parked.input.runId }));
    const first = await postRaw(stack.gateway.url, body);
    expect(first.status).toBe(200);
    const { events } = readSse(first.text);
    expectValidRun(events);
    expectSuccess(events);
    expect((await postRaw(stack.gateway.url, body)).json.error.code).toBe("DUPLICATE_RUN_ID");
    const other = { ...body, resume: [{ interruptId: parked.interrupts[0]!.id, status: "cancelled" }] };
    expect((await postRaw(stack.gateway.url, other)).json.error.code).toBe("RUN_ID_CONFLICT");
  });

  it("only the run that ended at the interrupts: an older run's id stays refused", async () => {
    const first = stack.input({ prompt: "hello there" });
    expectSuccess((await runWithHttpAgent(stack.gateway.url, first)).events);
    const second = stack.input({ threadId: first.threadId, prompt: "deploy the stack" });
    const interrupts = interruptsOf((await runWithHttpAgent(stack.gateway.url, second)).events);
    const reuse = resumeInput(second, [allowOnce(interrupts[0]!.id)], { runId: first.runId });
    const reply = await postRaw(stack.gateway.url, declared(reuse));
    expect(reply.status).toBe(409);
    expect(reply.json.error.code).toBe("RUN_ID_CONFLICT");
  });

  it("survives a restart: the id is kept in the state file", async () => {
    const parked = await parkedDeploy();
    await stack.restart();
    const agent = agentWithPending(stack.gateway.url, parked.input, parked.interrupts);
    const resume = resumeInput(parked.input, [allowOnce(parked.interrupts[0]!.id)], { runId: parked.input.runId });
    expectSuccess((await runWithHttpAgent(stack.gateway.url, resume, { agent })).events);
  });
});

describe("a new turn while interrupts are pending", () => {
  it("undeclared: 409 RESUME_REQUIRED whose envelope carries the pending interrupts", async () => {
    const parked = await parkedDeploy();
    const turn = stack.input({ threadId: parked.input.threadId, prompt: "something else" });
    const reply = await postRaw(stack.gateway.url, turn);
    expect(reply.status).toBe(409);
    expect(reply.json.error.code).toBe("RESUME_REQUIRED");
    expect(reply.json.error.interrupts).toEqual(parked.interrupts);
  });

  it("declared 1.0: the run ends at once with the same interrupts and the text never reaches the kernel", async () => {
    const parked = await parkedDeploy();
    const sent = streamRequests();
    const turn = stack.input({ threadId: parked.input.threadId, prompt: "something else" });
    const run = await runWithHttpAgent(stack.gateway.url, turn);
    // The run ends at once with the same interrupts; the kernel never got the new text.
    expect(typesOf(run.events).filter((t) => t !== "CUSTOM")).toEqual(["RUN_STARTED", "RUN_FINISHED"]);
    expect(interruptsOf(run.events)).toEqual(parked.interrupts);
    expect(streamRequests()).toBe(sent);
    expect(JSON.stringify(stack.upstream.requests)).not.toContain("something else");
    // That run is now the one whose id a resume may reuse; the original run's id is refused.
    const byOld = declared(resumeInput(parked.input, [allowOnce(parked.interrupts[0]!.id)], { runId: parked.input.runId }));
    expect((await postRaw(stack.gateway.url, byOld)).json.error.code).toBe("RUN_ID_CONFLICT");
    const resume = resumeInput(turn, [allowOnce(parked.interrupts[0]!.id)], { runId: turn.runId });
    const resumed = await runWithHttpAgent(stack.gateway.url, resume, { agent: run.agent });
    expectSuccess(resumed.events);
    // The answer is delivered as it would have been without the re-show: the kernel's turn streams on.
    expect(deployedText(resumed.events)).toMatch(/is deployed in cn-hangzhou/);
    // Nothing pending any more: the next turn is an ordinary one.
    expectSuccess((await runWithHttpAgent(stack.gateway.url, stack.input({ threadId: turn.threadId, prompt: "hello there" }))).events);
  });

  it("declared 1.0 after a gateway restart: the interrupts are shown again and can be answered", async () => {
    const parked = await parkedDeploy();
    await stack.restart();
    const turn = stack.input({ threadId: parked.input.threadId, prompt: "are you there?" });
    const run = await runWithHttpAgent(stack.gateway.url, turn);
    expect(interruptsOf(run.events)).toEqual(parked.interrupts);
    const resume = resumeInput(turn, [allowOnce(parked.interrupts[0]!.id)], { runId: turn.runId });
    const resumed = await runWithHttpAgent(stack.gateway.url, resume, { agent: run.agent });
    expectSuccess(resumed.events);
    expect(deployedText(resumed.events)).toMatch(/is deployed in cn-hangzhou/);
  });
});

describe("a run stopped by the cancel extension", () => {
  async function stopMidRun(body: unknown): Promise<WireEvent[]> {
    const live = await openSse(stack.gateway.url, body);
    expect(live.status).toBe(200);
    const session = await live.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
    await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    const value = session!["value"] as { executionId: string; rosInvocationId: string };
    const { threadId } = body as { threadId: string };
    const cancelled = await postCancel(stack.gateway.url, value.executionId, { threadId, rosInvocationId: value.rosInvocationId });
    expect(cancelled.json).toMatchObject({ status: "cancelled" });
    const events = await live.rest();
    expectValidRun(events);
    return events;
  }

  it("declared 1.0: every span closed, then RUN_FINISHED outcome cancelled (no interrupts, no result)", async () => {
    const events = await stopMidRun(declared(stack.input({ prompt: "stream slowly" })));
    expect(typesOf(events).slice(-2)).toEqual(["TEXT_MESSAGE_END", "RUN_FINISHED"]);
    const { timestamp: _t, ...last } = events.at(-1)!;
    expect(last).toEqual({ type: "RUN_FINISHED", threadId: expect.any(String), runId: expect.any(String), outcome: { type: "cancelled" } });
    // The next turn on the thread is an ordinary new run.
    const next = stack.input({ threadId: events[0]!["threadId"] as string, prompt: "answer quickly" });
    expectSuccess((await runWithHttpAgent(stack.gateway.url, next)).events);
  });

  it("declared 1.0: a cancel that lands while a re-show is committing ends it cancelled; nothing stays pending", async () => {
    const parked = await parkedDeploy();
    const { executionId, rosInvocationId } = (await threadDoc(parked.input.threadId)).execution;
    // Slow durable writes hold the re-show between its admission and its interrupt commit.
    let delayMs = 0;
    const rename = (async (from: string, to: string) => {
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      return fsp.rename(from, to);
    }) as FsLayer["rename"];
    await stack.restart({ store: new FileThreadStore({ dir: stack.stateDir, fs: { rename } }) });
    try {
      delayMs = 300;
      const turn = declared(stack.input({ threadId: parked.input.threadId, prompt: "are you there?" }));
      const live = await openSse(stack.gateway.url, turn);
      await live.until((e) => e.type === "RUN_STARTED");
      const cancelled = await postCancel(stack.gateway.url, executionId, { threadId: turn.threadId, rosInvocationId });
      expect(cancelled.json).toMatchObject({ status: "cancelled" });
      const events = await live.rest();
      expectValidRun(events);
      expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
      delayMs = 0;
      await stack.restart();
      expect(Object.keys((await threadDoc(turn.threadId)).execution.pending)).toEqual([]);
      // The thread is free: the next turn is an ordinary one, not 409 RESUME_REQUIRED.
      expectSuccess((await runWithHttpAgent(stack.gateway.url, stack.input({ threadId: turn.threadId, prompt: "hello there" }))).events);
    } finally {
      delayMs = 0;
      await stack.restart();
    }
  });

  it("undeclared: RUN_ERROR CANCELLED, as the seeds' table says", async () => {
    const events = await stopMidRun(stack.input({ prompt: "stream slowly" }));
    expect(typesOf(events).slice(-2)).toEqual(["TEXT_MESSAGE_END", "RUN_ERROR"]);
    expect(events.at(-1)).toMatchObject({ code: "CANCELLED" });
  });
});

describe("GET /capabilities", () => {
  it("an AgentCapabilities object that says what the gateway does", async () => {
    const response = await fetch(new URL("capabilities", stack.gateway.url));
    expect(response.status).toBe(200);
    const capabilities = (await response.json()) as AgentCapabilities;
    expect(capabilities.identity).toMatchObject({ name: "agui-gateway", version: SERVER_VERSION });
    expect(capabilities.transport).toMatchObject({ streaming: true, httpBinary: true, websocket: false });
    expect(capabilities.tools).toEqual({ supported: true, clientProvided: false });
    expect(capabilities.humanInTheLoop).toMatchObject({ supported: true, approvals: true, interrupts: true });
    expect(capabilities.reasoning).toMatchObject({ supported: true, streaming: true });
    expect(capabilities.multimodal?.input).toMatchObject({ image: true, audio: false, pdf: false });
    expect(capabilities.custom?.["iac-code"]).toMatchObject({
      imageInput: { source: "base64", maxImageBytes: 8 * 1024 * 1024, maxTotalImageBytes: 10 * 1024 * 1024 },
      cancel: { method: "POST", path: "/extensions/iac-code/v1/executions/{executionId}/cancel" },
    });
  });

  it("needs the same bearer token as POST /", async () => {
    const gateway = await stack.restart({ authToken: "capabilities-token-1" });
    const url = new URL("capabilities", gateway.url);
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { Authorization: "Bearer wrong" } })).status).toBe(401);
    const ok = await fetch(url, { headers: { Authorization: "Bearer capabilities-token-1" } });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as AgentCapabilities).identity?.name).toBe("agui-gateway");
    await stack.restart();
  });
});
