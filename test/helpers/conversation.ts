// A conversation the way a user has it with HttpAgent: three turns on one thread (a tool call, a deploy parked at its
// permission and resumed, a follow-up), with secrets in forwardedProps the kernel echoes in its task history; and
// what of a live message list the kernel's history can know (src/runs/history.ts).
import { randomUUID } from "node:crypto";
import { buildResumeArray, type HttpAgent, type Message, type RunAgentInput } from "@ag-ui/client";
import { expect } from "vitest";
import type { ScriptedA2AServer } from "../../src/demo/index.js";
import { resumeInput, type ResumeEntry } from "./durable.js";
import { runWithHttpAgent, type Stack, type WireEvent } from "./e2e.js";

export const SECRETS = {
  llmApiKey: "sk-history-test-llm-key",
  accessKeyId: "LTAI-history-test-id",
  accessKeySecret: "history-test-access-key-secret",
  securityToken: "history-test-sts-token",
};

/** A JSON-RPC call straight to the kernel, its raw answer. */
export async function kernelCall(url: string, method: string, params: unknown): Promise<string> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", "A2A-Version": "1.0" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return response.text();
}

/** The next turn of `agent`'s thread: what it holds, plus a new user message, with the secrets in forwardedProps. */
export function nextTurn(stack: Stack<ScriptedA2AServer>, agent: HttpAgent | undefined, threadId: string, prompt: string): RunAgentInput {
  const input = stack.input({
    threadId,
    prompt,
    iacCode: {
      llmApiKey: SECRETS.llmApiKey,
      alibabaCloud: { accessKeyId: SECRETS.accessKeyId, accessKeySecret: SECRETS.accessKeySecret, securityToken: SECRETS.securityToken },
    },
  });
  return { ...input, messages: [...structuredClone(agent?.messages ?? []), ...input.messages] };
}

/** What history can know of a live message list: no reasoning, no tool calls or results (see history.ts). */
export function withoutToolsAndReasoning(messages: readonly Message[]): Message[] {
  return messages.flatMap((m): Message[] => {
    if (m.role === "reasoning" || m.role === "tool") return [];
    if (m.role !== "assistant") return [m];
    const { toolCalls: _toolCalls, ...rest } = m;
    return rest.content ? [rest] : [];
  });
}

/** Three turns on one thread: a tool call, a deploy parked at its permission and resumed, a follow-up. */
export async function conversation(stack: Stack<ScriptedA2AServer>): Promise<{ threadId: string; agent: HttpAgent; runs: { sent?: Message; events: WireEvent[] }[] }> {
  const threadId = randomUUID();
  const opening = nextTurn(stack, undefined, threadId, "show me the workspace");
  const first = await runWithHttpAgent(stack.gateway.url, opening);
  const agent = first.agent;
  const deploy = nextTurn(stack, agent, threadId, "deploy the demo VPC");
  const parked = await runWithHttpAgent(stack.gateway.url, deploy, { agent });
  expect(parked.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt" } });
  const resume = buildResumeArray(agent.pendingInterrupts, {
    [agent.pendingInterrupts[0]!.id]: { status: "resolved", payload: { decision: "allow_once" } },
  }) as ResumeEntry[];
  const resumed = await runWithHttpAgent(stack.gateway.url, resumeInput({ ...deploy, messages: structuredClone(agent.messages) }, resume), { agent });
  const closing = nextTurn(stack, agent, threadId, "thanks, that is all");
  const last = await runWithHttpAgent(stack.gateway.url, closing, { agent });
  const runs = [
    { sent: opening.messages.at(-1)!, events: first.events },
    { sent: deploy.messages.at(-1)!, events: parked.events },
    { events: resumed.events },
    { sent: closing.messages.at(-1)!, events: last.events },
  ];
  return { threadId, agent, runs };
}

