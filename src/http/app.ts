// The Koa application: middleware that each do one thing, composed here in the order of
// reference-adapter §2.4 (auth → content type → size → JSON → object → language → envelope → admission).
import { createHash, timingSafeEqual } from "node:crypto";
import Router from "@koa/router";
import { PROTOCOL_VERSION } from "@ag-ui/core";
import Koa, { type Context, type Next } from "koa";
import type { Logger } from "pino";
import type { AguiOutput } from "../../operators/index.js";
import { normalizeLanguage, resolveAcceptLanguage, type Language } from "../i18n/index.js";
import { resolveCwd } from "../runs/cwd.js";
import { INPUT_ERROR_BASES, InputError, latestUserMessage, parseRunAgentInput, peekPreferredLanguage } from "../runs/input.js";
import { buildUserParts } from "../runs/parts.js";
import { runDigest, type RunService } from "../runs/service.js";
import { BodyBudget, CANCEL_BODY, RUN_BODY, drainUnreadBody, parseJsonObject, readBody, type BodyLease, type BodyTexts } from "./body.js";
import { GatewayError, errorEnvelope as envelopeOf, gatewayErrorOf } from "../errors.js";
import { httpErrors } from "./errors.js";
import type { StreamSelfCheck } from "./self-check.js";
import { acceptsProto, writeSse } from "./sse.js";
import { agentCapabilities } from "./capabilities.js";
import { metricsText, type GatewayMetrics } from "../ops/metrics.js";

export const MAX_REQUEST_BYTES = 12 * 1024 * 1024;
export const MAX_CANCEL_BYTES = 64 * 1024;

export interface AppOptions {
  runs: RunService;
  logger: Logger;
  allowedRoots: readonly string[];
  authToken?: string;
  serverVersion: string;
  onEvent?: (event: AguiOutput) => void;
  /** --validate-events: a checker per stream. */
  selfCheck?: () => StreamSelfCheck;
  metrics?: GatewayMetrics;
  /** Mounted before the gateway's own routes (the console). */
  extraMiddleware?: Koa.Middleware[];
  /** Request-body bytes buffered at once across connections (default 64 MiB). */
  bodyBudgetBytes?: number;
  /** Deadline for a whole request body (default 30 s). */
  bodyTimeoutMs?: number;
}

interface State {
  language: Language;
  /** This request's share of the body budget, held until its handler is done with the body. */
  bodyLease?: BodyLease;
}

export const DEFAULT_BODY_BUDGET_BYTES = 64 * 1024 * 1024;
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;

const ROUTES: Record<string, string[]> = {
  "/": ["POST"],
  "/health": ["GET", "HEAD"],
  "/metrics": ["GET"],
  "/capabilities": ["GET"],
};
const CANCEL_PATH = /^\/extensions\/iac-code\/v1\/executions\/[^/]+\/(cancel|subscribe)$/;

export function createApp(options: AppOptions): Koa<State> {
  const app = new Koa<State>();
  const router = new Router<State>();
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
    };
  });

  // Behind the same auth as `/`: it describes the agent that route serves.
  const capabilities = agentCapabilities(options.serverVersion);
  router.get("/capabilities", requireAuth(options.authToken), (ctx) => {
    ctx.body = capabilities;
  });

  const metrics = options.metrics;
  if (metrics) {
    router.get("/metrics", requireAuth(options.authToken), async (ctx) => {
      const text = await metricsText(metrics);
      ctx.type = text.contentType;
      ctx.body = text.body;
    });
  }

  router.post("/", requireAuth(options.authToken), requireJson, holdsBody, async (ctx) => {
    const body = await readJsonBody(ctx, MAX_REQUEST_BYTES, RUN_BODY);
    ctx.state.language = normalizeLanguage(peekPreferredLanguage(body)) ?? ctx.state.language;
    const admitted = await admitRun(options, body, ctx.state.language);
    ctx.respond = false;
    const check = options.selfCheck?.();
    // Counted locally and added to the metric once per stream: prom-client per event costs on the hot path.
    const counts = new Map<string, number>();
    const onEvent = (event: AguiOutput) => {
      check?.onEvent(event);
      counts.set(event.type, (counts.get(event.type) ?? 0) + 1);
      options.onEvent?.(event);
    };
    metrics?.activeStreams.inc();
    const res = ctx.res;
    // Not awaited: the middleware chain unwinds now instead of holding a suspended frame per middleware for
    // as long as the stream lasts (hours, for a parked interrupt). Everything after this point is the stream's.
    const onFailure = (error: unknown) => {
      admitted.logger.error({ err: error }, "an event could not be written; the run ends here");
      metrics?.streamWriteFailures.inc();
      options.runs.abandon(admitted);
    };
    void writeSse(res, (gate) => options.runs.stream(admitted, gate), { onEvent, onFailure, proto: acceptsProto(ctx.get("Accept")) })
      .then((ended) => {
        // A run the client walked away from is incomplete by the client's choice, not the gateway's.
        if (ended === "completed") check?.end();
      })
      .catch((error: unknown) => {
        admitted.logger.error({ err: error }, "stream failed");
        res.destroy();
      })
      .finally(() => {
        metrics?.activeStreams.dec();
        for (const [type, n] of counts) metrics?.eventsOut.inc({ type }, n);
      });
  });

  router.post("/extensions/iac-code/v1/executions/:executionId/cancel", requireAuth(options.authToken), requireJson, holdsBody, async (ctx) => {
    const body = await readJsonBody(ctx, MAX_CANCEL_BYTES, CANCEL_BODY);
    const { threadId, rosInvocationId } = body;
    if (typeof threadId !== "string" || threadId === "" || typeof rosInvocationId !== "string" || rosInvocationId === "") {
      throw new GatewayError(400, "INVALID_INPUT", "threadId and rosInvocationId are required.");
    }
    const executionId = ctx.params.executionId!;
    const outcome = await options.runs.cancel(executionId, threadId, rosInvocationId);
    if (outcome === "not_found") throw new GatewayError(404, "EXECUTION_NOT_FOUND", "The execution was not found.");
    ctx.body = { executionId, status: outcome };
  });

  router.post("/extensions/iac-code/v1/executions/:executionId/subscribe", requireAuth(options.authToken), requireJson, holdsBody, async (ctx) => {
    const body = await readJsonBody(ctx, MAX_CANCEL_BYTES, CANCEL_BODY);
    const { threadId, runId, rosInvocationId } = body;
    const strings = [threadId, runId, rosInvocationId].every((v) => typeof v === "string" && v !== "");
    const known = Object.keys(body).every((k) => ["threadId", "runId", "rosInvocationId", "afterSequence"].includes(k));
    if (!strings || !known) throw new GatewayError(400, "INVALID_INPUT", "The observation request is invalid.");
    const language = ctx.state.language;
    const events = await options.runs.observe(ctx.params.executionId!, threadId as string, runId as string, rosInvocationId as string, language);
    ctx.respond = false;
    await writeSse(ctx.res, () => events, {
      proto: acceptsProto(ctx.get("Accept")),
      onFailure: (error) => {
        options.logger.error({ err: error }, "an observed event could not be written");
        metrics?.streamWriteFailures.inc();
      },
    });
  });

  // Koa reports socket errors (a client hanging up mid-stream) here; they are not the gateway's failures.
  app.on("error", (error: unknown) => options.logger.debug({ err: error }, "connection error"));
  app.use(errorEnvelope(options.logger, options.metrics, bodyTimeoutMs));
  app.use(async (ctx, next) => {
    ctx.state.language = resolveAcceptLanguage(ctx.get("Accept-Language") || undefined);
    await next();
  });
  for (const middleware of options.extraMiddleware ?? []) app.use(middleware);
  app.use(router.routes());
  app.use(async (ctx) => {
    // Nothing matched: a JSON 405 for a known path, a JSON 404 otherwise (never Koa's plain text).
    const allowed = ROUTES[ctx.path] ?? (CANCEL_PATH.test(ctx.path) ? ["POST"] : undefined);
    if (!allowed) throw httpErrors.notFound();
    ctx.set("Allow", allowed.join(", "));
    throw httpErrors.methodNotAllowed();
  });
  return app;
}

async function admitRun(options: AppOptions, body: Record<string, unknown>, language: Language) {
  const request = parseRunAgentInput(body);
  if (request.ignoredForwardedProps > 0) options.metrics?.forwardedPropsIgnored.inc(request.ignoredForwardedProps);
  const cwd = await resolveCwd(request.iacCode.cwd, options.allowedRoots);
  let parts: ReturnType<typeof buildUserParts> = [];
  let messageId = `agui-resume-${request.runId}`;
  if (request.resume === undefined) {
    const message = latestUserMessage(request.messages);
    if (!message) throw new InputError(INPUT_ERROR_BASES.noUserMessage, "messages");
    parts = buildUserParts(message, `messages.${request.messages.lastIndexOf(message)}`);
    messageId = message.id;
  }
  const runLanguage = normalizeLanguage(request.iacCode.preferredLanguage) ?? language;
  return await options.runs.admit(request, runDigest(body), cwd, parts, messageId, runLanguage);
}

function errorEnvelope(logger: Logger, metrics: GatewayMetrics | undefined, bodyTimeoutMs: number) {
  return async (ctx: Context & { state: State }, next: Next) => {
    try {
      await next();
    } catch (error) {
      const http = gatewayErrorOf(error);
      if (http.exposure === "internal") logger.error({ err: error, path: ctx.path }, "unexpected error");
      if (http.code === "SERVER_BUSY") metrics?.refusedRequests.inc({ reason: "budget" });
      if (http.code === "REQUEST_TIMEOUT") metrics?.refusedRequests.inc({ reason: "deadline" });
      if (ctx.headerSent || !ctx.writable) return;
      if (http.status !== 408) await drainUnreadBody(ctx.req, bodyTimeoutMs);
      ctx.status = http.status;
      ctx.body = envelopeOf(http, ctx.state.language ?? "en");
      if (http.code === "SERVER_BUSY") ctx.set("Retry-After", "1");
      // A refused body is drained behind the answer (src/http/body.ts); a late one is not waited for.
      if (http.status === 408) {
        ctx.set("Connection", "close");
        ctx.res.once("finish", () => ctx.req.socket.destroy());
      }
    }
  };
}

function requireAuth(token: string | undefined) {
  const expected = token ? digestOf(token) : undefined;
  return async (ctx: Context, next: Next) => {
    if (expected) {
      const header = ctx.get("Authorization");
      const space = header.indexOf(" ");
      const scheme = space < 0 ? "" : header.slice(0, space);
      const presented = space < 0 ? "" : header.slice(space + 1);
      // Compare digests: equal length always, so the comparison time says nothing about the token.
      if (scheme.toLowerCase() !== "bearer" || !timingSafeEqual(digestOf(presented), expected)) throw httpErrors.unauthorized();
    }
    await next();
  };
}

function digestOf(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

async function requireJson(ctx: Context, next: Next) {
  const type = (ctx.get("Content-Type").split(";")[0] ?? "").trim().toLowerCase();
  if (type !== "application/json") throw httpErrors.unsupportedMediaType();
  await next();
}
