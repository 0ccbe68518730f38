// JSON-RPC 2.0 client for the A2A 1.0 kernel on loopback (a2a-upstream §1–§5, reference-adapter §4.1).
// undici on one keep-alive Agent; streams are read by stream-call.ts, the iac-code REST routes
// live in iac-code-routes.ts, and every failure leaves as one of the three kinds in errors.ts.
import { randomUUID } from "node:crypto";
import { Observable } from "rxjs";
import { Agent, request, type Dispatcher } from "undici";
import type { A2AMessage, A2AStreamResponse, A2ATask } from "../../operators/types.js";
import { isSuccess, parseJson, readText } from "./bodies.js";
import { a2aUnavailable, classify, jsonRpcErrorOf } from "./errors.js";
import { decodeStreamResult, decodeTask, decodeTaskPage, invalidFrame } from "./frames.js";
import { fetchPipelineState, requestSessionRestore, type PipelineState, type RestTransport } from "./iac-code-routes.js";
import type { FlowGate } from "./sse-reader.js";
import { StreamCall, failCall } from "./stream-call.js";
import { isObject } from "../../operators/lib/json.js";
import { HandOver } from "../hand-over.js";
import { ATTR, NO_SPAN, type TraceSpan } from "../ops/trace.js";

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
    return new PacedClient(this, flow, span);
  }

  /** Destroys the connection pool; calls still in flight fail with A2A_UNAVAILABLE. */
  async close(): Promise<void> {
    await this.agent.destroy();
  }

  private stream(method: string, params: unknown, taskId: string | undefined, opts: StreamOptions | undefined): Observable<A2AStreamResponse> {
    return new Observable<A2AStreamResponse>((subscriber) => {
      const span = this.callSpan(opts?.span ?? NO_SPAN, method, taskId);
      const call = new StreamCall(subscriber, opts?.flow, this.idleTimeoutMs, span, method, this.observeLatency);
      this.agent.dispatch(
        {
          origin: this.base.origin,
          path: this.base.pathname + this.base.search,
          method: "POST",
          idempotent: this.multiplex,
          ...streamingBody(rpcBody(method, params), this.headersFor("text/event-stream", span)),
          headersTimeout: this.requestTimeoutMs,
          // Silence on a stream is normal (a permission wait can last minutes); idleTimeoutMs governs it instead.
          bodyTimeout: 0,
        },
        call,
      );
      return call;
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
    timing: { bodyTimeout: number; headersTimeout?: number },
    span: TraceSpan,
  ): Promise<Dispatcher.ResponseData> {
    const started = performance.now();
    const response = request(this.base, {
      dispatcher: this.agent,
      method: "POST",
      idempotent: this.multiplex,
      headers: this.headersFor(accept, span),
      body: rpcBody(method, params),
      headersTimeout: timing.headersTimeout ?? this.requestTimeoutMs,
      bodyTimeout: timing.bodyTimeout,
    });
    // Only answers are timed: a refused connection or an abort has no latency to speak of.
    const observe = this.observeLatency;
    if (observe) response.then(() => observe(method, (performance.now() - started) / 1000), () => undefined);
    return response;
  }

  private headersFor(accept: string, span: TraceSpan): Record<string, string> {
    const headers: Record<string, string> = { ...this.baseHeaders, "Content-Type": "application/json", Accept: accept };
    span.inject(headers);
    return headers;
  }
}

/**
 * A streaming call's body, handed over once: undici keeps a request's body for as long as its response is read, and a
 * stream is read for as long as its run waits (minutes, for a permission), while the body is the whole user message.
 * Its length is in the headers, so the request is framed as it is with the body given whole. undici's dispatch takes
 * an Iterable body (its Dispatcher docs); its DispatchOptions type leaves Iterable out.
 */
function streamingBody(body: string, headers: Record<string, string>): Pick<Dispatcher.DispatchOptions, "body" | "headers"> {
  const bytes = Buffer.from(body, "utf8");
  headers["content-length"] = String(bytes.byteLength);
  return { body: new BodyOnce(bytes) as unknown as Dispatcher.DispatchOptions["body"], headers };
}

class BodyOnce extends HandOver<Buffer> implements Iterable<Buffer> {
  *[Symbol.iterator](): Iterator<Buffer> {
    const bytes = this.take();
    if (bytes) yield bytes;
  }
}

function rpcBody(method: string, params: unknown): string {
  return JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params });
}

/** A client paced by one run's flow gate, its calls children of the run's span: a class, not eight closures per run. */
class PacedClient implements PacedUpstream {
  private readonly opts: StreamOptions;

  constructor(
    private readonly client: A2AClient,
    flow: FlowGate | undefined,
    private readonly span: TraceSpan,
  ) {
    this.opts = { ...(flow && { flow }), span };
  }

  sendStreamingMessage(message: A2AMessage): Observable<A2AStreamResponse> {
    return this.client.sendStreamingMessage(message, this.opts);
  }

  subscribeToTask(taskId: string): Observable<A2AStreamResponse> {
    return this.client.subscribeToTask(taskId, this.opts);
  }

  sendMessage(message: A2AMessage, options?: { timeoutMs?: number }): Promise<A2AStreamResponse> {
    return this.client.sendMessage(message, { ...options, span: this.span });
  }

  getTask(taskId: string, historyLength?: number): Promise<A2ATask> {
    return this.client.getTask(taskId, historyLength, this.span);
  }

  listTasks(query: ListTasksQuery): Promise<TaskPage> {
    return this.client.listTasks(query, this.span);
  }

  cancelTask(taskId: string): Promise<A2ATask> {
    return this.client.cancelTask(taskId, this.span);
  }

  pipelineState(taskId: string, afterSequence: number): Promise<PipelineState | null> {
    return this.client.pipelineState(taskId, afterSequence, this.span);
  }

  ensureSessionRestored(body: { cwd: string; sessionId: string; taskId?: string }): Promise<boolean | "unsupported"> {
    return this.client.ensureSessionRestored(body, this.span);
  }
}

function messageParams(message: A2AMessage): unknown {
  return { message, configuration: { acceptedOutputModes: ACCEPTED_OUTPUT_MODES } };
}
