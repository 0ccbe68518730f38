// The Koa application: middleware that each do one thing, composed here in the order of
// reference-adapter §2.4 (auth → content type → size → JSON → object → language → envelope → admission).
import Router from "@koa/router";
import { PROTOCOL_VERSION } from "@ag-ui/core";
import Koa, { type Context, type Next } from "koa";
import type { Logger } from "pino";
import type { AguiOutput } from "../../operators/index.js";
import { type Language, messageText, normalizeLanguage, resolveAcceptLanguage } from "../i18n/index.js";
import { peekPreferredLanguage } from "../runs/input.js";
import { MAX_THREAD_PAGE, type RunService } from "../runs/service.js";
import { BodyBudget, CANCEL_BODY, RUN_BODY, drainUnreadBody, parseJsonObject, readBody, type BodyLease, type BodyTexts } from "./body.js";
import { GatewayError, LimitError, errorEnvelope as envelopeOf, gatewayErrorOf } from "../errors.js";
import { httpErrors } from "./errors.js";
import type { StreamSelfCheck } from "./self-check.js";
import { admitRequest, observeRun, rejoinRun, startRunStream } from "./run-route.js";
import type { RunFeeds } from "./run-feed.js";
import { connectThread } from "./connect-route.js";
import { connectErrors } from "../runs/connect.js";
import { agentCapabilities } from "./capabilities.js";
import { crossOrigin } from "./cors.js";
import { metricsText, type GatewayMetrics } from "../ops/metrics.js";
import { ANONYMOUS, callerLogFields, type Caller } from "../runs/caller.js";
import { identify, wwwAuthenticate, type Authenticate } from "./auth.js";
import { limitUserRequests, type UserRequestLimit } from "./limits.js";
import { ATTR, NO_SPAN, TRACING_OFF, type GatewayTracer } from "../ops/trace.js";
import { requestSpans, type TracedState } from "./tracing.js";

export const MAX_REQUEST_BYTES = 12 * 1024 * 1024;
export const MAX_CANCEL_BYTES = 64 * 1024;

export interface AppOptions {
  runs: RunService;
  /** The runs' streams and their replay logs (Last-Event-ID, --reconnect-grace). */
  feeds: RunFeeds;
  logger: Logger;
  allowedRoots: readonly string[];
  /** Who is asking (src/http/auth.ts); without it every caller is anonymous. */
  authenticate?: Authenticate;
  /** --user-request-limit: a user's requests per window. */
  userRequests?: UserRequestLimit;
  serverVersion: string;
  onEvent?: (event: AguiOutput) => void;
  /** --validate-events: a checker per stream. */
  selfCheck?: () => StreamSelfCheck;
  metrics?: GatewayMetrics;
  /** Mounted before the gateway's own routes (the console). */
  extraMiddleware?: Koa.Middleware[];
  /** Origins whose pages may call the API routes from a browser (--cors-origins); none: same origin only. */
  corsOrigins?: readonly string[];
  /** Request-body bytes buffered at once across connections (default 64 MiB). */
  bodyBudgetBytes?: number;
  /** Deadline for a whole request body (default 30 s). */
  bodyTimeoutMs?: number;
  /** A shared state store's readiness, shown on /health (which stays 200: readiness is not liveness). */
  stateStore?: () => { kind: string; status: string };
  /** OpenTelemetry tracing of the API routes (default off). */
  tracer?: GatewayTracer;
  /** POST /connect brings the most recent this many messages (default 200). */
  historyMessages?: number;
}

/** The agent a run invokes, as the GenAI conventions name it (the run span is "invoke_agent iac-code"). */
export const AGENT_NAME = "iac-code";

interface State extends TracedState {
  language: Language;
  /** This request's share of the body budget, held until its handler is done with the body. */
  bodyLease?: BodyLease;
  /** Set by `identify` on every route behind auth. */
  caller?: Caller;
}

export const DEFAULT_BODY_BUDGET_BYTES = 64 * 1024 * 1024;
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;

const ROUTES: Record<string, string[]> = {
  "/": ["POST"],
  "/health": ["GET", "HEAD"],
  "/metrics": ["GET"],
  "/capabilities": ["GET"],
  "/threads": ["GET"],
  "/connect": ["POST"],
};
const CANCEL_PATH = /^\/extensions\/iac-code\/v1\/executions\/[^/]+\/(cancel|subscribe)$/;
const THREAD_PATH = /^\/threads\/[^/]+$/;

export function createApp(options: AppOptions): Koa<State> {
  const app = new Koa<State>();
  const router = new Router<State>();
  // Who is asking, then whether that user may ask again so soon: in front of every route but /health.
  const requireAuth = compose([identify(options.authenticate ?? (() => ANONYMOUS)), limitUserRequests(options.userRequests)]);
  const callerOf = (ctx: { state: State }): Caller => ctx.state.caller ?? ANONYMOUS;
  const budget = new BodyBudget(options.bodyBudgetBytes ?? DEFAULT_BODY_BUDGET_BYTES);
  const bodyTimeoutMs = options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS;
  const holdsBody = async (ctx: Context & { state: State }, next: Next) => {
    const lease = budget.lease();
    ctx.state.bodyLease = lease;
    try {
      await next();
    } finally {
      lease.release();
    }
  };
  const readJsonBody = async (ctx: Context & { state: State }, limit: number, texts: BodyTexts) =>
    parseJsonObject(
      await readBody(ctx.req, limit, texts, { deadlineMs: bodyTimeoutMs, ...(ctx.state.bodyLease && { lease: ctx.state.bodyLease }) }),
      texts,
    );

  router.get("/health", (ctx) => {
    ctx.body = {
      status: "ok",
      protocol: "ag-ui",
      protocolVersion: PROTOCOL_VERSION,
      executionKernel: "a2a-1.0",
      serverVersion: options.serverVersion,
      ...(options.stateStore && { stateStore: options.stateStore() }),
    };
  });

  // Behind the same auth as `/`: it describes the agent that route serves.
  const capabilities = agentCapabilities(options.serverVersion);
  router.get("/capabilities", requireAuth, (ctx) => {
    ctx.body = capabilities;
  });

  const metrics = options.metrics;
  if (metrics) {
    router.get("/metrics", requireAuth, async (ctx) => {
      const text = await metricsText(metrics);
      ctx.type = text.contentType;
      ctx.body = text.body;
    });
  }

  const traced = requestSpans(options.tracer ?? TRACING_OFF);
  const runSpan = traced(`invoke_agent ${AGENT_NAME}`, "/", { [ATTR.operation]: "invoke_agent", [ATTR.agentName]: AGENT_NAME });
  router.post("/", requireAuth, runSpan, requireJson, holdsBody, async (ctx) => {
    const body = await readJsonBody(ctx, MAX_REQUEST_BYTES, RUN_BODY);
    ctx.state.language = normalizeLanguage(peekPreferredLanguage(body)) ?? ctx.state.language;
    // A client that lost the stream repeats the request with the id of the last event it has.
    const lastEventId = ctx.get("Last-Event-ID");
    if (lastEventId !== "") return rejoinRun(options, ctx, body, lastEventId, callerOf(ctx), ctx.state.span);
    const session = await admitRequest(options, body, ctx.state.language, callerOf(ctx), ctx.state.span ?? NO_SPAN);
    ctx.respond = false;
    startRunStream(options, ctx, session);
  });

  router.post("/connect", requireAuth, traced("agui.connect", "/connect"), requireJson, holdsBody, async (ctx) => {
    const body = await readJsonBody(ctx, MAX_REQUEST_BYTES, RUN_BODY);
    await connectThread(options, ctx, body, ctx.state.language, callerOf(ctx), ctx.state.span ?? NO_SPAN);
  });

  // A user's own threads; other callers own none (the trusted caller acts for users, it has no list of its own).
  router.get("/threads", requireAuth, async (ctx) => {
    const caller = callerOf(ctx);
    if (caller.kind !== "user") throw httpErrors.notFound();
    const { limit: limitText = "20", cursor, ...unknown } = ctx.query;
    const limit = typeof limitText === "string" && /^[1-9][0-9]{0,2}$/.test(limitText) ? Number(limitText) : Number.NaN;
    const invalid = () => new GatewayError(400, "INVALID_INPUT", messageText("threads.invalidQuery"));
    if (!(limit <= MAX_THREAD_PAGE) || (cursor !== undefined && typeof cursor !== "string") || Object.keys(unknown).length > 0) throw invalid();
    const page = await options.runs.threadsOf(caller.userId, cursor, limit);
    if (!page) throw invalid();
    ctx.body = page;
  });

  // One thread: a trusted server (a CopilotKit runtime that did not start the run) learns whether it runs, and its ids.
  router.get("/threads/:threadId", requireAuth, async (ctx) => {
    const thread = await options.runs.thread(callerOf(ctx), ctx.params.threadId!);
    if (!thread) throw connectErrors.notFound();
    ctx.body = thread;
  });

  router.delete("/threads/:threadId", requireAuth, async (ctx) => {
    const outcome = await options.runs.forget(callerOf(ctx), ctx.params.threadId!);
    if (outcome === "not_found") throw httpErrors.notFound();
    ctx.status = 204;
  });

  const cancelRoute = "/extensions/iac-code/v1/executions/:executionId/cancel";
  router.post(cancelRoute, requireAuth, traced("agui.cancel", cancelRoute), requireJson, holdsBody, async (ctx) => {
    const body = await readJsonBody(ctx, MAX_CANCEL_BYTES, CANCEL_BODY);
    const { threadId, rosInvocationId } = body;
    // rosInvocationId, the binding's proof, may be left out by the trusted caller and by users (src/runs/cancel.ts).
    const proofGiven = typeof rosInvocationId === "string" && rosInvocationId !== "";
    if (typeof threadId !== "string" || threadId === "" || (rosInvocationId !== undefined && !proofGiven)) {
      throw new GatewayError(400, "INVALID_INPUT", messageText("cancel.idsRequired"));
    }
    const executionId = ctx.params.executionId!;
    const outcome = await options.runs.cancel({ executionId, threadId, ...(proofGiven && { rosInvocationId }), caller: callerOf(ctx) }, ctx.state.span);
    if (outcome === "not_found") throw new GatewayError(404, "EXECUTION_NOT_FOUND", messageText("execution.notFound"));
    ctx.body = { executionId, status: outcome };
  });

  const observeRoute = "/extensions/iac-code/v1/executions/:executionId/subscribe";
  router.post(observeRoute, requireAuth, traced("agui.observe", observeRoute), requireJson, holdsBody, async (ctx) => {
    const body = await readJsonBody(ctx, MAX_CANCEL_BYTES, CANCEL_BODY);
    const { threadId, runId, rosInvocationId } = body;
    const strings = [threadId, runId, rosInvocationId].every((v) => typeof v === "string" && v !== "");
    const known = Object.keys(body).every((k) => ["threadId", "runId", "rosInvocationId", "afterSequence"].includes(k));
    if (!strings || !known) throw new GatewayError(400, "INVALID_INPUT", messageText("observe.invalid"));
    const language = ctx.state.language;
    const observation = { executionId: ctx.params.executionId!, threadId: threadId as string, runId: runId as string, rosInvocationId: rosInvocationId as string, language, caller: callerOf(ctx) };
    await observeRun(options, ctx, observation, ctx.get("Last-Event-ID"), ctx.state.span ?? NO_SPAN);
  });

  // Koa reports socket errors (a client hanging up mid-stream) here; they are not the gateway's failures.
  app.on("error", (error: unknown) => options.logger.debug({ err: error }, "connection error"));
  app.use(errorEnvelope(options.logger, options.metrics, bodyTimeoutMs));
  app.use(async (ctx, next) => {
    ctx.state.language = resolveAcceptLanguage(ctx.get("Accept-Language") || undefined);
    await next();
  });
  for (const middleware of options.extraMiddleware ?? []) app.use(middleware);
  // After the console (same origin only), before every API route, those of later features included.
  if (options.corsOrigins?.length) app.use(crossOrigin(options.corsOrigins));
  app.use(router.routes());
  app.use(async (ctx) => {
    // Nothing matched: a JSON 405 for a known path, a JSON 404 otherwise (never Koa's plain text).
    const allowed = ROUTES[ctx.path] ?? (CANCEL_PATH.test(ctx.path) ? ["POST"] : THREAD_PATH.test(ctx.path) ? ["GET", "DELETE"] : undefined);
    if (!allowed) throw httpErrors.notFound();
    ctx.set("Allow", allowed.join(", "));
    throw httpErrors.methodNotAllowed();
  });
  return app;
}

function errorEnvelope(logger: Logger, metrics: GatewayMetrics | undefined, bodyTimeoutMs: number) {
  return async (ctx: Context & { state: State }, next: Next) => {
    try {
      await next();
    } catch (error) {
      const http = gatewayErrorOf(error);
      if (http.exposure === "internal") logger.error({ err: error, path: ctx.path, ...callerLogFields(ctx.state.caller ?? ANONYMOUS) }, "unexpected error");
      if (http.code === "SERVER_BUSY") metrics?.refusedRequests.inc({ reason: "budget" });
      if (http.code === "REQUEST_TIMEOUT") metrics?.refusedRequests.inc({ reason: "deadline" });
      if (ctx.headerSent || !ctx.writable) return;
      if (http.status !== 408) await drainUnreadBody(ctx.req, bodyTimeoutMs);
      ctx.status = http.status;
      ctx.body = envelopeOf(http, ctx.state.language ?? "en");
      if (http.code === "SERVER_BUSY") ctx.set("Retry-After", "1");
      if (http.code === "AUTH_UNAVAILABLE") ctx.set("Retry-After", "5");
      if (http instanceof LimitError) ctx.set("Retry-After", String(http.retryAfterSeconds));
      if (http.status === 401) ctx.set("WWW-Authenticate", wwwAuthenticate(ctx));
      // A refused body is drained behind the answer (src/http/body.ts); a late one is not waited for.
      if (http.status === 408) {
        ctx.set("Connection", "close");
        ctx.res.once("finish", () => ctx.req.socket.destroy());
      }
    }
  };
}

/** Middleware one after the other, as one. */
function compose(steps: readonly ((ctx: Context, next: Next) => Promise<void>)[]) {
  return (ctx: Context, next: Next): Promise<void> => {
    const dispatch = async (i: number): Promise<void> => (i < steps.length ? steps[i]!(ctx, () => dispatch(i + 1)) : next());
    return dispatch(0);
  };
}

async function requireJson(ctx: Context, next: Next) {
  const type = (ctx.get("Content-Type").split(";")[0] ?? "").trim().toLowerCase();
  if (type !== "application/json") throw httpErrors.unsupportedMediaType();
  await next();
}
