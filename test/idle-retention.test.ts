// What a live run keeps while it waits on a silent kernel stream (a permission can take minutes): not the
// conversation its client sends with every run (CopilotKit sends the whole history). Memory measured after a forced
// GC in this process, where the gateway runs.
import http from "node:http";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { EventSchema } from "@ag-ui/core/schemas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RawA2AServer } from "../src/demo/index.js";
import { frame, readSse, startStack, type Stack } from "./helpers/e2e.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const RUNS = 16;
const WARM_RUNS = 4;
/** Each run's history (1 MB of text that only admission reads) and its prompt (50 KB). */
const HISTORY_MESSAGES = 20;
const MESSAGE_CHARS = 50_000;

let stack: Stack<RawA2AServer>;

beforeAll(async () => {
  // The kernel starts each turn's task and then says nothing more until the gateway lets go of the stream.
  stack = await startStack({
    // Not async: the stream stays open without a handler waiting on it, which would keep the request it was sent.
    raw: (ex, res) => {
      if (ex.method !== "SendStreamingMessage") return res.json(200, { jsonrpc: "2.0", id: ex.id, result: {} });
      const message = (ex.params as { message: { contextId: string } }).message;
      res.sseStart();
      res.sseFrame(frame.working({ taskId: `task-${String(ex.id)}`, contextId: message.contextId, sessionId: `session-${String(ex.id)}` }));
    },
  });
});

afterAll(async () => {
  await stack?.close();
});

interface OpenStream {
  request: http.ClientRequest;
  text: string;
}

/**
 * POSTs `body` with node:http (fetch would keep the body for as long as its response is read, in this same heap) and
 * resolves once the stream's text holds `marker`.
 */
function openUntil(body: string, marker: string): Promise<OpenStream> {
  const request = http.request(stack.gateway.url, { method: "POST", headers: { "Content-Type": "application/json" } });
  const opened = new Promise<OpenStream>((resolve, reject) => {
    const stream: OpenStream = { request, text: "" };
    request.on("error", reject);
    request.on("response", (response) => {
      if (response.statusCode !== 200) reject(new Error(`HTTP ${response.statusCode}`));
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        stream.text += chunk;
        if (stream.text.includes(marker)) resolve(stream);
      });
      response.on("error", () => undefined);
    });
  });
  // Sent from here, not from inside a listener's scope, which would keep the body with the listeners.
  request.end(body);
  return opened;
}

/** The JavaScript heap and the ArrayBuffers beside it (request bodies are read into Buffers). */
function liveBytes(): number {
  gc();
  gc();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

describe("a run waiting on a silent kernel", () => {
  it(`keeps none of the conversation its client sent with the run (${RUNS} runs, 1 MB of history each)`, async () => {
    const text = (n: number, role: string) => `${role} ${n}: ` + "x".repeat(MESSAGE_CHARS);
    const streams: OpenStream[] = [];
    // Measured from the fifth run on: the first runs also compile code paths and fill caches once.
    let before = 0;
    try {
      for (let r = 0; r < RUNS; r++) {
        if (r === WARM_RUNS) before = liveBytes();
        const history = Array.from({ length: HISTORY_MESSAGES }, (_, i) => ({
          id: `m-${r}-${i}`,
          role: i % 2 === 0 ? ("user" as const) : ("assistant" as const),
          content: text(i, i % 2 === 0 ? "user" : "assistant"),
        }));
        const input = stack.input({ prompt: text(HISTORY_MESSAGES, "prompt") });
        // The session event comes once the kernel named the task: the run is admitted and its kernel request sent.
        streams.push(await openUntil(JSON.stringify({ ...input, messages: [...history, ...input.messages] }), "iac-code.session.v1"));
      }
      for (const stream of streams) for (const event of readSse(stream.text).events) expect(() => EventSchema.parse(event)).not.toThrow();
      // The test kernel's own record of what it was sent is not the gateway's.
      stack.upstream.requests.length = 0;
      const perRun = (liveBytes() - before) / (RUNS - WARM_RUNS);
      // Kept whole, each run's history is 1 MB of one-byte strings. What is kept now is about 280 KB: the run's prompt
      // (50 KB, in the message it sends), this test kernel's copy of the request it was sent (50 KB), socket buffers,
      // and code the runs still compile.
      expect(perRun, "bytes kept per waiting run").toBeLessThan(512 * 1024);
    } finally {
      for (const stream of streams) stream.request.destroy();
    }
  });
});
