// Outsider checks of the run layer's promise: a client that read a run's terminal event may post its next
// request at once and is never told THREAD_BUSY by the run that just ended (one replica, file store).
import { randomUUID } from "node:crypto";
import type { RunAgentInput } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamProblems } from "./helpers/checks.js";
import { allowOnce, demoWithSlowAndFailing, interruptsOf, postCancel, resumeInput, startDurableStack, type DurableStack } from "./helpers/durable.js";
import { sessionEventOf } from "./helpers/e2e.js";
import { eventually, finishRun, postRun } from "./helpers/replicas.js";
import { isTerminal, type WireEvent } from "./helpers/sse.js";

let stack: DurableStack;

beforeAll(async () => {
  stack = await startDurableStack({ script: demoWithSlowAndFailing() });
});

afterAll(async () => {
  await stack?.close();
});

/** Reads `posted` to its terminal event only (the socket stays open), checks the stream so far. */
async function toTerminal(posted: Awaited<ReturnType<typeof postRun>>): Promise<WireEvent[]> {
  expect(posted.status, JSON.stringify(posted.json)).toBe(200);
  const terminal = await posted.live!.until(isTerminal);
  expect(terminal, "a terminal event").toBeDefined();
  expect(streamProblems(posted.live!.events)).toEqual([]);
  return posted.live!.events;
}

/** The next turn on `input`'s thread, posted the moment the caller has read a terminal event: admitted. */
async function nextTurnIsAdmitted(input: RunAgentInput, overrides: Partial<RunAgentInput> = {}): Promise<WireEvent[]> {
  const next = await postRun(stack.gateway.url, { ...input, runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content: "hello again" }], ...overrides });
  expect(next.status === 200 ? "admitted" : next.json?.error?.code).toBe("admitted");
  const events = await finishRun(next);
  expect(events.at(-1), JSON.stringify(events.at(-1))).toMatchObject({ type: "RUN_FINISHED" });
  return events;
}

describe("the next request right after a terminal event", () => {
  it("after RUN_ERROR (a failed task)", async () => {
    for (let round = 0; round < 10; round++) {
      const input = stack.input({ prompt: "fail now" });
      const events = await toTerminal(await postRun(stack.gateway.url, input));
      expect(events.at(-1)?.type).toBe("RUN_ERROR");
      await nextTurnIsAdmitted(input);
    }
  });

  it.each([
    { client: "AG-UI 0.x", protocolVersion: undefined, terminal: { type: "RUN_ERROR", code: "CANCELLED" } },
    { client: "AG-UI 1.0", protocolVersion: "1.0", terminal: { type: "RUN_FINISHED", outcome: { type: "cancelled" } } },
  ])("after a cancel through the cancel route, mid-run ($client)", async ({ protocolVersion, terminal }) => {
    for (let round = 0; round < 5; round++) {
      const input = { ...stack.input({ prompt: "slow count" }), ...(protocolVersion !== undefined && { protocolVersion }) };
      const posted = await postRun(stack.gateway.url, input);
      expect(posted.status).toBe(200);
      await posted.live!.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
      const executionId = sessionEventOf(posted.live!.events)["executionId"] as string;
      const cancelled = await postCancel(stack.gateway.url, executionId, { threadId: input.threadId, rosInvocationId: "invocation-1" });
      expect(cancelled.json).toMatchObject({ status: "cancelled" });
      const events = await toTerminal(posted);
      expect(events.at(-1)).toMatchObject(terminal);
      await nextTurnIsAdmitted(input);
    }
  });

  it("a cancel racing the run's own end: the next turn after the terminal event is admitted", async () => {
    for (let round = 0; round < 10; round++) {
      const input = stack.input({ prompt: "Create a VPC template" });
      const posted = await postRun(stack.gateway.url, input);
      expect(posted.status).toBe(200);
      await posted.live!.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
      const executionId = sessionEventOf(posted.live!.events)["executionId"] as string;
      const [cancelled] = await Promise.all([
        postCancel(stack.gateway.url, executionId, { threadId: input.threadId, rosInvocationId: "invocation-1" }),
        toTerminal(posted),
      ]);
      expect(["cancelled", "already_terminal"]).toContain(cancelled.json.status);
      await nextTurnIsAdmitted(input);
    }
  });

  it("a client that disconnects mid-run: the thread is free again soon, and the kernel task is cancelled", async () => {
    const input = stack.input({ prompt: "slow count" });
    const posted = await postRun(stack.gateway.url, input);
    expect(posted.status).toBe(200);
    await posted.live!.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    posted.live!.abort();
    let last: unknown;
    const admitted = await eventually(async () => {
      const next = await postRun(stack.gateway.url, { ...input, runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content: "hello" }] });
      last = next.json;
      if (next.status !== 200) return false;
      await finishRun(next);
      return true;
    }, 5_000);
    expect(admitted, JSON.stringify(last)).toBe(true);
  });

  it("interrupt → answer → immediate next turn, 10 rounds", async () => {
    for (let round = 0; round < 10; round++) {
      const input = stack.input({ prompt: "deploy the stack" });
      const [interrupt] = interruptsOf(await toTerminal(await postRun(stack.gateway.url, input)));
      const answer = resumeInput(input, [allowOnce(interrupt!.id)]);
      const answered = await toTerminal(await postRun(stack.gateway.url, answer));
      expect(answered.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
      await nextTurnIsAdmitted(input);
    }
  });

  it("pipeline: the candidate selection answered, then the next turn at once, 5 rounds", async () => {
    for (let round = 0; round < 5; round++) {
      const input = stack.input({ prompt: "Create a vswitch in an existing VPC", iacCode: { runMode: "pipeline", pipelineName: "selling" } });
      const [interrupt] = interruptsOf(await toTerminal(await postRun(stack.gateway.url, input)));
      const answered = await toTerminal(
        await postRun(stack.gateway.url, resumeInput(input, [{ interruptId: interrupt!.id, status: "resolved", payload: { selectedId: "0" } }])),
      );
      expect(answered.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
      await nextTurnIsAdmitted(input);
    }
  });

  it("AG-UI 1.0: a re-shown interrupt answered at once under the re-show's run id, then the next turn", async () => {
    for (let round = 0; round < 5; round++) {
      const input = { ...stack.input({ prompt: "deploy the stack" }), protocolVersion: "1.0" };
      const [interrupt] = interruptsOf(await toTerminal(await postRun(stack.gateway.url, input)));
      const reshowRunId = randomUUID();
      const reshown = interruptsOf(
        await toTerminal(await postRun(stack.gateway.url, { ...input, runId: reshowRunId, messages: [...input.messages, { id: randomUUID(), role: "user", content: "where was I" }] })),
      );
      expect(reshown.map((i) => i.id)).toEqual([interrupt!.id]);
      // The pinned-run-id client (CopilotKit) answers under the run that ended at the interrupt: the re-show.
      const answered = await toTerminal(await postRun(stack.gateway.url, resumeInput(input, [allowOnce(interrupt!.id)], { runId: reshowRunId })));
      expect(answered.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
      await nextTurnIsAdmitted(input);
    }
  });

  it("two answers to one interrupt at once: one applies, the other is refused, and the thread is free after", async () => {
    for (let round = 0; round < 5; round++) {
      const input = stack.input({ prompt: "deploy the stack" });
      const [interrupt] = interruptsOf(await toTerminal(await postRun(stack.gateway.url, input)));
      const [a, b] = await Promise.all([
        postRun(stack.gateway.url, resumeInput(input, [allowOnce(interrupt!.id)])),
        postRun(stack.gateway.url, resumeInput(input, [allowOnce(interrupt!.id)])),
      ]);
      const outcomes: string[] = [];
      for (const p of [a, b]) {
        if (p.status !== 200) {
          outcomes.push(`refused:${p.json.error.code}`);
          continue;
        }
        const events = await toTerminal(p);
        const last = events.at(-1)!;
        outcomes.push(last.type === "RUN_FINISHED" ? `finished:${(last["outcome"] as { type: string }).type}` : `error:${String(last["code"])}`);
      }
      expect(outcomes.filter((o) => o === "finished:success"), outcomes.join(", ")).toHaveLength(1);
      await nextTurnIsAdmitted(input);
    }
  });

  it("protobuf: interrupt → answer → next turn, each read as length-prefixed protobuf", async () => {
    const { protoEvents } = await import("./helpers/hostile.js");
    const post = async (body: unknown) => {
      const response = await fetch(stack.gateway.url, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/vnd.ag-ui.event+proto" },
        body: JSON.stringify(body),
      });
      if (response.status !== 200) return { status: response.status, text: await response.text(), events: [] as WireEvent[] };
      return { status: 200, text: "", events: protoEvents(Buffer.from(await response.arrayBuffer())) as unknown as WireEvent[] };
    };
    const input = stack.input({ prompt: "deploy the stack" });
    const first = await post(input);
    expect(first.status, first.text).toBe(200);
    const [interrupt] = interruptsOf(first.events);
    expect(interrupt?.id).toBeTruthy();
    const second = await post(resumeInput(input, [allowOnce(interrupt!.id)]));
    expect(second.status, second.text).toBe(200);
    expect(second.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    const third = await post({ ...input, runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content: "again" }] });
    expect(third.status, third.text).toBe(200);
    expect(third.events.at(-1)?.type).toBe("RUN_FINISHED");
  });
});
