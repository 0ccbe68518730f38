// JSON-RPC 2.0 client for the A2A 1.0 kernel on loopback (a2a-upstream §1–§5, reference-adapter §4.1).
// undici `request` on one keep-alive Agent; streams are read by sse-reader.ts, the iac-code REST routes
// live in iac-code-routes.ts, and every failure leaves as one of the three kinds in errors.ts.
import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import { Observable, type Subscriber } from "rxjs";
import { Agent, request, type Dispatcher } from "undici";
import type { A2AMessage, A2AStreamResponse, A2ATask } from "../../operators/types.js";
import { isEventStream, isSuccess, parseJson, readText } from "./bodies.js";
import { A2AJsonRpcError, a2aUnavailable, classify, jsonRpcErrorOf } from "./errors.js";
import { decodeStreamResult, decodeTask, decodeTaskPage, invalidFrame } from "./frames.js";
import { fetchPipelineState, requestSessionRestore, type PipelineState, type RestTransport } from "./iac-code-routes.js";
import { IdleWatch } from "./idle-watch.js";
import { readSseBody, type FlowGate } from "./sse-reader.js";
import { isObject } from "../../operators/lib/json.js";
import { ATTR, NO_SPAN, errorCodeOf, type TraceSpan } from "../ops/trace.js";

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
  /** The span each call becomes a child of (its traceparent is sent to the kernel). */
  span?: TraceSpan;
}

/** The kernel as one run reads it: every stream it opens is read only as fast as the run's writer lets it. */
export type PacedUpstream = Pick<
  A2AClient,
  "sendStreamingMessage" | "subscribeToTask" | "sendMessage" | "getTask" | "listTasks" | "cancelTask" | "pipelineState" | "ensureSessionRestored"
>;

/** ListTasks' filter and page (A2A 1.0 ListTasksRequest); the kernel answers newest first. */
export interface ListTasksQuery {
  contextId: string;
  /** 1..100; the kernel's default (50) when absent. */
  pageSize?: number;
  pageToken?: string;
  historyLength?: number;
}

/** One page of ListTasks; `nextPageToken` absent on the last page. */
export interface TaskPage {
  tasks: A2ATask[];
  nextPageToken?: string;
}

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
    return this.stream("SendStreamingMessage", messageParams(message), message.taskId, opts);
  }

  /** Only for active tasks; an idle or finished task answers -32001 as a plain JSON error (A2AJsonRpcError). */
  subscribeToTask(taskId: string, opts?: StreamOptions): Observable<A2AStreamResponse> {
    return this.stream("SubscribeToTask", { id: taskId }, taskId, opts);
  }

  /**
   * Returns once the task reaches its next interrupted or terminal state, which can take as long as
   * the turn does: pass a `timeoutMs` larger than the default request timeout when that matters.
   */
  async sendMessage(message: A2AMessage, opts?: { timeoutMs?: number; span?: TraceSpan }): Promise<A2AStreamResponse> {
    const result = await this.call("SendMessage", messageParams(message), message.taskId, opts?.span ?? NO_SPAN, opts?.timeoutMs);
    const decoded = decodeStreamResult(result);
    if (!("task" in decoded) && !("message" in decoded)) throw invalidFrame();
    return decoded;
  }

  async getTask(taskId: string, historyLength = 100, span: TraceSpan = NO_SPAN): Promise<A2ATask> {
    return decodeTask(await this.call("GetTask", { id: taskId, historyLength }, taskId, span));
  }

  /** One page of the tasks of a context, as the kernel's principal may see them (a2a-upstream §1.5). */
  async listTasks(query: ListTasksQuery, span: TraceSpan = NO_SPAN): Promise<TaskPage> {
    return decodeTaskPage(await this.call("ListTasks", query, undefined, span));
  }

  async cancelTask(taskId: string, span: TraceSpan = NO_SPAN): Promise<A2ATask> {
    return decodeTask(await this.call("CancelTask", { id: taskId }, taskId, span));
  }

  /** iac-code pipeline recovery (a2a-upstream §5.5); 404 = nothing known for that task. */
  pipelineState(taskId: string, afterSequence: number, span: TraceSpan = NO_SPAN): Promise<PipelineState | null> {
    return this.rest("PipelineState", taskId, span, (routes) => fetchPipelineState(routes, taskId, afterSequence));
  }

  /**
   * iac-code explicit session restore (newer kernels); false = the session cannot be restored,
   * "unsupported" = the kernel has no such route (iac-code 0.13 and plain A2A servers).
   */
  ensureSessionRestored(body: { cwd: string; sessionId: string; taskId?: string }, span: TraceSpan = NO_SPAN): Promise<boolean | "unsupported"> {
    return this.rest("RestoreSession", body.taskId, span, (routes) => requestSessionRestore(routes, body));
  }

  /**
   * This client with every stream it opens paced by `flow`: the next upstream chunk is read only once
   * `flow.ready()` settles (a full client socket, a durable write in flight), so a slow reader holds the
   * kernel's stream back instead of growing a buffer. Every call is a child span of `span`.
   */
  pacedBy(flow: FlowGate | undefined, span: TraceSpan = NO_SPAN): PacedUpstream {
    const opts: StreamOptions = { ...(flow && { flow }), span };
    return {
      sendStreamingMessage: (message) => this.sendStreamingMessage(message, opts),
      subscribeToTask: (taskId) => this.subscribeToTask(taskId, opts),
      sendMessage: (message, options) => this.sendMessage(message, { ...options, span }),
      getTask: (taskId, historyLength) => this.getTask(taskId, historyLength, span),
      listTasks: (query) => this.listTasks(query, span),
      cancelTask: (taskId) => this.cancelTask(taskId, span),
      pipelineState: (taskId, afterSequence) => this.pipelineState(taskId, afterSequence, span),
      ensureSessionRestored: (body) => this.ensureSessionRestored(body, span),
    };
  }

  /** Destroys the connection pool; calls still in flight fail with A2A_UNAVAILABLE. */
  async close(): Promise<void> {
    await this.agent.destroy();
  }

  private stream(method: string, params: unknown, taskId: string | undefined, opts: StreamOptions | undefined): Observable<A2AStreamResponse> {
    return new Observable<A2AStreamResponse>((subscriber) => {
      const request: StreamRequest = { abort: new AbortController(), body: undefined };
      this.pump(method, params, opts?.flow, subscriber, request, this.callSpan(opts?.span ?? NO_SPAN, method, taskId));
      return () => endRequest(request);
    });
  }

  /** A kernel call's own span (a client span under the run's), or NO_SPAN when tracing is off. */
  private callSpan(parent: TraceSpan, method: string, taskId: string | undefined): TraceSpan {
    if (parent === NO_SPAN) return NO_SPAN;
    return parent.child(`a2a/${method}`, {
      kind: "client",
      attributes: {
        [ATTR.rpcSystem]: "jsonrpc",
        [ATTR.rpcMethod]: method,
        [ATTR.serverAddress]: this.base.hostname,
        [ATTR.serverPort]: Number(this.base.port || (this.base.protocol === "https:" ? 443 : 80)),
        [ATTR.taskId]: taskId,
      },
    });
  }

  /** An iac-code REST route, traced and with the traceparent header like a JSON-RPC call. */
  private async rest<T>(name: string, taskId: string | undefined, parent: TraceSpan, send: (routes: RestTransport) => Promise<T>): Promise<T> {
    const span = this.callSpan(parent, name, taskId);
    if (span === NO_SPAN) return send(this.routes);
    const headers = { ...this.baseHeaders };
    span.inject(headers);
    try {
      return await send({ ...this.routes, headers });
    } catch (error) {
      failCall(span, error);
      throw error;
    } finally {
      span.end();
    }
  }

  /** Chained, not awaited: a stream that sits idle for hours holds no suspended async frame. */
  private pump(
    method: string,
    params: unknown,
    flow: FlowGate | undefined,
    subscriber: Subscriber<A2AStreamResponse>,
    request: StreamRequest,
    span: TraceSpan,
  ): void {
    const { abort } = request;
    const idle = new IdleWatch(this.idleTimeoutMs, () => abort.abort());
    this.post(method, params, "text/event-stream", {
      signal: abort.signal,
      // Silence on a stream is normal (a permission wait can last minutes); idleTimeoutMs governs it instead.
      bodyTimeout: 0,
    }, span)
      .then(async (res) => {
        request.body = res.body;
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
        const failure = idle.fired ? a2aUnavailable() : classify(error);
        // An abort because the run stopped reading is no failure of the call.
        if (!subscriber.closed) {
          failCall(span, failure);
          subscriber.error(failure);
        }
      })
      .finally(() => {
        span.end();
        idle.stop();
        // Ends the request on every early exit (bad frame, unsubscribe, idle) so the socket is not left half-read.
        endRequest(request);
      });
  }

  private async call(method: string, params: unknown, taskId: string | undefined, parent: TraceSpan, timeoutMs?: number): Promise<unknown> {
    const span = this.callSpan(parent, method, taskId);
    try {
      const res = await this.post(method, params, "application/json", {
        bodyTimeout: timeoutMs ?? this.requestTimeoutMs,
        headersTimeout: timeoutMs ?? this.requestTimeoutMs,
      }, span);
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
      const failure = classify(error);
      failCall(span, failure);
      throw failure;
    } finally {
      span.end();
    }
  }

  private post(
    method: string,
    params: unknown,
    accept: string,
    timing: { signal?: AbortSignal; bodyTimeout: number; headersTimeout?: number },
    span: TraceSpan,
  ): Promise<Dispatcher.ResponseData> {
    const started = performance.now();
    const headers: Record<string, string> = { ...this.baseHeaders, "Content-Type": "application/json", Accept: accept };
    span.inject(headers);
    const response = request(this.base, {
      dispatcher: this.agent,
      method: "POST",
      idempotent: this.multiplex,
      headers,
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

/** A streaming call's request, and its response body once the headers are in. */
interface StreamRequest {
  readonly abort: AbortController;
  body: Readable | undefined;
}

/**
 * The reason a run's request is ended with: the AbortError abort() would make, made once. Built per request, with
 * its stack formatted when undici destroys the body, it cost about a tenth of a millisecond of main-thread time per
 * run; only a consumer that has already gone away ever sees it.
 */
const REQUEST_ENDED = new DOMException("This operation was aborted", "AbortError");

/** Aborts the request once, unless its body was read to its end (the request is then over, its socket back in the pool). */
function endRequest(request: StreamRequest): void {
  if (request.body?.readableEnded || request.abort.signal.aborted) return;
  request.abort.abort(REQUEST_ENDED);
}

/** The kernel's JSON-RPC error code is kept beside the failure's own code (A2AJsonRpcError, A2A_UNAVAILABLE, …). */
function failCall(span: TraceSpan, error: unknown): void {
  if (error instanceof A2AJsonRpcError) span.set({ "rpc.jsonrpc.error_code": error.code });
  span.fail(errorCodeOf(error));
}

function messageParams(message: A2AMessage): unknown {
  return { message, configuration: { acceptedOutputModes: ACCEPTED_OUTPUT_MODES } };
}
