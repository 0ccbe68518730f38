// Outsider checks of the protobuf path (Accept: application/vnd.ag-ui.event+proto): the same runs as over SSE carry
// the same events once decoded — interrupts with every field, AG-UI 1.0's cancelled outcome, RUN_ERROR codes.
import { randomUUID } from "node:crypto";
import type { RunAgentInput } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamProblems } from "./helpers/checks.js";
import { allowOnce, demoWithSlowAndFailing, interruptsOf, postCancel, resumeInput, startDurableStack, type DurableStack } from "./helpers/durable.js";
import { sessionEventOf } from "./helpers/e2e.js";
import { protoEvents } from "./helpers/hostile.js";
import { finishRun, postRun } from "./helpers/replicas.js";
import type { WireEvent } from "./helpers/sse.js";

let stack: DurableStack;

beforeAll(async () => {
  stack = await startDurableStack({ script: demoWithSlowAndFailing() });
});

afterAll(async () => {
  await stack?.close();
});

/** POSTs for protobuf and decodes every frame as it comes; `onEvent` may act mid-stream. */
async function postProto(body: unknown, onEvent?: (event: WireEvent) => Promise<void> | void): Promise<WireEvent[]> {
  const response = await fetch(stack.gateway.url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/vnd.ag-ui.event+proto" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("application/vnd.ag-ui.event+proto");
  const reader = response.body!.getReader();
  let buffer = Buffer.alloc(0);
  const events: WireEvent[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer = Buffer.concat([buffer, Buffer.from(value)]);
    let at = 0;
    while (at + 4 <= buffer.length && at + 4 + buffer.readUInt32BE(at) <= buffer.length) {
      const length = buffer.readUInt32BE(at);
      const [event] = protoEvents(buffer.subarray(at, at + 4 + length)) as unknown as WireEvent[];
      events.push(event!);
      await onEvent?.(event!);
      at += 4 + length;
    }
    buffer = buffer.subarray(at);
  }
  expect(buffer.length, "no partial frame at the end").toBe(0);
  return events;
}

/** Every JSON path of an event with the type of its value (values differ from run to run, the shape may not). */
function shapeOf(value: unknown, at = "$", into: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((item, i) => shapeOf(item, `${at}[${i}]`, into));
  else if (value !== null && typeof value === "object") for (const [k, v] of Object.entries(value)) shapeOf(v, `${at}.${k}`, into);
  else into.push(`${at}: ${value === null ? "null" : typeof value}`);
  return into.sort();
}

describe("protobuf framing carries what SSE carries", () => {
  it("an interrupt: RUN_FINISHED outcome interrupt with the same interrupt fields", async () => {
    const sseInput = stack.input({ prompt: "deploy the stack" });
    const sse = await finishRun(await postRun(stack.gateway.url, sseInput));
    const protoInput = stack.input({ prompt: "deploy the stack" });
    const proto = await postProto(protoInput);
    expect(streamProblems(proto)).toEqual([]);
    expect(proto.map((e) => e.type)).toEqual(sse.map((e) => e.type));
    expect(shapeOf(proto.at(-1))).toEqual(shapeOf(sse.at(-1)));
    const [interrupt] = interruptsOf(proto);
    const answered = await postProto(resumeInput(protoInput, [allowOnce(interrupt!.id)]));
    expect(streamProblems(answered)).toEqual([]);
    expect(answered.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });

  it("the session CUSTOM event's value, and RUN_STARTED, decode as over SSE", async () => {
    const sse = await finishRun(await postRun(stack.gateway.url, stack.input()));
    const proto = await postProto(stack.input());
    expect(streamProblems(proto)).toEqual([]);
    expect(shapeOf(proto.find((e) => e.type === "CUSTOM"))).toEqual(shapeOf(sse.find((e) => e.type === "CUSTOM")));
    expect(shapeOf(proto[0])).toEqual(shapeOf(sse[0]));
  });

  it("RUN_ERROR keeps its code", async () => {
    const proto = await postProto(stack.input({ prompt: "fail now" }));
    expect(streamProblems(proto)).toEqual([]);
    expect(proto.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "A2A_EXECUTION_FAILED" });
  });

  it("AG-UI 1.0: a cancel mid-run ends RUN_FINISHED with the cancelled outcome, and the next turn is admitted", async () => {
    const input: RunAgentInput = { ...stack.input({ prompt: "slow count" }), protocolVersion: "1.0" } as RunAgentInput;
    let cancelled = false;
    const proto = await postProto(input, async (event) => {
      if (!cancelled && event.type === "CUSTOM" && event["name"] === "iac-code.session.v1") {
        cancelled = true;
        const executionId = sessionEventOf([event])["executionId"] as string;
        expect((await postCancel(stack.gateway.url, executionId, { threadId: input.threadId, rosInvocationId: "invocation-1" })).json).toMatchObject({ status: "cancelled" });
      }
    });
    expect(streamProblems(proto)).toEqual([]);
    expect(proto.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
    // Admitted (a stream, not a refusal): this script's "fail" turn keeps the thread's session and fails on purpose.
    const next = await postProto({ ...input, runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content: "fail again" }] });
    expect(streamProblems(next)).toEqual([]);
    expect(next.at(-1), JSON.stringify(next.at(-1))).toMatchObject({ type: "RUN_ERROR", code: "A2A_EXECUTION_FAILED" });
  });
});
