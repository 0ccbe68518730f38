// JSON-RPC 2.0 client for the A2A 1.0 kernel on loopback (a2a-upstream §1–§5, reference-adapter §4.1).
// undici `request` on one keep-alive Agent; streams are read by sse-reader.ts, the iac-code REST routes
// live in iac-code-routes.ts, and every failure leaves as one of the three kinds in errors.ts.
import { randomUUID } from "node:crypto";
import { Observable, type Subscriber } from "rxjs";
import { Agent, request, type Dispatcher } from "undici";
import type { A2AMessage, A2AStreamResponse, A2ATask } from "../../operators/types.js";
import { isEventStream, isSuccess, parseJson, readText } from "./bodies.js";
import { a2aUnavailable, classify, jsonRpcErrorOf } from "./errors.js";
import { decodeStreamResult, decodeTask, invalidFrame } from "./frames.js";
import { fetchPipelineState, requestSessionRestore, type PipelineState, type RestTransport } from "./iac-code-routes.js";
import { IdleWatch } from "./idle-watch.js";
import { readSseBody, type FlowGate } from "./sse-reader.js";
import { isObject } from "../../operators/lib/json.js";

export { A2AJsonRpcError, a2aUnavailable } from "./errors.js";
export type { FlowGate } from "./sse-reader.js";

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);
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
  /** Told the seconds from sending each JSON-RPC request until its response began (status and headers in). */
  observeLatency?: (method: string, seconds: number) => void;
}

/** Streams per HTTP/2 connection before the pool opens another one. */
const H2_STREAMS_PER_CONNECTION = 1000;
// undici's connector reads `useH2c` (h2 without TLS) but its typings do not list it yet.
const H2C_CONNECT = { useH2c: true } as Agent.Options["connect"];

export interface StreamOptions {
  flow?: FlowGate;
}

/** The kernel as one run reads it: every stream it opens is read only as fast as the run's writer lets it. */
export type PacedUpstream = Pick<
  A2AClient,
  "sendStreamingMessage" | "subscribeToTask" | "sendMessage" | "getTask" | "cancelTask" | "pipelineState" | "ensureSessionRestored"
>;

export class A2AClient {
  private readonly base: URL;
  private readonly agent: Agent;
  /** h2c only: lets undici multiplex our POSTs (it never retries them, so nothing is replayed). */
  private readonly multiplex: boolean;
  private readonly baseHeaders: Record<string, string>;
  private readonly requestTimeoutMs: number;
  private readonly idleTimeoutMs: number;
  private readonly routes: RestTransport;
  private readonly observeLatency: ((method: string, seconds: number) => void) | undefined;

  constructor(options: A2AClientOptions) {
    this.base = assertLoopbackA2AUrl(options.url);
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 0;
    this.multiplex = options.http2 === true;
    this.observeLatency = options.observeLatency;
    if (this.multiplex && this.base.protocol !== "http:") throw new Error(`HTTP/2 to the A2A endpoint is h2c only (an http:// URL): ${options.url}`);
    this.agent = this.multiplex
      ? new Agent({ allowH2: true, connect: H2C_CONNECT, pipelining: H2_STREAMS_PER_CONNECTION })
      : new Agent();
    // Without A2A-Version the SDK assumes 0.3 and refuses every 1.0 method with -32009.
    this.baseHeaders = { "A2A-Version": "1.0" };
    if (options.token) this.baseHeaders.Authorization = `Bearer ${options.token}`;
    this.routes = { base: this.base, dispatcher: this.agent, headers: this.baseHeaders, timeoutMs: this.requestTimeoutMs };
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
  pipelineState(taskId: string, afterSequence: number): Promise<PipelineState | null> {
    return fetchPipelineState(this.routes, taskId, afterSequence);
  }

  /**
   * iac-code explicit session restore (newer kernels); false = the session cannot be restored,
   * "unsupported" = the kernel has no such route (iac-code 0.13 and plain A2A servers).
   */
  ensureSessionRestored(body: { cwd: string; sessionId: string; taskId?: string }): Promise<boolean | "unsupported"> {
    return requestSessionRestore(this.routes, body);
  }

  /**
   * This client with every stream it opens paced by `flow`: the next upstream chunk is read only once
   * `flow.ready()` settles (a full client socket, a durable write in flight), so a slow reader holds the
   * kernel's stream back instead of growing a buffer.
   */
  pacedBy(flow: FlowGate): PacedUpstream {
    return {
      sendStreamingMessage: (message) => this.sendStreamingMessage(message, { flow }),
      subscribeToTask: (taskId) => this.subscribeToTask(taskId, { flow }),
      sendMessage: (message, opts) => this.sendMessage(message, opts),
      getTask: (taskId, historyLength) => this.getTask(taskId, historyLength),
      cancelTask: (taskId) => this.cancelTask(taskId),
      pipelineState: (taskId, afterSequence) => this.pipelineState(taskId, afterSequence),
      ensureSessionRestored: (body) => this.ensureSessionRestored(body),
    };
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
        return readSseBody(res.body, subscriber, flow, idle);
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
      if (!isObject(envelope)) throw invalidFrame();
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
    const started = performance.now();
    const response = request(this.base, {
      dispatcher: this.agent,
      method: "POST",
      idempotent: this.multiplex,
      headers: { ...this.baseHeaders, "Content-Type": "application/json", Accept: accept },
      body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
      signal: timing.signal,
      headersTimeout: timing.headersTimeout ?? this.requestTimeoutMs,
      bodyTimeout: timing.bodyTimeout,
    });
    // Only answers are timed: a refused connection or an abort has no latency to speak of.
    const observe = this.observeLatency;
    if (observe) response.then(() => observe(method, (performance.now() - started) / 1000), () => undefined);
    return response;
  }
}

function messageParams(message: A2AMessage): unknown {
  return { message, configuration: { acceptedOutputModes: ACCEPTED_OUTPUT_MODES } };
}
