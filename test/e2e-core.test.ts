// End to end through the real @ag-ui/client HttpAgent: gateway on 127.0.0.1 in front of a real A2A 1.0
// upstream (the @a2a-js/sdk scripted server, or a raw byte-level fake). Every run read here is checked
// event by event against @ag-ui/core's EventSchema and as a whole with verifyAguiStream.
import { createHash } from "node:crypto";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { HttpAgent, type RunAgentInput } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { A2AStreamResponse } from "../operators/types.js";
import {
  type RawExchange,
  type RawResponder,
  type RawA2AServer,
  type ScriptItem,
  type ScriptedA2AServer,
  type TurnContext,
  type TurnScript,
} from "../src/demo/index.js";
import { startGateway, type RunningGateway } from "../src/gateway.js";
import {
  expectValidRun,
  frame,
  ofType,
  openSse,
  postRaw,
  readSse,
  runWithHttpAgent,
  scriptByPrompt,
  sessionEventOf,
  silentLogger,
  slowTurn,
  startStack,
  typesOf,
  waitFor,
  type Stack,
  type WireEvent,
} from "./helpers/e2e.js";

const SESSION_ID = "session-e2e-1";
const CONTEXT_ID = /^agui-[0-9a-f]{40}$/;

function contextIdOf(threadId: string): string {
  return "agui-" + createHash("sha256").update(threadId, "utf8").digest("hex").slice(0, 40);
}

/** Consecutive repeats collapsed: the shape of a run without counting deltas. */
function shape(events: readonly { type: string }[]): string[] {
  return typesOf(events).filter((type, i, all) => i === 0 || all[i - 1] !== type);
}

function terminal(events: readonly WireEvent[]): WireEvent {
  const last = events.at(-1);
  expect(last).toBeDefined();
  return last!;
}

function textOf(events: readonly WireEvent[]): string {
  return ofType(events, "TEXT_MESSAGE_CONTENT")
    .map((e) => e["delta"] as string)
    .join("");
}

const PERMISSION_INPUT_ID = "permission-e2e-1";
const PERMISSION_TOOL_ID = "call_e2e_deploy";

/** Hand-written upstream turns, chosen by the prompt; anything else gets the demo agent. */
const SCRIPTS: Record<string, (turn: TurnContext) => ScriptItem[]> = {
  "fail while texting": () => [
    frame.working({ sessionId: SESSION_ID }),
    frame.working({ text: "Working on it", messageId: "m-fail" }),
    frame.status("TASK_STATE_FAILED", { sessionId: SESSION_ID }),
  ],
  "cancel upstream": () => [frame.working({ sessionId: SESSION_ID }), frame.status("TASK_STATE_CANCELED", { sessionId: SESSION_ID })],
  "end while working": () => [
    frame.working({ sessionId: SESSION_ID }),
    frame.working({ text: "Half an answer", messageId: "m-half" }),
  ],
  "complete plainly": () => [
    frame.working({ sessionId: SESSION_ID }),
    frame.working({ text: "All done.", messageId: "m-done" }),
    frame.status("TASK_STATE_COMPLETED", { sessionId: SESSION_ID }),
  ],
  "ask permission": (turn) => [
    frame.working({ sessionId: SESSION_ID }),
    frame.working({ text: "I need to deploy the stack.", messageId: "m-perm" }),
    frame.working({ iac: { tool: { status: "started", toolUseId: PERMISSION_TOOL_ID, name: "ros_deploy" } } }),
    frame.status("TASK_STATE_INPUT_REQUIRED", {
      sessionId: SESSION_ID,
      iac: {
        input: {
          schemaVersion: 1,
          kind: "permission",
          requestTaskId: turn.taskId,
          contextId: turn.contextId,
          inputId: PERMISSION_INPUT_ID,
          toolUseId: PERMISSION_TOOL_ID,
          toolName: "ros_deploy",
          title: "Deploy ROS stack",
          prompt: "Deploy stack demo to cn-hangzhou - allow once?",
          options: [
            { id: "allow_once", label: "Allow once" },
            { id: "deny", label: "Deny" },
          ],
          language: "en",
          required: true,
        },
      },
    }),
  ],
  // Long enough that a test always acts while it is still streaming; a cancel ends it at once.
  "stream slowly": () => slowTurn(SESSION_ID),
  "pause a while": () => [
    frame.working({ sessionId: SESSION_ID }),
    frame.working({ text: "Before the pause. ", messageId: "m-pause" }),
    { delayMs: 700 },
    frame.working({ text: "After the pause.", messageId: "m-pause" }),
    frame.status("TASK_STATE_COMPLETED", { sessionId: SESSION_ID }),
  ],
};

function routedScript(): TurnScript {
  return scriptByPrompt(SCRIPTS);
}

let stack: Stack<ScriptedA2AServer>;

beforeAll(async () => {
  stack = await startStack({ script: routedScript() });
});

afterAll(async () => {
  await stack.close();
});

function sendsOf(upstream: ScriptedA2AServer, threadId: string) {
  const contextId = contextIdOf(threadId);
  return upstream.requests.filter(
    (r) => r.method === "SendStreamingMessage" && (r.params as { message?: { contextId?: string } }).message?.contextId === contextId,
  );
}

describe("a demo turn through HttpAgent", () => {
  it("streams RUN_STARTED, session, reasoning, text, tool call and one successful RUN_FINISHED", async () => {
    const input = stack.input({ prompt: "Create a VPC template" });
    const { events, agent, status } = await runWithHttpAgent(stack.gateway.url, input);
    expect(status).toBe(200);

    expect(shape(events)).toEqual([
      "RUN_STARTED",
      "CUSTOM",
      "REASONING_START",
      "REASONING_MESSAGE_START",
      "REASONING_MESSAGE_CONTENT",
      "REASONING_MESSAGE_END",
      "REASONING_END",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TOOL_CALL_START",
      "TOOL_CALL_ARGS",
      "TOOL_CALL_END",
      "TOOL_CALL_RESULT",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "RUN_FINISHED",
    ]);
    expect(events[0]).toMatchObject({ type: "RUN_STARTED", threadId: input.threadId, runId: input.runId });

    const session = sessionEventOf(events);
    expect(session).toMatchObject({
      schemaVersion: 1,
      threadId: input.threadId,
      aguiRunId: input.runId,
      contextId: contextIdOf(input.threadId),
      rosInvocationId: "invocation-1",
    });
    expect(session["contextId"]).toMatch(CONTEXT_ID);
    expect(session["executionId"]).toEqual(expect.any(String));
    expect(session["taskId"]).toEqual(expect.any(String));
    expect(session["sessionId"]).toEqual(expect.any(String));

    const tool = ofType(events, "TOOL_CALL_START")[0]!;
    expect(tool).toMatchObject({ toolCallName: "read_file" });
    expect(ofType(events, "TOOL_CALL_ARGS")[0]).toMatchObject({ toolCallId: tool["toolCallId"], delta: '{"path":"README.md"}' });
    expect(ofType(events, "TOOL_CALL_RESULT")[0]).toMatchObject({ toolCallId: tool["toolCallId"], role: "tool" });

    const finished = ofType(events, "RUN_FINISHED");
    expect(finished).toHaveLength(1);
    expect(ofType(events, "RUN_ERROR")).toHaveLength(0);
    expect(terminal(events)).toMatchObject({
      type: "RUN_FINISHED",
      threadId: input.threadId,
      runId: input.runId,
      outcome: { type: "success" },
      // The demo reports 812/40 before the tool result and 934/38 after it.
      usage: [{ inputTokens: 1746, outputTokens: 78, totalTokens: 1824, cachedInputTokens: 0 }],
    });

    // The assistantFinal frame repeats the whole last paragraph; it must not be streamed twice.
    const q = "Create a VPC template";
    const expected =
      `I'll help with "${q}". First I will read the workspace README.` +
      `The workspace is a demo, so nothing was changed. For "${q}" I would list the resources, write a ROS template and validate it before any deployment.`;
    expect(textOf(events)).toBe(expected);
    const assistant = agent.messages.filter((m) => m.role === "assistant" && typeof m.content === "string" && m.content !== "");
    expect(assistant.map((m) => m.content)).toEqual([expected]);

    for (const event of events) {
      expect(Number.isInteger(event["timestamp"]), `${event.type}.timestamp`).toBe(true);
      for (const [key, value] of Object.entries(event)) expect(value, `${event.type}.${key}`).not.toBeNull();
    }
  });

  it("answers with SSE headers and LF-only data records", async () => {
    const response = await fetch(stack.gateway.url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(stack.input()),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream\b/);
    expect(response.headers.get("cache-control")).toBe("no-cache");
    expect(response.headers.get("x-accel-buffering")).toBe("no");
    const { events, records } = readSse(await response.text());
    expect(records.every((r) => r.kind === "event")).toBe(true);
    expect(events[0]?.type).toBe("RUN_STARTED");
    expect(terminal(events).type).toBe("RUN_FINISHED");
  });
});

describe("the A2A request the upstream receives", () => {
  it("is SendStreamingMessage with A2A-Version 1.0, the thread's context, no taskId and the minimal metadata", async () => {
    const input = stack.input();
    await runWithHttpAgent(stack.gateway.url, input);
    const sends = sendsOf(stack.upstream, input.threadId);
    expect(sends).toHaveLength(1);
    const request = sends[0]!;
    expect(request.headers["a2a-version"]).toBe("1.0");
    const message = (request.params as { message: Record<string, unknown> }).message;
    expect(message["contextId"]).toBe(contextIdOf(input.threadId));
    expect(message).not.toHaveProperty("taskId");
    expect(message["messageId"]).toBe(input.messages[0]!.id);
    expect(message["role"]).toBe("ROLE_USER");
    expect(message["parts"]).toEqual([{ text: "Create a VPC template" }]);
    expect((message["metadata"] as { iac_code: unknown }).iac_code).toEqual({
      cwd: stack.workspace,
      rosInvocationId: "invocation-1",
      preferredLanguage: "en",
      cleanupOnly: false,
      run_mode: "normal",
    });
  });

  it("maps every optional iacCode field to the kernel's metadata keys and normalises the language", async () => {
    const input = stack.input({
      iacCode: {
        preferredLanguage: "ja-JP",
        llmApiKey: " sk-test-key ",
        model: "qwen-max",
        thinking: { enabled: true, effort: "high", budget: 1024 },
        userId: "user-7",
        channel: "console",
        alibabaCloud: { accessKeyId: "AK", accessKeySecret: "SK", securityToken: "STS", regionId: "cn-beijing" },
      },
    });
    await runWithHttpAgent(stack.gateway.url, input);
    const message = (sendsOf(stack.upstream, input.threadId)[0]!.params as { message: { metadata: { iac_code: unknown } } }).message;
    expect(message.metadata.iac_code).toEqual({
      cwd: stack.workspace,
      rosInvocationId: "invocation-1",
      preferredLanguage: "ja",
      cleanupOnly: false,
      run_mode: "normal",
      iac_code_api_key: "sk-test-key",
      iac_code_model: "qwen-max",
      thinking: { enabled: true, effort: "high", budget: 1024 },
      user_id: "user-7",
      channel: "console",
      alibaba_cloud_access_key_id: "AK",
      alibaba_cloud_access_key_secret: "SK",
      alibaba_cloud_security_token: "STS",
      alibaba_cloud_region_id: "cn-beijing",
    });
  });

  it("continues the thread's context on a second turn with a new task and a new execution", async () => {
    const first = stack.input();
    const run1 = await runWithHttpAgent(stack.gateway.url, first);
    const second: RunAgentInput = {
      ...stack.input({ threadId: first.threadId }),
      messages: [...run1.agent.messages, { id: "message-turn-2", role: "user", content: "Now add a vSwitch" }],
    };
    const run2 = await runWithHttpAgent(stack.gateway.url, second, { agent: run1.agent });

    const s1 = sessionEventOf(run1.events);
    const s2 = sessionEventOf(run2.events);
    expect(s2["contextId"]).toBe(s1["contextId"]);
    expect(s2["sessionId"]).toBe(s1["sessionId"]);
    expect(s2["taskId"]).not.toBe(s1["taskId"]);
    expect(s2["executionId"]).not.toBe(s1["executionId"]);
    expect(s2["aguiRunId"]).toBe(second.runId);

    const sends = sendsOf(stack.upstream, first.threadId);
    expect(sends).toHaveLength(2);
    const m2 = (sends[1]!.params as { message: Record<string, unknown> }).message;
    expect(m2["contextId"]).toBe(contextIdOf(first.threadId));
    expect(m2).not.toHaveProperty("taskId");
    expect(m2["messageId"]).toBe("message-turn-2");
    expect(m2["parts"]).toEqual([{ text: "Now add a vSwitch" }]);
  });
});

describe("the A2A bearer token", () => {
  let secured: Stack<ScriptedA2AServer>;
  let wrong: RunningGateway;

  beforeAll(async () => {
    secured = await startStack({ upstreamToken: "a2a-secret", gateway: { a2aToken: "a2a-secret" } });
    wrong = await startGateway({
      host: "127.0.0.1",
      port: 0,
      a2aUrl: secured.upstream.url,
      a2aToken: "not-the-secret",
      allowedRoots: [secured.root],
      logger: silentLogger,
    });
  });

  afterAll(async () => {
    await wrong?.close();
    await secured?.close();
  });

  it("is sent to the upstream and the run succeeds", async () => {
    const { events } = await runWithHttpAgent(secured.gateway.url, secured.input());
    expect(terminal(events)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(secured.upstream.requests.at(-1)?.headers["authorization"]).toBe("Bearer a2a-secret");
  });

  it("a wrong token (upstream 401) ends the run with A2A_UNAVAILABLE", async () => {
    const { events } = await runWithHttpAgent(wrong.url, secured.input());
    expect(typesOf(events)).toEqual(["RUN_STARTED", "RUN_ERROR"]);
    expect(terminal(events)).toMatchObject({ code: "A2A_UNAVAILABLE" });
  });
});

describe("upstream task outcomes", () => {
  it("FAILED closes the open text message, then RUN_ERROR A2A_EXECUTION_FAILED", async () => {
    const { events } = await runWithHttpAgent(stack.gateway.url, stack.input({ prompt: "fail while texting" }));
    expect(shape(events)).toEqual(["RUN_STARTED", "CUSTOM", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_ERROR"]);
    expect(terminal(events)).toMatchObject({ code: "A2A_EXECUTION_FAILED", message: "The A2A execution failed." });
  });

  it("RUN_ERROR carries only the fields of AG-UI 1.0's RunErrorEvent (HttpAgent strips anything else with a warning)", async () => {
    const response = await postRaw(stack.gateway.url, stack.input({ prompt: "fail while texting" }));
    const error = terminal(readSse(response.text).events);
    expect(error.type).toBe("RUN_ERROR");
    const allowed = ["type", "timestamp", "rawEvent", "metadata", "message", "code", "usage"];
    expect(Object.keys(error).filter((key) => !allowed.includes(key))).toEqual([]);
  });

  it("CANCELED ends with RUN_ERROR CANCELLED for a client that declares no protocolVersion", async () => {
    const reply = await postRaw(stack.gateway.url, stack.input({ prompt: "cancel upstream" }));
    const { events } = readSse(reply.text);
    expectValidRun(events);
    expect(typesOf(events)).toEqual(["RUN_STARTED", "CUSTOM", "RUN_ERROR"]);
    expect(terminal(events)).toMatchObject({ code: "CANCELLED" });
  });

  it("CANCELED ends with RUN_FINISHED outcome cancelled for HttpAgent 1.0 (it declares protocolVersion 1.0)", async () => {
    const { events } = await runWithHttpAgent(stack.gateway.url, stack.input({ prompt: "cancel upstream" }));
    expect(typesOf(events)).toEqual(["RUN_STARTED", "CUSTOM", "RUN_FINISHED"]);
    expect(terminal(events)).toEqual({ type: "RUN_FINISHED", threadId: expect.any(String), runId: expect.any(String), outcome: { type: "cancelled" }, timestamp: expect.any(Number) });
  });

  it("a stream that ends while WORKING is A2A_EXECUTION_FAILED, spans closed first", async () => {
    const { events } = await runWithHttpAgent(stack.gateway.url, stack.input({ prompt: "end while working" }));
    expect(shape(events)).toEqual(["RUN_STARTED", "CUSTOM", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_ERROR"]);
    expect(terminal(events)).toMatchObject({ code: "A2A_EXECUTION_FAILED" });
  });

  it("COMPLETED is a successful RUN_FINISHED", async () => {
    const { events } = await runWithHttpAgent(stack.gateway.url, stack.input({ prompt: "complete plainly" }));
    expect(shape(events)).toEqual(["RUN_STARTED", "CUSTOM", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]);
    expect(terminal(events)).toMatchObject({ outcome: { type: "success" } });
    expect(textOf(events)).toBe("All done.");
  });

  it("INPUT_REQUIRED with a permission ends the run with one interrupt that HttpAgent records", async () => {
    const before = Date.now();
    const { events, agent } = await runWithHttpAgent(stack.gateway.url, stack.input({ prompt: "ask permission" }));
    expect(shape(events)).toEqual([
      "RUN_STARTED",
      "CUSTOM",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TOOL_CALL_START",
      "TOOL_CALL_END",
      "TEXT_MESSAGE_END",
      "RUN_FINISHED",
    ]);
    const outcome = terminal(events)["outcome"] as { type: string; interrupts: Record<string, unknown>[] };
    expect(outcome.type).toBe("interrupt");
    expect(outcome.interrupts).toHaveLength(1);
    const interrupt = outcome.interrupts[0]!;
    expect(interrupt).toMatchObject({
      id: PERMISSION_INPUT_ID,
      reason: "tool_call",
      toolCallId: PERMISSION_TOOL_ID,
      message: "Deploy stack demo to cn-hangzhou - allow once?",
      responseSchema: {
        type: "object",
        properties: { decision: { type: "string", enum: ["allow_once", "deny"] } },
        required: ["decision"],
      },
    });
    const expiresAt = interrupt["expiresAt"] as string;
    expect(new Date(expiresAt).toISOString()).toBe(expiresAt);
    expect(Date.parse(expiresAt)).toBeGreaterThan(before);
    expect(agent.pendingInterrupts.map((i) => i.id)).toEqual([PERMISSION_INPUT_ID]);
  });
});

describe("raw upstream faults", () => {
  const TASK = "raw-task-1";
  let raw: Stack<RawA2AServer>;

  const taskFrame = (ex: RawExchange): A2AStreamResponse => ({
    task: { id: TASK, contextId: ex.params.message.contextId, status: { state: "TASK_STATE_SUBMITTED" } },
  });
  const status = (ex: RawExchange, state: string, extra: Record<string, unknown> = {}, taskId = TASK) => ({
    statusUpdate: {
      taskId,
      contextId: ex.params.message.contextId,
      status: { state, ...extra },
      metadata: { iac_code: { iacCodeSessionId: SESSION_ID } },
    },
  });

  const HANDLERS: Record<string, (ex: RawExchange, res: RawResponder) => Promise<void> | void> = {
    "http 500": (_ex, res) => res.json(500, { error: "boom" }),
    "not json": (ex, res) => {
      res.sseStart();
      res.sseFrame(taskFrame(ex));
      res.sseRaw("data: this is not json\n\n");
      res.end();
    },
    "task changes": (ex, res) => {
      res.sseStart();
      res.sseFrame(taskFrame(ex));
      res.sseFrame(status(ex, "TASK_STATE_WORKING"));
      res.sseFrame(status(ex, "TASK_STATE_WORKING", {}, "another-task"));
      res.end();
    },
    crlf: (ex, res) => {
      res.sseStart();
      res.sseFrame(taskFrame(ex), { crlf: true });
      res.sseFrame(
        status(ex, "TASK_STATE_WORKING", { message: { messageId: "m-crlf", role: "ROLE_AGENT", parts: [{ text: "Over CRLF." }] } }),
        { crlf: true },
      );
      res.sseFrame(status(ex, "TASK_STATE_COMPLETED"), { crlf: true });
      res.end();
    },
    "reset with a tool open": async (ex, res) => {
      res.sseStart();
      res.sseFrame(taskFrame(ex));
      res.sseFrame({
        statusUpdate: {
          taskId: TASK,
          contextId: ex.params.message.contextId,
          status: { state: "TASK_STATE_WORKING" },
          metadata: { iac_code: { iacCodeSessionId: SESSION_ID, tool: { status: "started", toolUseId: "call_raw", name: "read_file" } } },
        },
      });
      // Let the frames reach the gateway before the socket dies.
      await new Promise((resolve) => setTimeout(resolve, 100));
      res.destroy();
    },
  };

  beforeAll(async () => {
    raw = await startStack({
      raw: (ex, res) => {
        if (ex.method === "CancelTask") return res.json(200, { jsonrpc: "2.0", id: ex.id, result: { id: TASK } });
        const prompt = (ex.params?.message?.parts?.[0]?.text as string | undefined) ?? "";
        const handler = HANDLERS[prompt];
        if (!handler) return res.json(200, { jsonrpc: "2.0", id: ex.id, error: { code: -32601, message: "no such script" } });
        return handler(ex, res);
      },
    });
  });

  afterAll(async () => {
    await raw?.close();
  });

  it("connection refused: RUN_STARTED then RUN_ERROR A2A_UNAVAILABLE", async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const gateway = await startGateway({
      host: "127.0.0.1",
      port: 0,
      a2aUrl: `http://127.0.0.1:${closedPort}/`,
      allowedRoots: [raw.root],
      logger: silentLogger,
    });
    try {
      const { events } = await runWithHttpAgent(gateway.url, raw.input());
      expect(typesOf(events)).toEqual(["RUN_STARTED", "RUN_ERROR"]);
      expect(terminal(events)).toMatchObject({ code: "A2A_UNAVAILABLE", message: "The local A2A execution service is unavailable." });
    } finally {
      await gateway.close();
    }
  });

  it("HTTP 500 from the upstream is A2A_UNAVAILABLE", async () => {
    const { events } = await runWithHttpAgent(raw.gateway.url, raw.input({ prompt: "http 500" }));
    expect(typesOf(events)).toEqual(["RUN_STARTED", "RUN_ERROR"]);
    expect(terminal(events)).toMatchObject({ code: "A2A_UNAVAILABLE" });
  });

  it("a data line that is not JSON is A2A_PROTOCOL_ERROR", async () => {
    const { events } = await runWithHttpAgent(raw.gateway.url, raw.input({ prompt: "not json" }));
    expect(typesOf(events)[0]).toBe("RUN_STARTED");
    expect(terminal(events)).toMatchObject({ type: "RUN_ERROR", code: "A2A_PROTOCOL_ERROR" });
  });

  it("a frame whose taskId changes is A2A_PROTOCOL_ERROR", async () => {
    const { events } = await runWithHttpAgent(raw.gateway.url, raw.input({ prompt: "task changes" }));
    expect(terminal(events)).toMatchObject({
      type: "RUN_ERROR",
      code: "A2A_PROTOCOL_ERROR",
      message: "The A2A task identity changed unexpectedly.",
    });
  });

  it("CRLF framing from the upstream is read like LF", async () => {
    const { events } = await runWithHttpAgent(raw.gateway.url, raw.input({ prompt: "crlf" }));
    expect(terminal(events)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(textOf(events)).toBe("Over CRLF.");
  });

  it("a socket reset mid-stream closes the open tool call, then RUN_ERROR A2A_UNAVAILABLE", async () => {
    const { events } = await runWithHttpAgent(raw.gateway.url, raw.input({ prompt: "reset with a tool open" }));
    expect(shape(events)).toEqual(["RUN_STARTED", "CUSTOM", "TOOL_CALL_START", "TOOL_CALL_END", "RUN_ERROR"]);
    expect(terminal(events)).toMatchObject({ code: "A2A_UNAVAILABLE" });
  });
});

describe("client disconnects", () => {
  it("leaving an active run cancels its A2A task", async () => {
    const input = stack.input({ prompt: "stream slowly" });
    const live = await openSse(stack.gateway.url, input);
    const session = await live.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
    await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    const taskId = (session!["value"] as { taskId: string }).taskId;
    live.abort();
    expect(await waitFor(() => stack.upstream.cancelled.includes(taskId))).toBe(true);
    // The thread is released: a next turn is admitted.
    expect(await waitFor(() => stack.gateway.runs.activeRunCount === 0)).toBe(true);
    // (Same scripted session id as the slow turn: the kernel keeps one session per context.)
    const next = await runWithHttpAgent(stack.gateway.url, stack.input({ threadId: input.threadId, prompt: "complete plainly" }));
    expect(terminal(next.events)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(sessionEventOf(next.events)["taskId"]).not.toBe(taskId);
  });

  it("an HttpAgent abortRun mid-stream cancels the A2A task too", async () => {
    const input = stack.input({ prompt: "stream slowly" });
    let taskId: string | undefined;
    const agent = new HttpAgent({ url: stack.gateway.url, threadId: input.threadId, initialMessages: input.messages });
    const running = agent.runAgent(
      { runId: input.runId, forwardedProps: input.forwardedProps },
      {
        onCustomEvent: ({ event }) => {
          if (event.name === "iac-code.session.v1") taskId = (event.value as { taskId: string }).taskId;
        },
        onTextMessageContentEvent: () => {
          if (taskId) agent.abortRun();
        },
      },
    );
    await running.catch(() => undefined);
    expect(taskId).toBeDefined();
    expect(await waitFor(() => stack.upstream.cancelled.includes(taskId!))).toBe(true);
  });

  it("leaving after an interrupt does not cancel the task, and the interrupt stays pending", async () => {
    const input = stack.input({ prompt: "ask permission" });
    const live = await openSse(stack.gateway.url, input);
    const session = await live.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
    const finished = await live.until((e) => e.type === "RUN_FINISHED");
    live.abort();
    expect(finished?.["outcome"]).toMatchObject({ type: "interrupt" });
    const taskId = (session!["value"] as { taskId: string }).taskId;
    await waitFor(() => stack.gateway.runs.activeRunCount === 0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(stack.upstream.cancelled).not.toContain(taskId);
    const again = await postRaw(stack.gateway.url, stack.input({ threadId: input.threadId }));
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({ error: { code: "RESUME_REQUIRED" } });
  });
});

describe("heartbeat", () => {
  let slow: Stack<ScriptedA2AServer>;

  beforeAll(async () => {
    slow = await startStack({ script: routedScript(), gateway: { heartbeatSeconds: 0.2 } });
  });

  afterAll(async () => {
    await slow?.close();
  });

  it("writes `: heartbeat` comments while the upstream is silent and HttpAgent ignores them", async () => {
    const { raw, events } = await runWithHttpAgent(slow.gateway.url, slow.input({ prompt: "pause a while" }));
    expect(raw).toContain("\n\n: heartbeat\n\n");
    const { records } = readSse(raw);
    const firstBeat = records.findIndex((r) => r.kind === "heartbeat");
    expect(firstBeat).toBeGreaterThan(0);
    expect(records.slice(firstBeat).some((r) => r.kind === "event")).toBe(true);
    expect(records.filter((r) => r.kind === "heartbeat").length).toBeGreaterThanOrEqual(2);
    expect(terminal(events)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(textOf(events)).toBe("Before the pause. After the pause.");
  });
});

describe("admission conflicts", () => {
  it("a second POST on a thread with an active run is 409 THREAD_BUSY", async () => {
    const input = stack.input({ prompt: "stream slowly" });
    const live = await openSse(stack.gateway.url, input);
    await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    try {
      const busy = await postRaw(stack.gateway.url, stack.input({ threadId: input.threadId }));
      expect(busy.status).toBe(409);
      expect(busy.json).toEqual({ error: { code: "THREAD_BUSY", message: "The AG-UI thread already has an active run." } });
    } finally {
      live.abort();
    }
  });

  it("the same body again is DUPLICATE_RUN_ID; the same runId with another body is RUN_ID_CONFLICT", async () => {
    const input = stack.input();
    const first = await postRaw(stack.gateway.url, input);
    expect(first.status).toBe(200);
    expect(terminal(readSse(first.text).events).type).toBe("RUN_FINISHED");
    await waitFor(() => stack.gateway.runs.activeRunCount === 0);

    const duplicate = await postRaw(stack.gateway.url, input);
    expect(duplicate.status).toBe(409);
    expect(duplicate.json).toMatchObject({ error: { code: "DUPLICATE_RUN_ID" } });

    const conflict = await postRaw(stack.gateway.url, { ...input, messages: [{ id: "other", role: "user", content: "Something else" }] });
    expect(conflict.status).toBe(409);
    expect(conflict.json).toMatchObject({ error: { code: "RUN_ID_CONFLICT" } });
  });
});

describe("/health", () => {
  let guarded: Stack<ScriptedA2AServer>;

  beforeAll(async () => {
    guarded = await startStack({ gateway: { authToken: "agui-secret" } });
  });

  afterAll(async () => {
    await guarded?.close();
  });

  it("answers the health document without a bearer token, while POST / requires one", async () => {
    const response = await fetch(new URL("/health", guarded.gateway.url));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["executionKernel", "protocol", "protocolVersion", "serverVersion", "status"]);
    expect(body).toMatchObject({ status: "ok", protocol: "ag-ui", executionKernel: "a2a-1.0" });
    expect(body["protocolVersion"]).toEqual(expect.any(String));
    expect(body["serverVersion"]).toMatch(/^\d+\.\d+\.\d+/);

    const refused = await postRaw(guarded.gateway.url, guarded.input());
    expect(refused.status).toBe(401);
    const { events } = await runWithHttpAgent(guarded.gateway.url, guarded.input(), { headers: { Authorization: "Bearer agui-secret" } });
    expect(terminal(events)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });
});
