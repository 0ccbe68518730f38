// The gateway in front of the REAL `iac-code a2a` kernel (pinned PyPI release, see setup.ts), whose LLM is
// the scripted fake on 127.0.0.1. Driven with the real @ag-ui/client HttpAgent; every event is checked
// against @ag-ui/core's EventSchema and every run with verifyAguiStream (runAgent below, expectValidRun for raw streams).
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startGateway, type RunningGateway } from "../../src/gateway.js";
import {
  runWithHttpAgent,
  expectValidRun,
  ofType,
  openSse,
  postRaw,
  readSse,
  runInput,
  sessionEventOf,
  silentLogger,
  typesOf,
  waitFor,
  type WireEvent,
} from "../helpers/e2e.js";
import { clientVerifierProblems } from "../helpers/checks.js";
import { withoutToolsAndReasoning } from "../helpers/conversation.js";
import { answerAtOnce } from "../helpers/immediate.js";
import { MARKER, SCRIPTED, contentText, interopScript, isAgentCall, lastUserText, startFakeLlm, toolResults, type FakeLlm } from "./fake-llm.js";
import { INTEROP_REQUIRED, startKernel, type Kernel } from "./setup.js";

const prereqs = inject("interop");

/** Consecutive repeats collapsed: the shape of a run without counting deltas. */
function shape(events: readonly { type: string }[]): string[] {
  return typesOf(events).filter((type, i, all) => i === 0 || all[i - 1] !== type);
}

function joined(events: readonly WireEvent[], type: string): string {
  return ofType(events, type)
    .map((e) => e["delta"] as string)
    .join("");
}

function outcomeOf(events: readonly WireEvent[]): { type: string; interrupts?: Record<string, unknown>[] } {
  const last = events.at(-1);
  expect(last?.type).toBe("RUN_FINISHED");
  return last!["outcome"] as { type: string; interrupts?: Record<string, unknown>[] };
}

if (!prereqs?.ok) {
  // One explicit, passing test that says why nothing ran (CI prints it); INTEROP_REQUIRED=1 turns it into a failure.
  it("interop prerequisites", () => {
    const reason = prereqs
      ? prereqs.reason
      : "not started through `npm run test:interop` (its globalSetup installs iac-code), so the real-kernel suite did not run";
    console.warn(`[interop] real-kernel interop SKIPPED: ${reason}`);
    if (INTEROP_REQUIRED) expect.fail(`INTEROP_REQUIRED=1 but: ${reason}`);
    expect(reason.length).toBeGreaterThan(0);
  });
} else {
  describe(`gateway ↔ real iac-code a2a ${prereqs.version}`, () => {
    let llm: FakeLlm;
    let kernel: Kernel;
    let gateway: RunningGateway;

    beforeAll(async () => {
      llm = await startFakeLlm();
      llm.setScript(interopScript);
      kernel = await startKernel(prereqs.bin, llm.baseUrl);
      gateway = await startGateway({
        host: "127.0.0.1",
        port: 0,
        a2aUrl: kernel.url,
        a2aToken: kernel.token,
        allowedRoots: [kernel.root],
        logger: silentLogger,
      });
    });

    afterAll(async () => {
      await gateway?.close();
      await kernel?.stop();
      await llm?.close();
    });

    const input = (prompt: string, overrides: Parameters<typeof runInput>[1] = {}) => runInput(kernel.workspace, { prompt, ...overrides });

    it("a text turn with reasoning: REASONING_* then TEXT_* then RUN_FINISHED success, usage from the kernel", async () => {
      const request = input(`${MARKER.reasoning}: say hello`);
      const { events } = await runWithHttpAgent(gateway.url, request);
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
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
      ]);
      expect(joined(events, "REASONING_MESSAGE_CONTENT")).toBe(SCRIPTED.reasoning.join(""));
      // The kernel's assistantFinal repeat must not double the text.
      expect(joined(events, "TEXT_MESSAGE_CONTENT")).toBe(SCRIPTED.greeting.join(""));
      expect(outcomeOf(events)).toEqual({ type: "success" });
      const session = sessionEventOf(events);
      expect(session).toMatchObject({ threadId: request.threadId, aguiRunId: request.runId, rosInvocationId: "invocation-1" });
      expect(session["taskId"]).toEqual(expect.any(String));
      expect(session["sessionId"]).toEqual(expect.any(String));
      const usage = events.at(-1)!["usage"] as { inputTokens: number; outputTokens: number }[];
      expect(usage).toHaveLength(1);
      expect(usage[0]!.inputTokens).toBe(100);
      const seen = llm.requests.filter((r) => isAgentCall(r) && lastUserText(r).includes(MARKER.reasoning));
      expect(seen).toHaveLength(1);
    });

    it("a follow-up turn on the same thread continues the kernel conversation", async () => {
      const first = input(`${MARKER.reasoning}: first turn`);
      const one = await runWithHttpAgent(gateway.url, first);
      const second = input(`${MARKER.followUp}: and now?`, { threadId: first.threadId });
      const two = await runWithHttpAgent(gateway.url, second);
      expect(outcomeOf(two.events)).toEqual({ type: "success" });
      expect(joined(two.events, "TEXT_MESSAGE_CONTENT")).toBe(SCRIPTED.followUp);
      expect(sessionEventOf(two.events)["contextId"]).toBe(sessionEventOf(one.events)["contextId"]);
      expect(sessionEventOf(two.events)["sessionId"]).toBe(sessionEventOf(one.events)["sessionId"]);
      // The model saw the first turn's answer in its history: the same kernel session, not a fresh one.
      const call = llm.requests.findLast((r) => isAgentCall(r) && lastUserText(r).includes(MARKER.followUp));
      const assistantTexts = call!.messages.filter((m) => m.role === "assistant").map((m) => contentText(m.content));
      expect(assistantTexts).toContain(SCRIPTED.greeting.join(""));
    });

    /** POST /connect for the thread of `request`, its events checked. */
    async function connect(request: ReturnType<typeof input>): Promise<WireEvent[]> {
      const reply = await fetch(new URL("connect", gateway.url), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ ...request, runId: randomUUID() }),
      });
      expect(reply.status).toBe(200);
      const { events } = readSse(await reply.text());
      expectValidRun(events);
      expect(await clientVerifierProblems(events)).toEqual([]);
      return events;
    }

    it("connect after a conversation: the assistant's messages an HttpAgent that watched holds (ids and text)", async () => {
      const first = input(`${MARKER.reasoning}: remember the first turn`);
      const one = await runWithHttpAgent(gateway.url, first);
      const second = input(`${MARKER.followUp}: and now?`, { threadId: first.threadId });
      second.messages = [...structuredClone(one.agent.messages), ...second.messages];
      await runWithHttpAgent(gateway.url, second, { agent: one.agent });
      const events = await connect(first);
      expect(typesOf(events)).toEqual(["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
      const messages = events[1]!["messages"] as { role: string }[];
      // iac-code keeps the agent's messages in a task's history, not the user's (its GetTask says the same): what
      // connect can bring from this kernel is the assistant's side, under the live runs' ids.
      expect(messages.map((m) => m.role)).toEqual(["assistant", "assistant"]);
      expect(messages).toEqual(withoutToolsAndReasoning(one.agent.messages).filter((m) => m.role === "assistant"));
    });

    /** Runs the permission conversation up to its interrupt; returns the agent (holding the interrupt) and the interrupt. */
    async function parkAtPermission(prompt: string) {
      const request = input(prompt);
      const first = await runWithHttpAgent(gateway.url, request);
      expect(shape(first.events)).toEqual([
        "RUN_STARTED",
        "CUSTOM",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
      ]);
      const start = ofType(first.events, "TOOL_CALL_START")[0]!;
      expect(start).toMatchObject({ toolCallId: SCRIPTED.toolCallId, toolCallName: "bash" });
      // v0.16 sends the real tool input (`toolInput`), so the arguments are the model's, compact and sorted.
      expect(joined(first.events, "TOOL_CALL_ARGS")).toBe(SCRIPTED.toolArguments);
      const outcome = outcomeOf(first.events);
      expect(outcome.type).toBe("interrupt");
      expect(outcome.interrupts).toHaveLength(1);
      const interrupt = outcome.interrupts![0]!;
      expect(interrupt).toMatchObject({
        reason: "tool_call",
        toolCallId: SCRIPTED.toolCallId,
        responseSchema: { properties: { decision: { enum: ["allow_once", "deny"] } }, required: ["decision"] },
        metadata: { kind: "permission", toolName: "bash", toolUseId: SCRIPTED.toolCallId, isReadOnly: false },
      });
      expect(interrupt["id"]).toMatch(/^permission-[0-9a-f]{32}$/);
      expect(Date.parse(interrupt["expiresAt"] as string)).toBeGreaterThan(Date.now());
      expect(first.agent.pendingInterrupts.map((i) => i.id)).toEqual([interrupt["id"]]);
      expect(existsSync(path.join(kernel.workspace, "a.txt")), "the tool must not run before the answer").toBe(false);
      return {
        request,
        agent: first.agent,
        interruptId: interrupt["id"] as string,
        session: sessionEventOf(first.events),
      };
    }

    async function resume(parked: Awaited<ReturnType<typeof parkAtPermission>>, decision: "allow_once" | "deny") {
      const next = input("unused on resume", {
        threadId: parked.request.threadId,
        messages: parked.request.messages,
        resume: [{ interruptId: parked.interruptId, status: "resolved", payload: { decision } }],
      });
      const run = await runWithHttpAgent(gateway.url, next, { agent: parked.agent });
      expect(run.agent.pendingInterrupts, "the client cleared the answered interrupt").toEqual([]);
      return run;
    }

    it("a tool call needing permission: interrupt, then resume allow → the tool runs, TOOL_CALL_RESULT, text, success", async () => {
      const parked = await parkAtPermission(`${MARKER.permission}: please create a.txt`);
      const { events } = await resume(parked, "allow_once");
      expect(shape(events)).toEqual(["RUN_STARTED", "CUSTOM", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]);
      expect(outcomeOf(events)).toEqual({ type: "success" });
      expect(ofType(events, "TOOL_CALL_RESULT")[0]).toMatchObject({ toolCallId: SCRIPTED.toolCallId, role: "tool", messageId: `tool-result-${SCRIPTED.toolCallId}` });
      expect(joined(events, "TEXT_MESSAGE_CONTENT")).toBe(SCRIPTED.afterAllow);
      expect(sessionEventOf(events)).toMatchObject({ executionId: parked.session["executionId"], taskId: parked.session["taskId"] });
      expect(existsSync(path.join(kernel.workspace, "a.txt")), "the allowed bash command ran in the workspace").toBe(true);
      const call = llm.requests.findLast((r) => isAgentCall(r) && toolResults(r).some((m) => m.tool_call_id === SCRIPTED.toolCallId));
      expect(contentText(toolResults(call!)[0]!.content)).not.toMatch(/denied/i);
    });

    it("connect while a permission waits: its interrupt in RUN_FINISHED, and the answer to it runs the tool", async () => {
      await import("node:fs/promises").then((fs) => fs.rm(path.join(kernel.workspace, "a.txt"), { force: true }));
      const parked = await parkAtPermission(`${MARKER.permission}: write a.txt (connect)`);
      const events = await connect(parked.request);
      const outcome = outcomeOf(events);
      expect(outcome.type).toBe("interrupt");
      expect(outcome.interrupts!.map((i) => i["id"])).toEqual([parked.interruptId]);
      const done = await resume(parked, "allow_once");
      expect(outcomeOf(done.events)).toEqual({ type: "success" });
    });

    it("a tool call needing permission: resume deny → the tool does not run, the model answers without it, success", async () => {
      const target = path.join(kernel.workspace, "a.txt");
      await import("node:fs/promises").then((fs) => fs.rm(target, { force: true }));
      const parked = await parkAtPermission(`${MARKER.permission}: create a.txt, I will say no`);
      const { events } = await resume(parked, "deny");
      expect(outcomeOf(events)).toEqual({ type: "success" });
      const result = ofType(events, "TOOL_CALL_RESULT");
      expect(result).toHaveLength(1);
      expect(result[0]).toMatchObject({ toolCallId: SCRIPTED.toolCallId });
      expect(result[0]!["content"]).toMatch(/denied/i);
      expect(joined(events, "TEXT_MESSAGE_CONTENT")).toBe(SCRIPTED.afterDeny);
      expect(existsSync(target), "a denied command never runs").toBe(false);
    });

    it("cancel via the extension while the LLM stalls: 200 cancelled, RUN_ERROR CANCELLED, the LLM call is dropped", async () => {
      const request = input(`${MARKER.stall}: take your time`);
      const abandonedBefore = llm.abandoned;
      const live = await openSse(gateway.url, request);
      expect(live.status).toBe(200);
      const text = await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
      expect(text?.["delta"]).toBe(SCRIPTED.stallFirst);
      const { executionId } = sessionEventOf(live.events) as { executionId: string };
      const cancelUrl = new URL(`/extensions/iac-code/v1/executions/${encodeURIComponent(executionId)}/cancel`, gateway.url).href;
      const body = { threadId: request.threadId, rosInvocationId: "invocation-1" };
      const cancelled = await postRaw(cancelUrl, body);
      expect(cancelled.status).toBe(200);
      expect(cancelled.json).toEqual({ executionId, status: "cancelled" });

      const events = await live.rest();
      expectValidRun(events);
      expect(events.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "CANCELLED" });
      expect(joined(events, "TEXT_MESSAGE_CONTENT").startsWith(SCRIPTED.stallFirst)).toBe(true);
      expect(joined(events, "TEXT_MESSAGE_CONTENT")).not.toContain("never sent");
      expect(await waitFor(() => llm.abandoned > abandonedBefore, 10_000), "the kernel dropped the stalled LLM call").toBe(true);

      await waitFor(() => gateway.runs.activeRunCount === 0, 10_000);
      const again = await postRaw(cancelUrl, body);
      expect(again.json).toEqual({ executionId, status: "already_terminal" });
    });

    it("20 permission round trips answered the instant the interrupt arrives all succeed (no window before the kernel parks)", async () => {
      for (let i = 0; i < 20; i++) {
        const trip = await answerAtOnce(gateway.url, input(`${MARKER.permission}: create a.txt, round trip ${i}`), { decision: "allow_once" });
        expect(trip.problem, `round trip ${i}`).toBeUndefined();
        expectValidRun(trip.first);
        expectValidRun(trip.answer);
        expect(ofType(trip.answer, "TOOL_CALL_RESULT")[0]).toMatchObject({ toolCallId: SCRIPTED.toolCallId });
        expect(joined(trip.answer, "TEXT_MESSAGE_CONTENT")).toBe(SCRIPTED.afterAllow);
      }
    }, 240_000);

    it("an LLM refusal (HTTP 400, streaming and the non-streaming retry): the kernel fails the turn → RUN_ERROR A2A_EXECUTION_FAILED", async () => {
      const { events } = await runWithHttpAgent(gateway.url, input(`${MARKER.llmError}: this will fail`));
      expect(events.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "A2A_EXECUTION_FAILED" });
      // The kernel's FAILED status text (the provider error) is relayed as assistant text before the error.
      expect(joined(events, "TEXT_MESSAGE_CONTENT")).toMatch(/400/);
      const calls = llm.requests.filter((r) => isAgentCall(r) && lastUserText(r).includes(MARKER.llmError));
      expect(calls.map((r) => r.stream)).toEqual([true, false]);
      expect(kernel.child.exitCode, "the kernel survives a failed turn").toBeNull();
    });
  });
}
