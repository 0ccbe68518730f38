// POST /connect brings a client that has nothing to where a client that never left is: after a conversation, with
// interrupts pending, mid-run (the live run's events and tail), for a run waiting in its reconnect grace, after a
// restart of the gateway; and refuses what it must, changing nothing. Every stream is checked by EventSchema, our
// strict verifier and @ag-ui/client's own verifyEvents.
import { randomUUID } from "node:crypto";
import type { Message } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AguiEvent } from "../operators/types.js";
import { foldMessages } from "../src/runs/fold-messages.js";
import { demoSessionId, type ScriptedA2AServer } from "../src/demo/index.js";
import { clientVerifierProblems } from "./helpers/checks.js";
import { conversation, nextTurn, withoutToolsAndReasoning } from "./helpers/conversation.js";
import { startCuttingProxy } from "./helpers/cutting-proxy.js";
import { allowOnce, resumeInput } from "./helpers/durable.js";
import { expectValidRun, openSse, postRaw, readSse, runWithHttpAgent, scriptByPrompt, slowTurn, startStack, typesOf, type Stack, type WireEvent } from "./helpers/e2e.js";
import { readWithReconnects } from "./helpers/reconnect.js";

const SLOW = "write a slow text";

let stack: Stack<ScriptedA2AServer>;

beforeAll(async () => {
  // The slow turn goes on in the thread's own demo session (a thread that talked to the demo agent keeps it).
  stack = await startStack({ script: scriptByPrompt({ [SLOW]: (turn) => slowTurn(demoSessionId(turn.contextId), 60, 20) }), gateway: { reconnectGraceSeconds: 30 } });
});

afterAll(async () => {
  await stack.close();
});

/** POST /connect as a page would send it: its RunAgentInput with a fresh run id. */
async function connect(url: string, threadId: string, overrides: Record<string, unknown> = {}): Promise<{ status: number; events: WireEvent[]; json?: any }> {
  const body = { ...stack.input({ threadId }), ...overrides };
  const response = await fetch(new URL("connect", url), { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const text = await response.text();
  if (response.status !== 200) return { status: response.status, events: [], json: JSON.parse(text) };
  const { events } = readSse(text);
  expectValidRun(events);
  expect(await clientVerifierProblems(events)).toEqual([]);
  return { status: 200, events };
}

/** The messages a client holds after applying the connect stream (snapshot, then any live run's events). */
function messagesOf(events: readonly WireEvent[]): Message[] {
  const snapshot = events.find((e) => e.type === "MESSAGES_SNAPSHOT")!["messages"] as Message[];
  const messages = structuredClone(snapshot);
  foldMessages(messages, events.slice(events.findIndex((e) => e.type === "MESSAGES_SNAPSHOT") + 2) as unknown as AguiEvent[]);
  return messages;
}

describe("POST /connect", () => {
  it("after a conversation: the messages an HttpAgent that watched holds, then a plain finish", async () => {
    const { threadId, agent } = await conversation(stack);
    const { events } = await connect(stack.gateway.url, threadId);
    expect(typesOf(events)).toEqual(["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
    expect(events.at(-1)).toMatchObject({ outcome: { type: "success" } });
    expect(events[1]!["messages"]).toEqual(withoutToolsAndReasoning(agent.messages));
  });

  it("with interrupts pending: a terminal event carrying them, and the answer to them is admitted as a resume", async () => {
    const threadId = randomUUID();
    const deploy = nextTurn(stack, undefined, threadId, "deploy the demo VPC");
    const parked = await runWithHttpAgent(stack.gateway.url, deploy);
    const interrupts = (parked.events.at(-1)!["outcome"] as { interrupts: { id: string }[] }).interrupts;
    const { events } = await connect(stack.gateway.url, threadId);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt", interrupts } });
    expect(events[1]!["messages"]).toEqual(withoutToolsAndReasoning(parked.agent.messages));
    const answered = await postRaw(stack.gateway.url, resumeInput(deploy, interrupts.map((i) => allowOnce(i.id))));
    expect(readSse(answered.text).events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });

  it("mid-run: the conversation so far, then the live run from its first event to its end, ending where its own client ends", async () => {
    const { threadId, agent } = await conversation(stack);
    const turn = nextTurn(stack, agent, threadId, SLOW);
    const live = await openSse(stack.gateway.url, turn);
    await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    const { events } = await connect(stack.gateway.url, threadId);
    // One run, the connect's own: its RUN_STARTED and snapshot, then the live run's events under the connect's run id.
    const connectRunId = events[0]!["runId"];
    expect(typesOf(events.slice(0, 2))).toEqual(["RUN_STARTED", "MESSAGES_SNAPSHOT"]);
    const original = await live.rest();
    // The live run as its own client saw it, event for event, from after its RUN_STARTED.
    expect(events.slice(2)).toEqual(original.slice(1).map((e) => ("runId" in e ? { ...e, runId: connectRunId } : e)));
    const watched = structuredClone(agent.messages);
    watched.push(turn.messages.at(-1)!);
    foldMessages(watched, original as unknown as AguiEvent[]);
    expect(withoutToolsAndReasoning(messagesOf(events))).toEqual(withoutToolsAndReasoning(watched));
  });

  it("takes over a run waiting in its reconnect grace: it is not cancelled and ends for the client that connected", async () => {
    const threadId = randomUUID();
    const turn = stack.input({ threadId, prompt: SLOW });
    const proxy = await startCuttingProxy(stack.gateway.url, () => 1_500);
    try {
      const cut = await readWithReconnects(proxy.url + "/", turn, { runId: turn.runId, maxRequests: 1 });
      expect(cut.stopped).toBe("gave up");
    } finally {
      await proxy.close();
    }
    const { events } = await connect(stack.gateway.url, threadId);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", runId: events[0]!["runId"], outcome: { type: "success" } });
    const session = events.find((e) => e["name"] === "iac-code.session.v1")!["value"] as { taskId: string };
    expect(stack.upstream.cancelled).not.toContain(session.taskId);
  });

  it("refuses without the binding's proof, with a wrong one, on an unknown thread and on a malformed body; nothing changes", async () => {
    const threadId = randomUUID();
    await postRaw(stack.gateway.url, stack.input({ threadId }));
    const noProof = await connect(stack.gateway.url, threadId, { forwardedProps: {} });
    expect(noProof).toMatchObject({ status: 400, json: { error: { code: "INVALID_INPUT" } } });
    const wrong = await connect(stack.gateway.url, threadId, { forwardedProps: { iacCode: { rosInvocationId: "someone-else" } } });
    expect(wrong).toMatchObject({ status: 404, json: { error: { code: "THREAD_NOT_FOUND" } } });
    expect(await connect(stack.gateway.url, randomUUID())).toMatchObject({ status: 404, json: { error: { code: "THREAD_NOT_FOUND" } } });
    expect(await connect(stack.gateway.url, threadId, { threadId: "" })).toMatchObject({ status: 400, json: { error: { code: "INVALID_INPUT" } } });
    expect(await connect(stack.gateway.url, threadId, { runId: 7 })).toMatchObject({ status: 400, json: { error: { code: "INVALID_INPUT" } } });
    const next = await postRaw(stack.gateway.url, stack.input({ threadId }));
    expect(readSse(next.text).events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });
});
