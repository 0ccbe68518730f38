import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createDemoScript,
  startRawA2AServer,
  startScriptedA2AServer,
  TurnRejectedError,
  type RawA2AServer,
  type ScriptedA2AServer,
  type TurnContext,
} from "../src/demo/index.js";

// ---- tiny A2A 1.0 JSON-RPC client over fetch -------------------------------------------------

type Json = Record<string, any>;
interface SseEvent {
  event: string;
  data: string;
}

const A2A_HEADERS = { "Content-Type": "application/json", "A2A-Version": "1.0" };
let rpcSeq = 0;

function post(url: string, method: string, params: unknown, headers: Record<string, string> = A2A_HEADERS) {
  return fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: `r${++rpcSeq}`, method, params }),
  });
}

async function rpcJson(url: string, method: string, params: unknown): Promise<Json> {
  const res = await post(url, method, params);
  expect(res.headers.get("content-type")).toContain("application/json");
  return (await res.json()) as Json;
}

/** Incremental SSE reader (LF or CRLF), bounded by the stream's end. */
async function* sseEvents(res: Response): AsyncGenerator<SseEvent> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut: number;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const lines = block.split("\n").filter((line) => !line.startsWith(":"));
      if (lines.length === 0) continue;
      const event = lines.find((l) => l.startsWith("event:"))?.slice(6).trim() ?? "message";
      const data = lines
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, ""))
        .join("\n");
      yield { event, data };
    }
  }
}

/** SendStreamingMessage and read the whole stream; returns the `result`s. */
async function streamTurn(url: string, message: Json): Promise<{ results: Json[]; ids: unknown[] }> {
  const res = await post(url, "SendStreamingMessage", { message });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  const results: Json[] = [];
  const ids: unknown[] = [];
  for await (const ev of sseEvents(res)) {
    const frame = JSON.parse(ev.data) as Json;
    expect(frame.jsonrpc).toBe("2.0");
    ids.push(frame.id);
    results.push(frame.result);
  }
  return { results, ids };
}

function userText(text: string, extra: Json = {}): Json {
  return { messageId: `m-${++rpcSeq}`, role: "ROLE_USER", parts: [{ text }], ...extra };
}

const iac = (r: Json): Json | undefined => r.statusUpdate?.metadata?.iac_code;
const stateOf = (r: Json): string | undefined => r.statusUpdate?.status?.state ?? r.task?.status?.state;

function permissionAnswer(input: Json, decision: string, extra: Json = {}): Json {
  return {
    messageId: `m-${++rpcSeq}`,
    role: "ROLE_USER",
    taskId: input.requestTaskId,
    contextId: input.contextId,
    parts: [
      {
        data: {
          schemaVersion: 1,
          kind: "permission",
          requestTaskId: input.requestTaskId,
          inputId: input.inputId,
          toolUseId: input.toolUseId,
          decision,
          ...extra,
        },
        mediaType: "application/json",
      },
    ],
  };
}

// ---- the demo script on the SDK server --------------------------------------------------------

describe("scripted A2A server with the demo script", () => {
  let server: ScriptedA2AServer;
  beforeAll(async () => {
    server = await startScriptedA2AServer({ script: createDemoScript({ frameDelayMs: 0 }) });
  });
  afterAll(() => server.close());

  it("streams a normal turn in iac-code's frame order and ends at INPUT_REQUIRED without input", async () => {
    const prompt = "Create a VPC template";
    const { results, ids } = await streamTurn(server.url, userText(prompt, { contextId: "ctx-normal" }));
    expect(new Set(ids).size).toBe(1);

    const [first, submitted, working] = results;
    expect(first?.task?.status?.state).toBe("TASK_STATE_SUBMITTED");
    expect(first?.task?.history?.[0]?.parts).toEqual([{ text: prompt }]);
    const taskId: string = first!.task.id;
    expect(first!.task.contextId).toBe("ctx-normal");
    expect(stateOf(submitted!)).toBe("TASK_STATE_SUBMITTED");
    expect(stateOf(working!)).toBe("TASK_STATE_WORKING");

    const updates = results.slice(1);
    expect(updates.every((r) => r.statusUpdate?.taskId === taskId)).toBe(true);
    const sessionIds = new Set(updates.map((r) => iac(r)?.iacCodeSessionId));
    expect(sessionIds.size).toBe(1);
    expect([...sessionIds][0]).toMatch(/^[0-9a-f-]{36}$/);

    const thinking = updates.filter((r) => iac(r)?.thinking);
    expect(thinking.length).toBeGreaterThanOrEqual(2);
    expect(thinking.length).toBeLessThanOrEqual(3);
    expect(thinking.every((r) => iac(r)!.thinking.type === "raw_thinking")).toBe(true);

    const texts = updates.filter((r) => r.statusUpdate.status.message && !iac(r)?.assistantFinal);
    expect(texts.length).toBeGreaterThan(3);
    for (const r of texts) {
      expect(r.statusUpdate.status.message).toMatchObject({ messageId: `${taskId}-message`, role: "ROLE_AGENT" });
    }
    const streamed = texts.map((r) => r.statusUpdate.status.message.parts[0].text).join("");
    expect(streamed).toContain(prompt);

    const tools = updates.filter((r) => iac(r)?.tool).map((r) => iac(r)!.tool);
    expect(tools.map((t) => t.status)).toEqual(["started", "input_delta", "input_complete", "completed"]);
    expect(new Set(tools.map((t) => t.toolUseId)).size).toBe(1);
    expect(tools[0]).toMatchObject({ name: "read_file" });
    expect(tools[2]).toMatchObject({ toolInput: { path: "README.md" }, inputSummary: { tool_name: "read_file" } });
    expect(typeof tools[3].result).toBe("string");

    const usage = updates.find((r) => iac(r)?.usage);
    expect(iac(usage!)!.usage).toEqual({ inputTokens: 812, outputTokens: 40, totalTokens: 852 });

    const finalIdx = updates.findIndex((r) => iac(r)?.assistantFinal);
    const final = updates[finalIdx]!;
    expect(iac(final)!.assistantFinal).toEqual({ complete: true });
    expect(final.statusUpdate.status.message.messageId).toBe(`${taskId}-2`);
    const finalText: string = final.statusUpdate.status.message.parts[0].text;
    expect(streamed.endsWith(finalText)).toBe(true);
    const toolDoneIdx = updates.findIndex((r) => iac(r)?.tool?.status === "completed");
    expect(finalIdx).toBeGreaterThan(toolDoneIdx);

    const last = results.at(-1)!;
    expect(finalIdx).toBe(updates.length - 2);
    expect(stateOf(last)).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(last.statusUpdate.status.message).toBeUndefined();
    expect(Object.keys(iac(last)!)).toEqual(["iacCodeSessionId"]);
  });

  it("GetTask returns full history and the last status metadata; idle task: cancel -32002, subscribe -32001", async () => {
    const { results } = await streamTurn(server.url, userText("List my stacks"));
    const taskId: string = results[0]!.task.id;
    const deltaCount = results.filter((r) => r.statusUpdate?.status?.message).length;

    const got = await rpcJson(server.url, "GetTask", { id: taskId, historyLength: 100 });
    expect(got.result.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(Object.keys(got.result.metadata.iac_code)).toEqual(["iacCodeSessionId"]);
    expect(got.result.history[0].role).toBe("ROLE_USER");
    expect(got.result.history).toHaveLength(1 + deltaCount);
    const trimmed = await rpcJson(server.url, "GetTask", { id: taskId, historyLength: 2 });
    expect(trimmed.result.history).toHaveLength(2);

    const cancel = await rpcJson(server.url, "CancelTask", { id: taskId });
    expect(cancel.error.code).toBe(-32002);
    expect(cancel.error.data[0].reason).toBe("TASK_NOT_CANCELABLE");
    expect(server.cancelled).toContain(taskId);

    const sub = await rpcJson(server.url, "SubscribeToTask", { id: taskId });
    expect(sub.error.code).toBe(-32001);
    expect((await rpcJson(server.url, "GetTask", { id: "no-such-task" })).error.code).toBe(-32001);
  });

  it("ListTasks of a context: its tasks newest first, each with GetTask's full history, in pages", async () => {
    const contextId = `ctx-list-${Date.now()}`;
    const first = await streamTurn(server.url, userText("first", { contextId }));
    const second = await streamTurn(server.url, userText("second", { contextId }));
    await streamTurn(server.url, userText("elsewhere", { contextId: `${contextId}-other` }));
    const ids = [first, second].map((turn) => turn.results[0]!.task.id as string);

    const listed = await rpcJson(server.url, "ListTasks", { contextId, historyLength: 1000 });
    expect(listed.result.tasks.map((t: { id: string }) => t.id)).toEqual([ids[1], ids[0]]);
    const full = await rpcJson(server.url, "GetTask", { id: ids[0], historyLength: 1000 });
    expect(listed.result.tasks[1].history).toEqual(full.result.history);

    const page = await rpcJson(server.url, "ListTasks", { contextId, pageSize: 1, historyLength: 2 });
    expect(page.result.tasks.map((t: { id: string }) => t.id)).toEqual([ids[1]]);
    expect(page.result.tasks[0].history).toHaveLength(2);
    const next = await rpcJson(server.url, "ListTasks", { contextId, pageSize: 1, pageToken: page.result.nextPageToken });
    expect(next.result.tasks.map((t: { id: string }) => t.id)).toEqual([ids[0]]);
    expect(next.result.nextPageToken).toBe("");
  });

  it("keeps one session id per contextId across tasks", async () => {
    const a = await streamTurn(server.url, userText("first", { contextId: "ctx-session" }));
    const b = await streamTurn(server.url, userText("second", { contextId: "ctx-session" }));
    const c = await streamTurn(server.url, userText("other", { contextId: "ctx-other" }));
    const sid = (r: { results: Json[] }) => iac(r.results[1]!)?.iacCodeSessionId;
    expect(a.results[0]!.task.id).not.toBe(b.results[0]!.task.id);
    expect(sid(a)).toBe(sid(b));
    expect(sid(c)).not.toBe(sid(a));
  });

  it("names the same session for a known context after a restart (a new server, a new script)", async () => {
    const before = await streamTurn(server.url, userText("first", { contextId: "ctx-restart" }));
    const restarted = await startScriptedA2AServer({ script: createDemoScript({ frameDelayMs: 0 }) });
    try {
      const after = await streamTurn(restarted.url, userText("again", { contextId: "ctx-restart" }));
      const other = await streamTurn(restarted.url, userText("other", { contextId: "ctx-restart-other" }));
      const sid = (r: { results: Json[] }) => iac(r.results[1]!)?.iacCodeSessionId;
      expect(sid(after)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(sid(after)).toBe(sid(before));
      expect(sid(other)).not.toBe(sid(before));
    } finally {
      await restarted.close();
    }
  });

  it("a deploy prompt ends with a permission input; a 7-key answer is -32602; allow continues the turn", async () => {
    const { results } = await streamTurn(server.url, userText("Please DEPLOY the VPC stack", { contextId: "ctx-d" }));
    const taskId: string = results[0]!.task.id;
    const last = results.at(-1)!;
    expect(stateOf(last)).toBe("TASK_STATE_INPUT_REQUIRED");
    const input = iac(last)!.input;
    expect(input).toMatchObject({
      schemaVersion: 1,
      kind: "permission",
      requestTaskId: taskId,
      contextId: "ctx-d",
      toolName: "ros_deploy",
      effect: "cloud_change",
      isReadOnly: false,
      language: "en",
      required: true,
    });
    expect(input.inputId).toMatch(/^permission-[0-9a-f]{32}$/);
    expect(input.options.map((o: Json) => o.id)).toEqual(["allow_once", "deny"]);
    for (const key of ["title", "purpose", "target", "prompt", "safeSummary"]) expect(typeof input[key]).toBe("string");
    expect(iac(last)!.permission).toEqual({ autoApproved: false, pending: true, toolName: "ros_deploy", toolUseId: input.toolUseId });
    const tools = results.filter((r) => iac(r)?.tool).map((r) => iac(r)!.tool);
    expect(tools.map((t) => t.status)).toEqual(["started", "input_delta", "input_complete"]);
    expect(tools[0].toolUseId).toBe(input.toolUseId);

    // GetTask shows the pending wait while it lasts.
    const pendingTask = await rpcJson(server.url, "GetTask", { id: taskId });
    expect(pendingTask.result.metadata.iac_code.input.inputId).toBe(input.inputId);

    const sevenKeys = await post(server.url, "SendStreamingMessage", { message: permissionAnswer(input, "allow_once", { extra: 1 }) });
    expect(sevenKeys.headers.get("content-type")).toContain("application/json");
    const sevenBody = (await sevenKeys.json()) as Json;
    expect(sevenBody.error.code).toBe(-32602);
    expect(sevenBody.error.message).toContain("permission_resume_invalid");

    const wrongId = await post(server.url, "SendStreamingMessage", {
      message: permissionAnswer({ ...input, inputId: `permission-${"0".repeat(32)}` }, "allow_once"),
    });
    const wrongBody = (await wrongId.json()) as Json;
    expect(wrongBody.error.code).toBe(-32602);
    expect(wrongBody.error.message).toContain("input_response_mismatch");
    const badDecision = await rpcJson(server.url, "SendStreamingMessage", { message: permissionAnswer(input, "allow_always") });
    expect(badDecision.error.code).toBe(-32602);

    const resumed = await streamTurn(server.url, permissionAnswer(input, "allow_once"));
    const [head] = resumed.results;
    expect(head?.task).toBeUndefined(); // iac-code sends no Task frame on a resumed task
    expect(stateOf(head!)).toBe("TASK_STATE_WORKING");
    expect(iac(head!)!.inputReceived).toEqual({
      kind: "permission",
      inputId: input.inputId,
      toolUseId: input.toolUseId,
      decision: "allow_once",
    });
    const resumedTools = resumed.results.filter((r) => iac(r)?.tool).map((r) => iac(r)!.tool);
    expect(resumedTools).toEqual([expect.objectContaining({ status: "completed", toolUseId: input.toolUseId, name: "ros_deploy" })]);
    expect(resumed.results.some((r) => iac(r)?.assistantFinal)).toBe(true);
    const end = resumed.results.at(-1)!;
    expect(stateOf(end)).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(iac(end)!.input).toBeUndefined();

    // The wait is consumed: answering again is rejected.
    const again = await rpcJson(server.url, "SendStreamingMessage", { message: permissionAnswer(input, "allow_once") });
    expect(again.error.code).toBe(-32602);
    const after = await rpcJson(server.url, "GetTask", { id: taskId });
    expect(Object.keys(after.result.metadata.iac_code)).toEqual(["iacCodeSessionId"]);
  });

  it("deny reports the tool as failed and finishes the turn", async () => {
    const { results } = await streamTurn(server.url, userText("deploy it"));
    const input = iac(results.at(-1)!)!.input;
    const resumed = await streamTurn(server.url, permissionAnswer(input, "deny"));
    const tool = resumed.results.map((r) => iac(r)?.tool).find(Boolean);
    expect(tool).toMatchObject({ status: "failed", toolUseId: input.toolUseId });
    expect(typeof tool.result).toBe("string");
    expect(stateOf(resumed.results.at(-1)!)).toBe("TASK_STATE_INPUT_REQUIRED");
  });

  it("a task parked on a permission is cancelable (CANCELED with a text message)", async () => {
    const { results } = await streamTurn(server.url, userText("deploy now"));
    const taskId: string = results[0]!.task.id;
    const res = await rpcJson(server.url, "CancelTask", { id: taskId });
    expect(res.result.status.state).toBe("TASK_STATE_CANCELED");
    expect(res.result.status.message.messageId).toBe(`${taskId}-5`);
    expect(res.result.status.message.parts[0].text).toBeTruthy();
    expect(res.result.metadata.iac_code.iacCodeSessionId).toBe(iac(results[1]!)!.iacCodeSessionId);
    const answer = await rpcJson(server.url, "SendStreamingMessage", {
      message: permissionAnswer(iac(results.at(-1)!)!.input, "allow_once"),
    });
    expect(answer.error).toBeDefined(); // terminal task
  });

  it("SendMessage returns the task at the end of the turn", async () => {
    const res = await rpcJson(server.url, "SendMessage", { message: userText("hello") });
    expect(res.result.task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(res.result.task.metadata.iac_code.iacCodeSessionId).toBeTruthy();
  });

  it("rejects a request without A2A-Version with -32009 and records every request", async () => {
    const before = server.requests.length;
    const res = await post(server.url, "SendStreamingMessage", { message: userText("hi") }, { "Content-Type": "application/json" });
    const body = (await res.json()) as Json;
    expect(body.error.code).toBe(-32009);
    expect(server.requests.length).toBe(before + 1);
    expect(server.requests.at(-1)!.method).toBe("SendStreamingMessage");
    expect(server.requests.at(-1)!.headers["a2a-version"]).toBeUndefined();
  });

  it("serves the agent card and /health", async () => {
    const card = (await (await fetch(`${server.url}.well-known/agent-card.json`)).json()) as Json;
    expect(card.supportedInterfaces[0]).toEqual({ url: server.url, protocolBinding: "JSONRPC", protocolVersion: "1.0" });
    expect(card.capabilities.streaming).toBe(true);
    const health = (await (await fetch(`${server.url}health`)).json()) as Json;
    expect(health).toMatchObject({ status: "healthy", mode: "normal" });
  });
});

// ---- custom scripts: cancel, floats, rejections, failures -------------------------------------

describe("scripted A2A server with custom scripts", () => {
  let server: ScriptedA2AServer;
  const seen: TurnContext[] = [];
  beforeAll(async () => {
    server = await startScriptedA2AServer({
      async *script(turn) {
        seen.push(turn);
        const prompt = turn.userMessage.parts?.[0]?.text ?? "";
        if (prompt === "reject") throw new TurnRejectedError({ code: -32602, message: "busy", data: { retryable: true } });
        if (prompt === "explode") {
          yield { statusUpdate: { status: { state: "TASK_STATE_WORKING" } } };
          throw new Error("script blew up");
        }
        yield { statusUpdate: { status: { state: "TASK_STATE_WORKING" }, metadata: { iac_code: { usage: { a: 1.5, b: 812.0 } } } } };
        if (prompt === "park") {
          yield { waitForCancel: true };
          yield { statusUpdate: { status: { state: "TASK_STATE_COMPLETED" } } }; // never reached
        }
        yield { delayMs: 5 };
        yield { statusUpdate: { status: { state: "TASK_STATE_INPUT_REQUIRED" } } };
      },
    });
  });
  afterAll(() => server.close());

  it("CancelTask of a running script: CANCELED on the live stream, signal aborted, id recorded", async () => {
    const res = await post(server.url, "SendStreamingMessage", { message: userText("park") });
    const events = sseEvents(res);
    const first = JSON.parse((await events.next()).value!.data) as Json;
    const taskId: string = first.result.task.id;
    const second = JSON.parse((await events.next()).value!.data) as Json;
    expect(second.result.statusUpdate.status.state).toBe("TASK_STATE_WORKING");

    const turn = seen.find((t) => t.taskId === taskId)!;
    expect(turn.signal.aborted).toBe(false);
    const cancel = await rpcJson(server.url, "CancelTask", { id: taskId });
    expect(cancel.result.status.state).toBe("TASK_STATE_CANCELED");
    expect(server.cancelled).toContain(taskId);
    expect(turn.signal.aborted).toBe(true);

    const rest: Json[] = [];
    for await (const ev of events) rest.push(JSON.parse(ev.data) as Json);
    expect(rest.map((f) => f.result.statusUpdate?.status?.state)).toEqual(["TASK_STATE_CANCELED"]);
    expect(rest[0]!.result.statusUpdate.status.message.parts[0].text).toBeTruthy();
  });

  it("SubscribeToTask on a running task starts with the task snapshot", async () => {
    const res = await post(server.url, "SendStreamingMessage", { message: userText("park") });
    const events = sseEvents(res);
    const taskId: string = (JSON.parse((await events.next()).value!.data) as Json).result.task.id;
    const sub = await post(server.url, "SubscribeToTask", { id: taskId });
    expect(sub.headers.get("content-type")).toContain("text/event-stream");
    const subEvents = sseEvents(sub);
    const snapshot = JSON.parse((await subEvents.next()).value!.data) as Json;
    expect(snapshot.result.task.id).toBe(taskId);
    await rpcJson(server.url, "CancelTask", { id: taskId });
    const live: Json[] = [];
    for await (const ev of subEvents) live.push(JSON.parse(ev.data) as Json);
    expect(live.at(-1)!.result.statusUpdate.status.state).toBe("TASK_STATE_CANCELED");
    for await (const _ of events) void _; // drain the original stream
  });

  it("passes metadata numbers through the SDK codecs unchanged", async () => {
    const { results } = await streamTurn(server.url, userText("numbers"));
    expect(iac(results[1]!)!.usage).toEqual({ a: 1.5, b: 812 });
  });

  it("turns a rejection thrown before the first frame into a plain JSON-RPC error (stream and SendMessage)", async () => {
    const streamed = await rpcJson(server.url, "SendStreamingMessage", { message: userText("reject") });
    expect(streamed.error).toEqual({ code: -32602, message: "busy", data: { retryable: true } });
    const unary = await rpcJson(server.url, "SendMessage", { message: userText("reject") });
    expect(unary.error).toEqual({ code: -32602, message: "busy", data: { retryable: true } });
  });

  it("a script failing mid-stream ends the stream with FAILED (the SDK's behaviour)", async () => {
    const { results } = await streamTurn(server.url, userText("explode"));
    expect(stateOf(results.at(-1)!)).toBe("TASK_STATE_FAILED");
  });

  it("reports existingTask and turnIndex for a follow-up turn on the same task", async () => {
    const { results } = await streamTurn(server.url, userText("one"));
    const taskId: string = results[0]!.task.id;
    const follow = await streamTurn(server.url, userText("two", { taskId }));
    expect(follow.results[0]!.task).toBeUndefined();
    const turnsOfTask = seen.filter((t) => t.taskId === taskId);
    expect(turnsOfTask.map((t) => [t.existingTask, t.turnIndex])).toEqual([
      [false, 0],
      [true, 1],
    ]);
    expect(turnsOfTask[1]!.userMessage).toMatchObject({ taskId, role: "ROLE_USER", parts: [{ text: "two" }] });
  });
});

describe("announceResumedTask", () => {
  let server: ScriptedA2AServer;
  beforeAll(async () => {
    server = await startScriptedA2AServer({
      announceResumedTask: true,
      *script() {
        yield { statusUpdate: { status: { state: "TASK_STATE_INPUT_REQUIRED" } } };
      },
    });
  });
  afterAll(() => server.close());

  it("keeps the SDK's Task frame at the head of a resumed turn when asked to", async () => {
    const { results } = await streamTurn(server.url, userText("one"));
    const taskId: string = results[0]!.task.id;
    const follow = await streamTurn(server.url, userText("two", { taskId }));
    expect(follow.results.map((r) => Object.keys(r)[0])).toEqual(["task", "statusUpdate"]);
    expect(follow.results[0]!.task.id).toBe(taskId);
  });
});

describe("bearer token", () => {
  let server: ScriptedA2AServer;
  beforeAll(async () => {
    server = await startScriptedA2AServer({ script: createDemoScript({ frameDelayMs: 0 }), token: "test-token" });
  });
  afterAll(() => server.close());

  it("answers 401 on every route without the token and serves with it", async () => {
    for (const res of [
      await post(server.url, "GetTask", { id: "x" }),
      await fetch(`${server.url}health`),
      await fetch(`${server.url}.well-known/agent-card.json`, { headers: { Authorization: "Bearer wrong" } }),
    ]) {
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: "Unauthorized" });
    }
    const auth = { Authorization: "Bearer test-token" };
    expect((await fetch(`${server.url}health`, { headers: auth })).status).toBe(200);
    const card = (await (await fetch(`${server.url}.well-known/agent-card.json`, { headers: auth })).json()) as Json;
    expect(card.securitySchemes.bearerAuth).toEqual({ httpAuthSecurityScheme: { scheme: "bearer" } });
    const res = await post(server.url, "SendMessage", { message: userText("hi") }, { ...A2A_HEADERS, ...auth });
    expect(((await res.json()) as Json).result.task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
  });
});

// ---- raw fault-injection server ---------------------------------------------------------------

describe("raw A2A server", () => {
  let raw: RawA2AServer;
  let disconnected: Promise<void> | undefined;
  beforeAll(async () => {
    raw = await startRawA2AServer({
      async handle(ex, res) {
        const mode = ex.params?.message?.parts?.[0]?.text;
        if (mode === "json") return res.json(500, { error: "boom" });
        res.sseStart();
        if (mode === "crlf") {
          res.sseRaw(": ping\r\n\r\n");
          res.sseFrame({ statusUpdate: { status: { state: "TASK_STATE_WORKING" } } }, { crlf: true });
          res.sseError({ code: -32603, message: "internal" }, { crlf: true });
          return res.end();
        }
        if (mode === "destroy") {
          res.sseFrame({ statusUpdate: { status: { state: "TASK_STATE_WORKING" } } });
          res.sseRaw('data: {"partial');
          setTimeout(() => res.destroy(), 20);
          return;
        }
        if (mode === "hold") {
          res.sseFrame({ statusUpdate: { status: { state: "TASK_STATE_WORKING" } } });
          disconnected = res.closed;
          return;
        }
        res.end();
      },
    });
  });
  afterAll(() => raw.close());

  it("writes CRLF frames, comments and `event: error` frames with the request id", async () => {
    const res = await post(raw.url, "SendStreamingMessage", { message: userText("crlf") });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const text = await res.text();
    const id = raw.requests.at(-1)!.id;
    expect(raw.requests.at(-1)!.method).toBe("SendStreamingMessage");
    expect(text).toBe(
      ": ping\r\n\r\n" +
        `data: ${JSON.stringify({ jsonrpc: "2.0", id, result: { statusUpdate: { status: { state: "TASK_STATE_WORKING" } } } })}\r\n\r\n` +
        `event: error\r\ndata: ${JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32603, message: "internal" } })}\r\n\r\n`,
    );
  });

  it("answers plain JSON with any status", async () => {
    const res = await post(raw.url, "SendStreamingMessage", { message: userText("json") });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: "boom" });
  });

  it("destroy() resets the socket mid-stream", async () => {
    const res = await post(raw.url, "SendStreamingMessage", { message: userText("destroy") });
    await expect(res.text()).rejects.toThrow();
  });

  it("closed resolves when the client goes away", async () => {
    const ac = new AbortController();
    const res = await fetch(raw.url, {
      method: "POST",
      headers: A2A_HEADERS,
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendStreamingMessage", params: { message: userText("hold") } }),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    await expect(disconnected).resolves.toBeUndefined();
  });
});
