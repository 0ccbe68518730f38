// The measuring client: undici `request`, counting SSE records as they arrive (a record ends with a
// blank line, so counting "\n\n" is exact for LF framing, with or without an `id:` line before `data:`,
// and cheap enough not to be the bottleneck).
import { randomUUID } from "node:crypto";
import { Agent, request } from "undici";
import { wallClockMs } from "./upstream.js";

export interface StreamResult {
  status: number;
  records: number;
  bytes: number;
  /** Request start → end of body. */
  ms: number;
  /** Request start → response headers. */
  headersMs: number;
  /** The last bytes of the body, to check how the stream ended. */
  tail: string;
}

export interface ReadOptions {
  agent: Agent;
  /** Sees each chunk's text with its arrival time (wall-clock ms); for latency runs only. */
  onText?: (text: string, receivedAt: number) => void;
}

const LF = 0x0a;

export async function readSse(url: string, body: string, options: ReadOptions): Promise<StreamResult> {
  const started = performance.now();
  const res = await request(url, {
    dispatcher: options.agent,
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body,
    bodyTimeout: 0,
    headersTimeout: 60_000,
  });
  const headersMs = performance.now() - started;
  let records = 0;
  let bytes = 0;
  let lastWasLf = false;
  let tail: Buffer = Buffer.alloc(0);
  const decoder = options.onText ? new TextDecoder() : undefined;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    const at = options.onText ? wallClockMs() : 0;
    bytes += chunk.length;
    if (lastWasLf && chunk[0] === LF) records++;
    for (let i = chunk.indexOf("\n\n"); i >= 0; i = chunk.indexOf("\n\n", i + 2)) records++;
    lastWasLf = chunk[chunk.length - 1] === LF;
    tail = chunk.length >= 2048 ? chunk.subarray(chunk.length - 2048) : Buffer.concat([tail, chunk]).subarray(-2048);
    if (decoder) options.onText!(decoder.decode(chunk, { stream: true }), at);
  }
  return { status: res.statusCode, records, bytes, ms: performance.now() - started, headersMs, tail: Buffer.from(tail).toString("utf8") };
}

/** A RunAgentInput for the gateway (and the Python reference) carrying the bench prompt. */
export function runAgentInput(threadId: string, cwd: string, prompt: string): string {
  return JSON.stringify({
    threadId,
    runId: randomUUID(),
    state: {},
    messages: [{ id: `message-${randomUUID()}`, role: "user", content: prompt }],
    tools: [],
    context: [],
    forwardedProps: { iacCode: { schemaVersion: 1, rosInvocationId: "bench-invocation", cwd, runMode: "normal" } },
  });
}

/** The JSON-RPC body a relay forwards: the same message the gateway would send. */
export function rpcBody(contextId: string, prompt: string): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id: randomUUID(),
    method: "SendStreamingMessage",
    params: {
      message: { messageId: `m-${randomUUID()}`, role: "ROLE_USER", contextId, parts: [{ text: prompt }], metadata: { iac_code: { cwd: "/srv/ws" } } },
      configuration: { acceptedOutputModes: ["text/plain"] },
    },
  });
}
