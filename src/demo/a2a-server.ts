// A real A2A 1.0 JSON-RPC upstream built from @a2a-js/sdk server classes on plain node:http. The
// agent itself is a script (TurnScript) that yields StreamResponse JSON; the SDK stores the task,
// frames the JSON-RPC envelopes and decides when streams end. Around the SDK we add only what iac-code
// does differently (see a2a-upstream.md §5): idle-task cancel/subscribe rules, the full GetTask
// history, resumed turns without a leading Task frame, and pre-stream rejections as plain JSON.
import {
  A2A_VERSION_HEADER,
  AgentCard,
  Message,
  SSE_HEADERS,
  StreamResponse,
  Task,
  TaskState,
  TaskStatusUpdateEvent,
  formatSSEErrorEvent,
  formatSSEEvent,
  type CancelTaskRequest,
  type GetTaskRequest,
  type SubscribeToTaskRequest,
} from "@a2a-js/sdk";
import {
  AgentEvent,
  DefaultExecutionEventBusManager,
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  UnauthenticatedUser,
  defaultServerCallContextBuilder,
  validateVersion,
  type AgentExecutionEvent,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
  type ServerCallContext,
} from "@a2a-js/sdk/server";
import { A2AError, TaskNotCancelableError, TaskNotFoundError } from "@a2a-js/sdk/errors";
import type { A2AMessage, A2AStreamResponse, JsonObject } from "../../operators/types.js";
import { listenLoopback, type FakeRequest as Req, type FakeResponse as Res } from "./listen.js";
import { readRequestText } from "./read-body.js";

export interface TurnContext {
  taskId: string;
  contextId: string;
  /** The incoming message as protobuf-JSON (camelCase), with taskId/contextId resolved. */
  userMessage: A2AMessage;
  /** True when message.taskId named an existing task (a resume / answer / follow-up turn). */
  existingTask: boolean;
  /** How many turns this task has already executed (0 for the first). */
  turnIndex: number;
  /** Aborted when the task is cancelled (CancelTask) or the server closes. */
  signal: AbortSignal;
}

/**
 * A script yields StreamResponse JSON exactly as it appears in `result` on the wire, or a pause.
 * Missing taskId/contextId on status/artifact updates and tasks are filled from the turn.
 * Throw an A2AError (e.g. RequestMalformedError) or a TurnRejectedError before the first frame to
 * answer the request with a plain JSON-RPC error instead of a stream.
 */
export type ScriptItem = A2AStreamResponse | { delayMs: number } | { waitForCancel: true };
export type TurnScript = (turn: TurnContext) => AsyncIterable<ScriptItem> | Iterable<ScriptItem>;

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

/** A pre-stream rejection with an exact JSON-RPC error object (for codes/data the SDK errors lack). */
export class TurnRejectedError extends Error {
  constructor(readonly rpcError: { code: number; message: string; data?: unknown }) {
    super(rpcError.message);
    this.name = "TurnRejectedError";
  }
}

type RpcError = { code: number; message: string; data?: unknown };

// Keys in ServerCallContext.state: the executor leaves notes there for the HTTP layer of the same request.
const REJECTION_KEY = "scripted.rejection";
const SYNTHETIC_RESUME_FRAME_KEY = "scripted.syntheticResumeFrame";
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** What the server knows about each task beyond the SDK's store. */
class TurnRegistry {
  readonly active = new Map<string, AbortController>();
  readonly turnCounts = new Map<string, number>();
  readonly contextIds = new Map<string, string>();
  readonly sessionIds = new Map<string, string>();
  /** User messages and every published status message, in order (iac-code's GetTask history). */
  readonly history = new Map<string, Message[]>();

  record(taskId: string, message: Message): void {
    const log = this.history.get(taskId) ?? [];
    log.push(structuredClone(message));
    this.history.set(taskId, log);
  }

  abortAll(): void {
    for (const controller of this.active.values()) controller.abort(new Error("server closed"));
  }
}

function rpcErrorOf(err: unknown): RpcError | undefined {
  if (err instanceof TurnRejectedError) return err.rpcError;
  if (err instanceof A2AError) return JsonRpcTransportHandler.mapToJSONRPCError(err);
  return undefined;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

function toAsyncIterator<T>(source: AsyncIterable<T> | Iterable<T>): AsyncIterator<T> | Iterator<T> {
  return Symbol.asyncIterator in source
    ? (source as AsyncIterable<T>)[Symbol.asyncIterator]()
    : (source as Iterable<T>)[Symbol.iterator]();
}

/** Fills ids the script left out so scripts can stay short. */
function withTurnIds(item: A2AStreamResponse, turn: TurnContext): A2AStreamResponse {
  if ("statusUpdate" in item) {
    return { statusUpdate: { taskId: turn.taskId, contextId: turn.contextId, ...item.statusUpdate } };
  }
  if ("artifactUpdate" in item) {
    return { artifactUpdate: { taskId: turn.taskId, contextId: turn.contextId, ...item.artifactUpdate } };
  }
  if ("task" in item) return { task: { id: turn.taskId, contextId: turn.contextId, ...item.task } };
  return item;
}

function toAgentEvent(item: A2AStreamResponse): AgentExecutionEvent {
  const payload = StreamResponse.fromJSON(item).payload;
  switch (payload?.$case) {
    case "task":
      return AgentEvent.task(payload.value);
    case "message":
      return AgentEvent.message(payload.value);
    case "statusUpdate":
      return AgentEvent.statusUpdate(payload.value);
    case "artifactUpdate":
      return AgentEvent.artifactUpdate(payload.value);
    default:
      throw new Error(`script item is not a StreamResponse: ${JSON.stringify(item)}`);
  }
}

class ScriptedExecutor implements AgentExecutor {
  constructor(
    private readonly script: TurnScript,
    private readonly turns: TurnRegistry,
  ) {}

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = ctx;
    const controller = new AbortController();
    const signal = controller.signal;
    this.turns.active.set(taskId, controller);
    this.turns.contextIds.set(taskId, contextId);
    const turn: TurnContext = {
      taskId,
      contextId,
      userMessage: Message.toJSON(ctx.userMessage) as A2AMessage,
      existingTask: ctx.task !== undefined,
      turnIndex: this.turns.turnCounts.get(taskId) ?? 0,
      signal,
    };
    let published = false;
    const publish = (event: AgentExecutionEvent): void => {
      if (!published && event.kind !== "task" && event.kind !== "message") {
        // The SDK rejects a stream that does not open with a Task (or Message).
        this.publishOpeningTask(ctx, bus);
      }
      published = true;
      if (event.kind === "statusUpdate") this.noteStatus(taskId, event.data);
      bus.publish(event);
    };

    this.turns.record(taskId, ctx.userMessage);
    const aborted = untilAborted(signal).then(() => undefined);
    const iterator = toAsyncIterator(this.script(turn));
    try {
      for (;;) {
        let step: IteratorResult<ScriptItem>;
        try {
          const next = Promise.resolve(iterator.next());
          // A script stuck in its own await must not outlive a cancel.
          const raced = await Promise.race([next, aborted]);
          if (raced === undefined) {
            next.catch(() => undefined);
            break;
          }
          step = raced;
        } catch (err) {
          const rejection = published ? undefined : rpcErrorOf(err);
          if (rejection === undefined) throw err;
          ctx.context.state.set(REJECTION_KEY, rejection);
          return;
        }
        if (signal.aborted || step.done) break;
        const item = step.value;
        if ("delayMs" in item) await sleep(item.delayMs, signal);
        else if ("waitForCancel" in item) await untilAborted(signal);
        else publish(toAgentEvent(withTurnIds(item, turn)));
      }
      if (!published && !signal.aborted) this.publishOpeningTask(ctx, bus);
    } finally {
      if (signal.aborted) void Promise.resolve(iterator.return?.()).catch(() => undefined);
      if (this.turns.active.get(taskId) === controller) this.turns.active.delete(taskId);
      if (published) this.turns.turnCounts.set(taskId, turn.turnIndex + 1);
    }
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    this.turns.active.get(taskId)?.abort(new Error("task canceled"));
    const contextId = this.turns.contextIds.get(taskId) ?? "";
    const sessionId = this.turns.sessionIds.get(taskId);
    const update = TaskStatusUpdateEvent.fromJSON({
      taskId,
      contextId,
      status: {
        state: "TASK_STATE_CANCELED",
        timestamp: new Date().toISOString(),
        message: {
          messageId: `${taskId}-5`,
          contextId,
          taskId,
          role: "ROLE_AGENT",
          parts: [{ text: "The task was canceled." }],
        },
      },
      ...(sessionId ? { metadata: { iac_code: { iacCodeSessionId: sessionId } } } : {}),
    });
    this.noteStatus(taskId, update);
    bus.publish(AgentEvent.statusUpdate(update));
  };

  private publishOpeningTask(ctx: RequestContext, bus: ExecutionEventBus): void {
    if (ctx.task) {
      ctx.context.state.set(SYNTHETIC_RESUME_FRAME_KEY, true);
      bus.publish(AgentEvent.task(ctx.task));
      return;
    }
    const task = Task.fromJSON({
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: { state: "TASK_STATE_SUBMITTED" },
      history: [Message.toJSON(ctx.userMessage)],
    });
    bus.publish(AgentEvent.task(task));
  }

  private noteStatus(taskId: string, update: TaskStatusUpdateEvent): void {
    const sessionId = (update.metadata?.iac_code as JsonObject | undefined)?.iacCodeSessionId;
    if (typeof sessionId === "string") this.turns.sessionIds.set(taskId, sessionId);
    if (update.status?.message) this.turns.record(taskId, update.status.message);
  }
}

/** iac-code's idle-task rules (a2a-upstream §5.1–5.3) and full history on top of the SDK handler. */
class ScriptedRequestHandler extends DefaultRequestHandler {
  constructor(
    card: AgentCard,
    private readonly store: InMemoryTaskStore,
    executor: AgentExecutor,
    private readonly buses: DefaultExecutionEventBusManager,
    private readonly turns: TurnRegistry,
  ) {
    super(card, store, executor, buses);
  }

  override async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const wasActive = this.turns.active.has(params.id);
    const task = params.id ? await this.store.load(params.id, context) : undefined;
    if (task && !wasActive && task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED && !waitsForInput(task)) {
      throw new TaskNotCancelableError(`Task ${params.id} is not running; its turn already finished`);
    }
    // A parked task has no running executor: give the SDK a bus so the cancel still goes through our
    // executor (same CANCELED frame as a live cancel), and release that bus afterwards.
    if (!wasActive && params.id) this.buses.createOrGetByTaskId(params.id, context);
    try {
      return this.withFullHistory(await super.cancelTask(params, context), undefined);
    } finally {
      if (!wasActive && params.id) {
        this.buses.getByTaskId(params.id, context)?.finished();
        this.buses.cleanupByTaskId(params.id, context);
      }
    }
  }

  override async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    return this.withFullHistory(await super.getTask(params, context), params.historyLength);
  }

  override async *resubscribe(
    params: SubscribeToTaskRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    if (!this.turns.active.has(params.id)) {
      throw new TaskNotFoundError(`Task ${params.id} is not active`);
    }
    yield* super.resubscribe(params, context);
  }

  private withFullHistory(task: Task, historyLength: number | undefined): Task {
    const log = this.turns.history.get(task.id);
    if (!log) return task;
    const all = structuredClone(log);
    const history = historyLength === undefined ? all : historyLength <= 0 ? [] : all.slice(-historyLength);
    return { ...task, history };
  }
}

/** An idle INPUT_REQUIRED task is still cancelable while it waits for an answer or a retry (§5.1). */
function waitsForInput(task: Task): boolean {
  const iac = task.metadata?.iac_code as JsonObject | undefined;
  const input = iac?.input as JsonObject | undefined;
  const error = iac?.error as JsonObject | undefined;
  return input?.required === true || error?.retryable === true;
}

function buildAgentCard(url: string, token: string | undefined): AgentCard {
  return AgentCard.fromJSON({
    name: "iac-code",
    description: "Scripted A2A 1.0 upstream (agui-gateway demo): deterministic turns, no LLM, no network.",
    supportedInterfaces: [{ url, protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    provider: { organization: "agui-gateway", url: "https://github.com/aliyun/iac-code" },
    version: "0.13.1-scripted",
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extendedAgentCard: false,
      extensions: [
        { uri: "urn:iac-code:a2a:artifact-metadata:v1", description: "Artifact metadata" },
        {
          uri: "urn:iac-code:a2a:thinking-exposure:v1",
          description: "Thinking exposure",
          params: { enabledTypes: ["raw_thinking", "tool_trace"] },
        },
      ],
    },
    ...(token
      ? {
          securitySchemes: { bearerAuth: { httpAuthSecurityScheme: { scheme: "bearer" } } },
          securityRequirements: [{ schemes: { bearerAuth: { list: [""] } } }],
        }
      : {}),
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["text/plain"],
    skills: [
      {
        id: "iac_generation",
        name: "IaC generation",
        description: "Writes infrastructure-as-code templates",
        tags: ["iac"],
      },
    ],
  });
}

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
      if (!first.done) write(formatSSEEvent(first.value));
      while (!first.done && !gone()) {
        const next = await iterator.next();
        if (next.done || gone()) break;
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

  async function route(req: Req, res: Res): Promise<void> {
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    if (req.method === "POST" && path === "/") return handleRpc(req, res, await readRequestText(req, MAX_BODY_BYTES));
    if (!authorized(req)) return sendJson(res, 401, { error: "Unauthorized" });
    if (req.method === "GET" && path === "/.well-known/agent-card.json" && card) {
      return sendJson(res, 200, AgentCard.toJSON(card));
    }
    if (req.method === "GET" && path === "/health") {
      return sendJson(res, 200, { status: "healthy", version: "0.13.1-scripted", mode: "normal" });
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
