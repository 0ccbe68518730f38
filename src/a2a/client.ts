// JSON-RPC 2.0 client for the A2A 1.0 kernel on loopback (a2a-upstream §1–§5, reference-adapter §4.1).
// undici `request` on one keep-alive Agent, SSE through eventsource-parser; every failure leaves as
// one of three kinds: A2A_UNAVAILABLE (transport), A2AJsonRpcError (the kernel said no),
// A2A_PROTOCOL_ERROR (the kernel said something we cannot read).
import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { Observable, type Subscriber } from "rxjs";
import { Agent, request, type Dispatcher } from "undici";
import { RunError, type A2AMessage, type A2AStreamResponse, type A2ATask } from "../../operators/types.js";
import { decodeStreamResult, decodeTask, invalidFrame, isPlainObject } from "./frames.js";
import { UPSTREAM_LIMITS, nestsDeeperThan } from "./limits.js";

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);
/** Bound on one SSE record and on one JSON reply, so a broken kernel cannot grow our memory without limit. */
const MAX_RECORD_CHARS = 16 * 1024 * 1024;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const ACCEPTED_OUTPUT_MODES = ["text/plain"];

/** Parse and check the A2A base URL; the result always ends in exactly one "/". */
export function assertLoopbackA2AUrl(url: string): URL {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:") || !LOOPBACK_HOSTS.has(parsed.hostname)) {
    throw new Error(`The AG-UI gateway may connect only to a loopback A2A HTTP(S) URL: ${url}`);
  }
  parsed.pathname = parsed.pathname.replace(/\/+$/, "") + "/";
  return parsed;
}

/**
 * Backpressure hook: the client awaits ready() after pushing the frames of each network chunk, before
 * reading the next one. A slow SSE reader downstream returns a promise here, so the upstream socket is
 * not read while the client is behind.
 */
export interface FlowGate {
  ready(): Promise<void> | void;
}

/** A JSON-RPC error object from the kernel (e.g. -32001 task not found, -32602 invalid params). */
export class A2AJsonRpcError extends Error {
  override readonly name = "A2AJsonRpcError";
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export interface A2AClientOptions {
  url: string;
  token?: string;
  /** Time to wait for response headers (and between body chunks of non-streaming replies). Default 30 s. */
  requestTimeoutMs?: number;
  /** Longest silence tolerated on a stream, keep-alive comments included. Default 0 = no limit. */
  idleTimeoutMs?: number;
  /**
   * Speak HTTP/2 without TLS (h2c, prior knowledge) to an http:// kernel: runs share a few connections
   * instead of holding a socket each, so open streams are not capped by the fd limit. Refused for
   * https://, where ALPN could settle on HTTP/1.1 and the multiplexed POSTs would be pipelined instead.
   */
  http2?: boolean;
}

/** Streams per HTTP/2 connection before the pool opens another one. */
const H2_STREAMS_PER_CONNECTION = 1000;
// undici's connector reads `useH2c` (h2 without TLS) but its typings do not list it yet.
const H2C_CONNECT = { useH2c: true } as Agent.Options["connect"];

export interface StreamOptions {
  flow?: FlowGate;
}

export function a2aUnavailable(): RunError {
  return new RunError("A2A_UNAVAILABLE", "The local A2A execution service is unavailable.");
}

export class A2AClient {
  private readonly base: URL;
  private readonly agent: Agent;
  /** h2c only: lets undici multiplex our POSTs (it never retries them, so nothing is replayed). */
  private readonly multiplex: boolean;
  private readonly baseHeaders: Record<string, string>;
  private readonly requestTimeoutMs: number;
  private readonly idleTimeoutMs: number;

  constructor(options: A2AClientOptions) {
    this.base = assertLoopbackA2AUrl(options.url);
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 0;
    this.multiplex = options.http2 === true;
    if (this.multiplex && this.base.protocol !== "http:") throw new Error(`HTTP/2 to the A2A endpoint is h2c only (an http:// URL): ${options.url}`);
    this.agent = this.multiplex
      ? new Agent({ allowH2: true, connect: H2C_CONNECT, pipelining: H2_STREAMS_PER_CONNECTION })
      : new Agent();
    // Without A2A-Version the SDK assumes 0.3 and refuses every 1.0 method with -32009.
    this.baseHeaders = { "A2A-Version": "1.0" };
    if (options.token) this.baseHeaders.Authorization = `Bearer ${options.token}`;
  }

  /** Cold: each subscription POSTs SendStreamingMessage; unsubscribing aborts the request and closes its socket. */
  sendStreamingMessage(message: A2AMessage, opts?: StreamOptions): Observable<A2AStreamResponse> {
    return this.stream("SendStreamingMessage", messageParams(message), opts?.flow);
  }

  /** Only for active tasks; an idle or finished task answers -32001 as a plain JSON error (A2AJsonRpcError). */
  subscribeToTask(taskId: string, opts?: StreamOptions): Observable<A2AStreamResponse> {
    return this.stream("SubscribeToTask", { id: taskId }, opts?.flow);
  }

  /**
   * Returns once the task reaches its next interrupted or terminal state, which can take as long as
   * the turn does: pass a `timeoutMs` larger than the default request timeout when that matters.
   */
  async sendMessage(message: A2AMessage, opts?: { timeoutMs?: number }): Promise<A2AStreamResponse> {
    const result = await this.call("SendMessage", messageParams(message), opts?.timeoutMs);
    const decoded = decodeStreamResult(result);
    if (!("task" in decoded) && !("message" in decoded)) throw invalidFrame();
    return decoded;
  }

  async getTask(taskId: string, historyLength = 100): Promise<A2ATask> {
    return decodeTask(await this.call("GetTask", { id: taskId, historyLength }));
  }

  async cancelTask(taskId: string): Promise<A2ATask> {
    return decodeTask(await this.call("CancelTask", { id: taskId }));
  }

  /** iac-code pipeline recovery (a2a-upstream §5.5); 404 = nothing known for that task. */
  async pipelineState(taskId: string, afterSequence: number): Promise<{ snapshot?: unknown; events?: unknown[] } | null> {
    const url = new URL("iac-code/pipeline/state", this.base);
    url.searchParams.set("taskId", taskId);
    url.searchParams.set("afterSequence", String(afterSequence));
    const body = await this.rest(url, "GET", undefined, [404]);
    if (body.status === 404) return null;
    const state = body.json;
    if (!isPlainObject(state) || (state.events !== undefined && !Array.isArray(state.events))) throw invalidFrame();
    return state as { snapshot?: unknown; events?: unknown[] };
  }

  /** iac-code explicit session restore (newer kernels); 404 = the session cannot be restored. */
  /**
   * "unsupported" when the kernel has no such route (iac-code 0.13 and plain A2A servers): the session
   * then lives as long as the kernel process, and GetTask is the only check left.
   */
  async ensureSessionRestored(body: { cwd: string; sessionId: string; taskId?: string }): Promise<boolean | "unsupported"> {
    const url = new URL("iac-code/session/ensure-restored", this.base);
    const reply = await this.rest(url, "POST", JSON.stringify(body), [404, 409]);
    if (reply.status === 404) return isPlainObject(reply.json) && reply.json.status === "not_found" ? false : "unsupported";
    if (reply.status === 409) {
      const error = isPlainObject(reply.json) ? reply.json.error : undefined;
      if (isPlainObject(error) && error.code === "SESSION_BACKUP_NOT_READY" && error.retryable === true) {
        throw new RunError("SESSION_BACKUP_NOT_READY", "Session backup is still synchronizing. Retry after 3 seconds.");
      }
      throw a2aUnavailable();
    }
    const status = isPlainObject(reply.json) ? reply.json.status : undefined;
    if (status !== "current" && status !== "restored") throw invalidFrame();
    return true;
  }

  /** Destroys the connection pool; calls still in flight fail with A2A_UNAVAILABLE. */
  async close(): Promise<void> {
    await this.agent.destroy();
  }

  private stream(method: string, params: unknown, flow: FlowGate | undefined): Observable<A2AStreamResponse> {
    return new Observable<A2AStreamResponse>((subscriber) => {
      const abort = new AbortController();
      this.pump(method, params, flow, subscriber, abort);
      return () => abort.abort();
    });
  }

  /** Chained, not awaited: a stream that sits idle for hours holds no suspended async frame. */
  private pump(
    method: string,
    params: unknown,
    flow: FlowGate | undefined,
    subscriber: Subscriber<A2AStreamResponse>,
    abort: AbortController,
  ): void {
    const idle = new IdleWatch(this.idleTimeoutMs, () => abort.abort());
    this.post(method, params, "text/event-stream", {
      signal: abort.signal,
      // Silence on a stream is normal (a permission wait can last minutes); idleTimeoutMs governs it instead.
      bodyTimeout: 0,
    })
      .then(async (res) => {
        if (!isSuccess(res.statusCode)) {
          res.body.dump().catch(() => undefined);
          throw a2aUnavailable();
        }
        if (!isEventStream(res.headers["content-type"])) {
          // The kernel refused before the first event: a plain JSON-RPC error body instead of SSE.
          throw jsonRpcErrorOf(parseJson(await readText(res.body)));
        }
        idle.start();
        return readFrames(res.body, subscriber, flow, idle);
      })
      .catch((error: unknown) => {
        if (!subscriber.closed) subscriber.error(idle.fired ? a2aUnavailable() : classify(error));
      })
      .finally(() => {
        idle.stop();
        // Ends the request on every early exit (bad frame, unsubscribe, idle) so the socket is not left half-read.
        abort.abort();
      });
  }

  private async call(method: string, params: unknown, timeoutMs?: number): Promise<unknown> {
    try {
      const res = await this.post(method, params, "application/json", {
        bodyTimeout: timeoutMs ?? this.requestTimeoutMs,
        headersTimeout: timeoutMs ?? this.requestTimeoutMs,
      });
      if (!isSuccess(res.statusCode)) {
        res.body.dump().catch(() => undefined);
        throw a2aUnavailable();
      }
      const envelope = parseJson(await readText(res.body));
      if (!isPlainObject(envelope)) throw invalidFrame();
      if (envelope.error !== undefined) throw jsonRpcErrorOf(envelope);
      if (envelope.result === undefined) throw invalidFrame();
      return envelope.result;
    } catch (error) {
      throw classify(error);
    }
  }

  private post(
    method: string,
    params: unknown,
    accept: string,
    timing: { signal?: AbortSignal; bodyTimeout: number; headersTimeout?: number },
  ): Promise<Dispatcher.ResponseData> {
    return request(this.base, {
      dispatcher: this.agent,
      method: "POST",
      idempotent: this.multiplex,
      headers: { ...this.baseHeaders, "Content-Type": "application/json", Accept: accept },
      body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
      signal: timing.signal,
      headersTimeout: timing.headersTimeout ?? this.requestTimeoutMs,
      bodyTimeout: timing.bodyTimeout,
    });
  }

  /** Plain-JSON iac-code extension routes; statuses in `expected` are returned to the caller instead of failing. */
  private async rest(
    url: URL,
    method: "GET" | "POST",
    body: string | undefined,
    expected: number[],
  ): Promise<{ status: number; json: unknown }> {
    try {
      const headers: Record<string, string> = { ...this.baseHeaders, Accept: "application/json" };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      const res = await request(url, {
        dispatcher: this.agent,
        method,
        headers,
        body,
        headersTimeout: this.requestTimeoutMs,
        bodyTimeout: this.requestTimeoutMs,
      });
      if (!isSuccess(res.statusCode) && !expected.includes(res.statusCode)) {
        res.body.dump().catch(() => undefined);
        throw a2aUnavailable();
      }
      const text = await readText(res.body);
      // Error statuses may come with an empty or non-JSON body; only a success body must parse.
      if (!isSuccess(res.statusCode)) return { status: res.statusCode, json: tryParseJson(text) };
      return { status: res.statusCode, json: parseJson(text) };
    } catch (error) {
      throw classify(error);
    }
  }
}

/**
 * SSE records → StreamResponses. eventsource-parser handles CRLF, comments and records split across
 * chunks; this collects the frames of one chunk and remembers the first bad one, after which the
 * stream is over (frames decoded before it are still delivered, in order).
 */
class SseFrameDecoder {
  private frames: A2AStreamResponse[] = [];
  failure: Error | undefined;
  private readonly parser = createParser({
    maxBufferSize: MAX_RECORD_CHARS,
    onEvent: (event) => this.accept(event),
    onError: (error) => {
      if (error.type === "max-buffer-size-exceeded") this.failure ??= invalidFrame();
    },
  });

  feed(text: string): void {
    if (this.failure || text === "") return;
    this.parser.feed(text);
  }

  take(): A2AStreamResponse[] {
    const frames = this.frames;
    this.frames = [];
    return frames;
  }

  private accept(event: EventSourceMessage): void {
    if (this.failure) return;
    try {
      const envelope = parseJson(event.data);
      if (event.event === "error") throw jsonRpcErrorOf(envelope);
      if (!isPlainObject(envelope)) throw invalidFrame();
      if (envelope.error !== undefined) throw jsonRpcErrorOf(envelope);
      if (envelope.result === undefined) throw invalidFrame();
      this.frames.push(decodeStreamResult(envelope.result));
    } catch (error) {
      this.failure = error instanceof Error ? error : invalidFrame();
    }
  }
}

/**
 * Reads an SSE body to its end, delivering frames chunk by chunk; resolves early when the consumer is gone.
 * Event-driven rather than `for await`: an idle stream then holds no suspended iterator, generator or
 * pending promise, only its listeners. While the flow gate is closed the body is paused, so the socket is
 * not read and backpressure reaches the kernel.
 */
function readFrames(body: Readable, subscriber: Subscriber<A2AStreamResponse>, flow: FlowGate | undefined, idle: IdleWatch): Promise<void> {
  return new Promise((resolve, reject) => {
    const frames = new SseFrameDecoder();
    const decoder = new StringDecoder("utf8");
    let first = true;
    const settle = (error?: unknown) => {
      body.off("data", onData);
      body.off("end", onEnd);
      body.off("error", settle);
      if (error === undefined) resolve();
      else reject(error);
    };
    const deliver = (text: string): boolean => {
      // The SSE decoding rules drop one leading byte-order mark (eventsource-parser leaves it to us).
      if (first && text !== "") {
        first = false;
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      }
      frames.feed(text);
      return emitAll(frames, subscriber);
    };
    const onData = (chunk: Buffer) => {
      idle.touch();
      try {
        if (!deliver(decoder.write(chunk))) return settle();
      } catch (error) {
        return settle(error);
      }
      const ready = flow?.ready();
      if (!ready) return;
      body.pause();
      idle.pause();
      const reopen = () => {
        if (subscriber.closed) return settle();
        idle.resume();
        body.resume();
      };
      void ready.then(reopen, reopen);
    };
    const onEnd = () => {
      try {
        if (deliver(decoder.end())) subscriber.complete();
        settle();
      } catch (error) {
        settle(error);
      }
    };
    body.on("data", onData);
    body.on("end", onEnd);
    body.on("error", settle);
  });
}

/** Delivers the decoded frames; false when the stream must stop (consumer gone, or a bad frame). */
function emitAll(frames: SseFrameDecoder, subscriber: Subscriber<A2AStreamResponse>): boolean {
  for (const frame of frames.take()) {
    if (subscriber.closed) return false;
    subscriber.next(frame);
  }
  if (frames.failure) throw frames.failure;
  return !subscriber.closed;
}

/** Stream silence timer. Paused while we wait on the consumer: that silence is ours, not the kernel's. */
class IdleWatch {
  fired = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly timeoutMs: number,
    private readonly onIdle: () => void,
  ) {}

  start(): void {
    if (this.timeoutMs <= 0) return;
    this.timer = setTimeout(() => {
      this.fired = true;
      this.onIdle();
    }, this.timeoutMs);
  }

  touch(): void {
    this.timer?.refresh();
  }

  // A cleared Node timer cannot be re-armed with refresh(), hence stop + start.
  pause(): void {
    this.stop();
  }

  resume(): void {
    this.start();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

function messageParams(message: A2AMessage): unknown {
  return { message, configuration: { acceptedOutputModes: ACCEPTED_OUTPUT_MODES } };
}

function jsonRpcErrorOf(envelope: unknown): Error {
  const error = isPlainObject(envelope) ? envelope.error : undefined;
  if (!isPlainObject(error) || typeof error.code !== "number" || !Number.isInteger(error.code)) return invalidFrame();
  const message = typeof error.message === "string" ? error.message : "";
  return new A2AJsonRpcError(error.code, message, error.data);
}

/** Our own errors pass through; anything else (refused, reset, timeout, aborted socket) is the transport. */
function classify(error: unknown): Error {
  if (error instanceof RunError || error instanceof A2AJsonRpcError) return error;
  return a2aUnavailable();
}

async function readText(body: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > MAX_RECORD_CHARS) throw invalidFrame();
    chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }
  return Buffer.concat(chunks, size).toString("utf8");
}

/** Every JSON document from the kernel comes through here, so its nesting is bounded before anything walks it. */
function parseJson(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidFrame();
  }
  if (nestsDeeperThan(value, UPSTREAM_LIMITS.maxDepth)) throw invalidFrame();
  return value;
}

function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

function isEventStream(contentType: string | string[] | undefined): boolean {
  const value = Array.isArray(contentType) ? contentType[0] : contentType;
  return value !== undefined && value.toLowerCase().startsWith("text/event-stream");
}
