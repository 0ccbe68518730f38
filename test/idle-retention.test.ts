// What a live run keeps while it waits on a silent kernel stream (a permission can take minutes): not the
// conversation its client sends with every run (CopilotKit sends the whole history), not its prompt once sent.
// Memory measured after a forced GC in this process, where the gateway runs.
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
/** Each run's history: 1 MB of text that only admission reads. */
const HISTORY_MESSAGES = 20;
const MESSAGE_CHARS = 50_000;
/** Each run's prompt: 512 KB, sent to the kernel once. */
const PROMPT_CHARS = 512 * 1024;

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
/** A run sent with its history and prompt, open once the kernel named its task (its request is sent by then). */
async function openRun(r: number): Promise<OpenStream> {
  const text = (n: number, role: string, chars = MESSAGE_CHARS) => `${role} ${n}: ` + "x".repeat(chars);
  const history = Array.from({ length: HISTORY_MESSAGES }, (_, i) => ({
    id: `m-${r}-${i}`,
    role: i % 2 === 0 ? ("user" as const) : ("assistant" as const),
    content: text(i, i % 2 === 0 ? "user" : "assistant"),
  }));
  const input = stack.input({ prompt: text(HISTORY_MESSAGES, "prompt", PROMPT_CHARS) });
  return openUntil(JSON.stringify({ ...input, messages: [...history, ...input.messages] }), "iac-code.session.v1");
}

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
  it(`keeps none of the conversation its client sent with the run, nor its prompt once sent (${RUNS} runs)`, async () => {
    const streams: OpenStream[] = [];
    try {
      // Measured from the fifth run on: the first runs also compile code paths and fill caches once.
      for (let r = 0; r < WARM_RUNS; r++) streams.push(await openRun(r));
      // The test kernel's own record of what it was sent is not the gateway's.
      stack.upstream.requests.length = 0;
      const before = liveBytes();
      for (let r = WARM_RUNS; r < RUNS; r++) streams.push(await openRun(r));
      for (const stream of streams) for (const event of readSse(stream.text).events) expect(() => EventSchema.parse(event)).not.toThrow();
      stack.upstream.requests.length = 0;
      const perRun = (liveBytes() - before) / (RUNS - WARM_RUNS);
      // Kept, each run's history would be 1 MB of one-byte strings and its prompt another 512 KB. What is kept is about
      // 150 KB a run: socket buffers, the run's own state, and code the runs still compile.
      expect(perRun, "bytes kept per waiting run").toBeLessThan(320 * 1024);
    } finally {
      for (const stream of streams) stream.request.destroy();
    }
  });
});
