// Outsider checks with slow readers: a client whose socket is full (it stopped reading) and then reads on, or goes
// away. Reading on to the terminal event frees the thread at once; going away frees it soon and cancels the task.
import { randomUUID } from "node:crypto";
import { request, type IncomingMessage } from "node:http";
import type { RunAgentInput } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamProblems } from "./helpers/checks.js";
import { startDurableStack, type DurableStack } from "./helpers/durable.js";
import { frame, promptOf, slowTurn, waitFor } from "./helpers/e2e.js";
import { eventually, finishRun, postRun } from "./helpers/replicas.js";
import { SseSplitter, isTerminal, type WireEvent } from "./helpers/sse.js";

let stack: DurableStack;
const CHUNK = "x".repeat(4096);

beforeAll(async () => {
  stack = await startDurableStack({
    script: (turn) =>
      promptOf(turn).startsWith("late")
        ? [{ delayMs: 400 }, ...slowTurn(`session-${turn.contextId}`, 100, 50)]
        : promptOf(turn).startsWith("flood")
        ? [
            frame.working({ sessionId: `session-${turn.contextId}` }),
            ...Array.from({ length: 2000 }, (_, i) => frame.working({ text: `${i}${CHUNK}`, messageId: "m-flood" })),
            frame.status("TASK_STATE_COMPLETED"),
          ]
        : [frame.working({ sessionId: `session-${turn.contextId}` }), frame.working({ text: "hi", messageId: "m" }), frame.status("TASK_STATE_COMPLETED")],
  });
});

afterAll(async () => {
  await stack?.close();
});

/** POSTs `input` and hands back the response paused after its first bytes (the client stops reading). */
function postPaused(input: RunAgentInput): Promise<{ res: IncomingMessage; first: Buffer; abort(): void }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(stack.gateway.url), { method: "POST", headers: { "Content-Type": "application/json", Accept: "text/event-stream" } }, (res) => {
      expect(res.statusCode).toBe(200);
      res.once("data", (chunk: Buffer) => {
        res.pause();
        resolve({ res, first: chunk, abort: () => req.destroy() });
      });
    });
    req.on("error", reject);
    req.end(JSON.stringify(input));
  });
}

const nextTurn = (input: RunAgentInput) => ({ ...input, runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content: "hello" }] });

describe("slow readers", () => {
  it("a reader that stalls, then reads on to the terminal event: the next turn is admitted at once", async () => {
    const input = stack.input({ prompt: "flood me" });
    const paused = await postPaused(input);
    // The gateway is held back while the client does not read: the thread is still busy.
    const busy = await postRun(stack.gateway.url, nextTurn(input));
    expect(busy.status === 200 ? "admitted" : busy.json.error.code).toBe("THREAD_BUSY");
    const splitter = new SseSplitter();
    const events: WireEvent[] = [...splitter.push(paused.first)];
    await new Promise<void>((resolve) => {
      paused.res.on("data", (chunk: Buffer) => {
        events.push(...splitter.push(chunk));
        if (events.some(isTerminal)) {
          paused.res.pause();
          resolve();
        }
      });
      paused.res.resume();
    });
    expect(streamProblems(events)).toEqual([]);
    expect(events.at(-1)?.type).toBe("RUN_FINISHED");
    const next = await postRun(stack.gateway.url, nextTurn(input));
    expect(next.status === 200 ? "admitted" : next.json.error.code).toBe("admitted");
    await finishRun(next);
    paused.abort();
  });

  it("a reader that stalls and goes away: the thread is free again soon and its task is cancelled", async () => {
    const input = stack.input({ prompt: "flood me" });
    const cancelsBefore = stack.upstream.cancelled.length;
    const paused = await postPaused(input);
    paused.abort();
    let last: unknown;
    const admitted = await eventually(async () => {
      const next = await postRun(stack.gateway.url, nextTurn(input));
      last = next.json;
      if (next.status !== 200) return false;
      await finishRun(next);
      return true;
    }, 10_000);
    expect(admitted, JSON.stringify(last)).toBe(true);
    expect(await waitFor(() => stack.upstream.cancelled.length > cancelsBefore), "the abandoned task was cancelled upstream").toBe(true);
  });

  it("a client that goes away before the kernel's stream has begun: the task the kernel then names is cancelled", async () => {
    // The kernel takes 400 ms to answer: the client has RUN_STARTED and is gone long before the task is named.
    const input = stack.input({ prompt: "late start" });
    const cancelsBefore = stack.upstream.cancelled.length;
    const paused = await postPaused(input);
    paused.abort();
    expect(await waitFor(() => stack.upstream.cancelled.length > cancelsBefore), "the task named after the client left was cancelled upstream").toBe(true);
    const admitted = await eventually(async () => {
      const next = await postRun(stack.gateway.url, nextTurn(input));
      if (next.status !== 200) return false;
      await finishRun(next);
      return true;
    }, 10_000);
    expect(admitted).toBe(true);
  });
});
