// A real A2A 1.0 JSON-RPC upstream built from @a2a-js/sdk server classes on plain node:http. The
// agent itself is a script (TurnScript) that yields StreamResponse JSON; the SDK stores the task,
// frames the JSON-RPC envelopes and decides when streams end. Around the SDK we add only what iac-code
// does differently (see a2a-upstream.md §5): idle-task cancel/subscribe rules and the full GetTask
// history (request-handler.ts), resumed turns without a leading Task frame (script-executor.ts), and
// pre-stream rejections as plain JSON (here, in the HTTP layer).
import { A2A_VERSION_HEADER, AgentCard, SSE_HEADERS, formatSSEErrorEvent, formatSSEEvent } from "@a2a-js/sdk";
import {
  DefaultExecutionEventBusManager,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  UnauthenticatedUser,
  defaultServerCallContextBuilder,
  validateVersion,
  type ServerCallContext,
} from "@a2a-js/sdk/server";
import { SCRIPTED_VERSION, buildAgentCard } from "./agent-card.js";
import { listenLoopback, type FakeRequest as Req, type FakeResponse as Res } from "./listen.js";
import { readRequestText } from "./read-body.js";
import { ScriptedRequestHandler } from "./request-handler.js";
import { ScriptedExecutor } from "./script-executor.js";
import { REJECTION_KEY, SYNTHETIC_RESUME_FRAME_KEY, TurnRegistry, type TurnScript } from "./turns.js";

export { TurnRejectedError, type ScriptItem, type TurnContext, type TurnScript } from "./turns.js";

export interface ScriptedA2AServerOptions {
  script: TurnScript;
  port?: number;
  token?: string;
  /**
   * The SDK needs a Task event before anything else even on a resumed task; iac-code sends none
   * there (§3.2 frame 1). By default that synthetic frame is kept off the wire; set true to keep it.
   */
  announceResumedTask?: boolean;
  /** Serve HTTP/2 without TLS (prior knowledge) instead of HTTP/1.1. */
  http2?: boolean;
  /**
   * Serve iac-code's `POST /iac-code/session/ensure-restored` as a kernel whose sessions live in its memory:
   * "current" for a session id one of its streams announced, 404 "not_found" for any other.
   */
  sessionRestore?: boolean;
}

export interface RecordedRequest {
  method: string;
  params: unknown;
  headers: Record<string, string | string[] | undefined>;
}

export interface ScriptedA2AServer {
  url: string;
  port: number;
  requests: RecordedRequest[];
  cancelled: string[];
  /** Connections accepted so far (HTTP/2: sessions; each carries many streams). */
  connections(): number;
  close(): Promise<void>;
}

// HTTP/2 forbids connection-specific headers.
const { Connection: _connection, ...H2_SSE_HEADERS } = SSE_HEADERS;

function sendJson(res: Res, status: number, body: unknown): void {
  if (res.destroyed || res.writableEnded) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

function headerValue(req: Req, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

type JsonRpcEnvelope = { jsonrpc: string; id: string | number | null; result?: unknown; error?: unknown };

function isAsyncIterable<T>(value: unknown): value is AsyncIterable<T> {
  return typeof (value as AsyncIterable<T> | null)?.[Symbol.asyncIterator] === "function";
}

export async function startScriptedA2AServer(options: ScriptedA2AServerOptions): Promise<ScriptedA2AServer> {
  const requests: RecordedRequest[] = [];
  const cancelled: string[] = [];
  const turns = new TurnRegistry();
  const store = new InMemoryTaskStore();
  const buses = new DefaultExecutionEventBusManager();
  const executor = new ScriptedExecutor(options.script, turns);
  let card: AgentCard | undefined;
  let transport: JsonRpcTransportHandler | undefined;

  const authorized = (req: Req): boolean =>
    !options.token || headerValue(req, "authorization") === `Bearer ${options.token}`;

  async function handleRpc(req: Req, res: Res, body: string): Promise<void> {
    let parsed: { id?: unknown; method?: unknown; params?: unknown } | undefined;
    try {
      const value: unknown = JSON.parse(body);
      if (value && typeof value === "object") parsed = value as typeof parsed;
    } catch {
      parsed = undefined;
    }
    if (typeof parsed?.method === "string") {
      requests.push({ method: parsed.method, params: parsed.params, headers: { ...req.headers } });
    }
    if (!authorized(req)) return sendJson(res, 401, { error: "Unauthorized" });
    if (!card || !transport) return sendJson(res, 503, { error: "starting" });

    const id = (typeof parsed?.id === "string" || typeof parsed?.id === "number" ? parsed.id : null) as
      | string
      | number
      | null;
    const context = defaultServerCallContextBuilder({
      extensions: undefined,
      user: new UnauthenticatedUser(),
      headers: req.headers,
      requestedVersion: headerValue(req, A2A_VERSION_HEADER) || undefined,
    });
    try {
      validateVersion(context.requestedVersion, card, "JSONRPC");
    } catch (err) {
      return sendJson(res, 200, { jsonrpc: "2.0", id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) });
    }
    const cancelId = (parsed?.params as { id?: unknown } | undefined)?.id;
    if (parsed?.method === "CancelTask" && typeof cancelId === "string") cancelled.push(cancelId);

    const out = await transport.handle(body, context);
    if (!isAsyncIterable<JsonRpcEnvelope>(out)) {
      const rejection = context.state.get(REJECTION_KEY);
      return sendJson(res, 200, rejection && out.error ? { jsonrpc: "2.0", id: out.id, error: rejection } : out);
    }
    await streamRpc(res, out, context, id);
  }

  async function streamRpc(
    res: Res,
    frames: AsyncIterable<JsonRpcEnvelope>,
    context: ServerCallContext,
    id: string | number | null,
  ): Promise<void> {
    const iterator = frames[Symbol.asyncIterator]();
    let first: IteratorResult<JsonRpcEnvelope>;
    try {
      first = await iterator.next();
      const synthetic = context.state.get(SYNTHETIC_RESUME_FRAME_KEY) === true;
      if (!first.done && synthetic && !options.announceResumedTask && isTaskFrame(first.value)) {
        first = await iterator.next();
      }
    } catch (err) {
      // Failing before the first frame is a plain JSON-RPC error body, not SSE (§1.8).
      return sendJson(res, 200, { jsonrpc: "2.0", id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) });
    }
    const rejection = context.state.get(REJECTION_KEY);
    if (first.done && rejection) return sendJson(res, 200, { jsonrpc: "2.0", id, error: rejection });

    res.writeHead(200, options.http2 ? H2_SSE_HEADERS : SSE_HEADERS);
    const gone = (): boolean => res.destroyed || res.writableEnded;
    const write = (text: string) => (res as { write(text: string): boolean }).write(text);
    try {
      if (!first.done) {
        rememberSession(first.value);
        write(formatSSEEvent(first.value));
      }
      while (!first.done && !gone()) {
        const next = await iterator.next();
        if (next.done || gone()) break;
        rememberSession(next.value);
        write(formatSSEEvent(next.value));
      }
    } catch (err) {
      if (!gone()) {
        write(formatSSEErrorEvent({ jsonrpc: "2.0", id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) }));
      }
    } finally {
      void iterator.return?.().catch(() => undefined);
      if (!gone()) res.end();
    }
  }

  const sessions = new Set<string>();
  function rememberSession(frame: JsonRpcEnvelope): void {
    if (!options.sessionRestore) return;
    const id = (frame.result as { statusUpdate?: { metadata?: { iac_code?: { iacCodeSessionId?: unknown } } } } | undefined)?.statusUpdate
      ?.metadata?.iac_code?.iacCodeSessionId;
    if (typeof id === "string") sessions.add(id);
  }

  async function route(req: Req, res: Res): Promise<void> {
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    if (req.method === "POST" && path === "/") return handleRpc(req, res, await readRequestText(req));
    if (!authorized(req)) return sendJson(res, 401, { error: "Unauthorized" });
    if (options.sessionRestore && req.method === "POST" && path === "/iac-code/session/ensure-restored") {
      let sessionId: unknown;
      try {
        sessionId = (JSON.parse(await readRequestText(req)) as { sessionId?: unknown } | null)?.sessionId;
      } catch {
        return sendJson(res, 400, { error: "Bad Request" });
      }
      const known = typeof sessionId === "string" && sessions.has(sessionId);
      return sendJson(res, known ? 200 : 404, { status: known ? "current" : "not_found" });
    }
    if (req.method === "GET" && path === "/.well-known/agent-card.json" && card) {
      return sendJson(res, 200, AgentCard.toJSON(card));
    }
    if (req.method === "GET" && path === "/health") {
      return sendJson(res, 200, { status: "healthy", version: SCRIPTED_VERSION, mode: "normal" });
    }
    sendJson(res, 404, { error: "Not Found" });
  }

  const handle = (req: Req, res: Res) => {
    route(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: String(err) });
      else if (!res.destroyed) res.destroy();
    });
  };
  const listener = await listenLoopback(handle, { ...(options.port !== undefined && { port: options.port }), ...(options.http2 && { http2: true }) });
  const { port, url } = listener;
  card = buildAgentCard(url, options.token);
  transport = new JsonRpcTransportHandler(new ScriptedRequestHandler(card, store, executor, buses, turns));

  return {
    url,
    port,
    requests,
    cancelled,
    connections: () => listener.connections(),
    close(): Promise<void> {
      turns.abortAll();
      return listener.close();
    },
  };
}

function isTaskFrame(frame: JsonRpcEnvelope): boolean {
  return typeof frame.result === "object" && frame.result !== null && "task" in frame.result;
}
