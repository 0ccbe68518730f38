// A thread's conversation rebuilt from the kernel (src/runs/history.ts) against what the real @ag-ui/client
// HttpAgent holds after watching the same runs live: a gateway in front of the demo A2A 1.0 kernel, three turns
// (a tool call, a permission interrupt and its resume, a plain follow-up), every event schema-checked.
import { randomUUID } from "node:crypto";
import type { Message } from "@ag-ui/client";
import { EventType } from "@ag-ui/core";
import { EventSchema } from "@ag-ui/core/schemas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RawA2AServer, RawExchange, RawResponder, ScriptedA2AServer } from "../src/demo/index.js";
import { RunError, type AguiEvent } from "../operators/types.js";
import { foldMessages } from "../src/runs/fold-messages.js";
import { contextIdForThread } from "../src/a2a/index.js";
import { SECRETS, conversation, kernelCall, withoutToolsAndReasoning } from "./helpers/conversation.js";
import { runWithHttpAgent, startStack, type Stack } from "./helpers/e2e.js";

let stack: Stack<ScriptedA2AServer>;

beforeAll(async () => {
  stack = await startStack();
});

afterAll(async () => {
  await stack.close();
});

describe("threadHistory: the conversation from the kernel's task history", () => {
  it("gives the messages HttpAgent holds after watching the runs, with the same ids, contents and order", async () => {
    const { threadId, agent } = await conversation(stack);
    const history = await stack.gateway.runs.history(threadId, { maxMessages: 100, language: "en" });
    expect(history).toEqual(withoutToolsAndReasoning(agent.messages));
    // Not a vacuous match: three user messages and three answers, the deploy's text on both sides of its interrupt.
    expect(history!.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
    expect(history![3]!.content).toMatch(/^I'll deploy stack .*\.Stack .* is deployed/);
    // What POST /connect will send them in.
    const snapshot = { type: EventType.MESSAGES_SNAPSHOT, messages: history, timestamp: Date.now() };
    expect(EventSchema.parse(snapshot)).toEqual(snapshot);
  });

  it("folds live events into messages as HttpAgent does (foldMessages, tool calls and results included)", async () => {
    const { agent, runs } = await conversation(stack);
    const folded: Message[] = [];
    for (const run of runs) {
      if (run.sent) folded.push(structuredClone(run.sent));
      foldMessages(folded, run.events as unknown as AguiEvent[]);
    }
    expect(folded).toEqual(agent.messages.filter((m) => m.role !== "reasoning"));
    expect(folded.filter((m) => m.role === "tool")).toHaveLength(3);
  });

  it("leaves behind the secrets the kernel echoes in its task history", async () => {
    const { threadId } = await conversation(stack);
    const record = await stack.gateway.runs.history(threadId, { maxMessages: 100, language: "en" });
    // The kernel does echo them (a2a-upstream §2.3): the check below is not vacuous.
    const echoed = await kernelCall(stack.upstream.url, "ListTasks", { contextId: contextIdForThread(threadId), historyLength: 100 });
    for (const secret of Object.values(SECRETS)) expect(echoed).toContain(secret);
    const text = JSON.stringify(record);
    for (const secret of Object.values(SECRETS)) expect(text).not.toContain(secret);
    expect(text).not.toContain("metadata");
  });

  it("keeps only the most recent maxMessages messages", async () => {
    const { threadId } = await conversation(stack);
    const all = await stack.gateway.runs.history(threadId, { maxMessages: 100, language: "en" });
    const recent = await stack.gateway.runs.history(threadId, { maxMessages: 3, language: "en" });
    expect(recent).toEqual(all!.slice(-3));
    expect(await stack.gateway.runs.history(threadId, { maxMessages: 0, language: "en" })).toEqual([]);
  });

  it("knows no history for a thread the gateway never ran", async () => {
    expect(await stack.gateway.runs.history(randomUUID(), { maxMessages: 10, language: "en" })).toBeUndefined();
  });
});

describe("threadHistory when the kernel fails", () => {
  let raw: Stack<RawA2AServer>;
  let listTasks: (ex: RawExchange, res: RawResponder) => void;
  let getTask: (ex: RawExchange, res: RawResponder) => void = (_ex, res) => res.json(500, { error: "unexpected GetTask" });

  beforeAll(async () => {
    raw = await startStack({
      raw: (ex, res) => {
        if (ex.method === "ListTasks") return listTasks(ex, res);
        if (ex.method === "GetTask") return getTask(ex, res);
        const contextId = ex.params.message.contextId as string;
        const taskId = `task-${randomUUID()}`;
        const status = (state: string, message?: object) => ({
          statusUpdate: { taskId, contextId, status: { state, ...(message && { message }) }, metadata: { iac_code: { iacCodeSessionId: "session-history" } } },
        });
        res.sseStart();
        res.sseFrame({ task: { id: taskId, contextId, status: { state: "TASK_STATE_SUBMITTED" } } });
        res.sseFrame(status("TASK_STATE_WORKING", { messageId: `${taskId}-message`, role: "ROLE_AGENT", parts: [{ text: "Hello." }] }));
        res.sseFrame(status("TASK_STATE_INPUT_REQUIRED"));
        res.end();
      },
    });
  });

  afterAll(async () => {
    await raw.close();
  });

  /** A thread the gateway ran once, so it has a record (and a context) to ask the kernel about. */
  async function ranThread(): Promise<string> {
    const input = raw.input({ prompt: "hello" });
    await runWithHttpAgent(raw.gateway.url, input);
    return input.threadId;
  }

  const failures: [string, (ex: RawExchange, res: RawResponder) => void, string][] = [
    ["an HTTP 500", (_ex, res) => res.json(500, { error: "boom" }), "A2A_UNAVAILABLE"],
    ["a JSON-RPC error (no ListTasks)", (ex, res) => res.json(200, { jsonrpc: "2.0", id: ex.id, error: { code: -32601, message: "Method not found" } }), "A2A_UNAVAILABLE"],
    ["tasks that are no list", (ex, res) => res.json(200, { jsonrpc: "2.0", id: ex.id, result: { tasks: "none" } }), "A2A_PROTOCOL_ERROR"],
    ["an answer that is no JSON-RPC object", (_ex, res) => res.json(200, "{not json"), "A2A_PROTOCOL_ERROR"],
    [
      "a task of another context",
      (ex, res) => res.json(200, { jsonrpc: "2.0", id: ex.id, result: { tasks: [{ id: "t-x", contextId: "someone-else", history: [] }] } }),
      "A2A_PROTOCOL_ERROR",
    ],
    ["a reset socket", (_ex, res) => res.destroy(), "A2A_UNAVAILABLE"],
  ];

  it.each(failures)("%s becomes a RunError %s", async (_name, reply, code) => {
    const threadId = await ranThread();
    listTasks = reply;
    const failure = await raw.gateway.runs.history(threadId, { maxMessages: 10, language: "en" }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RunError);
    expect(failure).toMatchObject({ code });
  });

  it("a listed task without history (iac-code's tasks from before a restart) is read with GetTask", async () => {
    const threadId = await ranThread();
    const contextId = contextIdForThread(threadId);
    listTasks = (ex, res) => res.json(200, { jsonrpc: "2.0", id: ex.id, result: { tasks: [{ id: "task-old", contextId, status: { state: "TASK_STATE_INPUT_REQUIRED" } }], nextPageToken: "" } });
    getTask = (ex, res) =>
      res.json(200, {
        jsonrpc: "2.0",
        id: ex.id,
        result: {
          id: "task-old",
          contextId,
          status: { state: "TASK_STATE_INPUT_REQUIRED" },
          history: [
            { messageId: "m-old", role: "ROLE_USER", parts: [{ text: "hi" }], metadata: { iac_code: { iac_code_api_key: SECRETS.llmApiKey } } },
            { messageId: "task-old-message", role: "ROLE_AGENT", parts: [{ text: "Hello " }] },
            { messageId: "task-old-message", role: "ROLE_AGENT", parts: [{ text: "again." }] },
            { messageId: "task-old-2", role: "ROLE_AGENT", parts: [{ text: "Hello again." }] },
          ],
        },
      });
    const history = await raw.gateway.runs.history(threadId, { maxMessages: 10, language: "en" });
    expect(history).toEqual([
      { id: "m-old", role: "user", content: "hi" },
      { id: "task-old-message", role: "assistant", content: "Hello again." },
    ]);
    const asked = raw.upstream.requests.filter((r) => r.method === "GetTask").at(-1)!;
    expect(asked.params).toMatchObject({ id: "task-old", historyLength: expect.any(Number) });
  });

  it("a kernel that is down is A2A_UNAVAILABLE", async () => {
    const threadId = await ranThread();
    await raw.upstream.close();
    await expect(raw.gateway.runs.history(threadId, { maxMessages: 10, language: "en" })).rejects.toMatchObject({ name: "RunError", code: "A2A_UNAVAILABLE" });
  });
});
