// `agui-gateway/server`: the gateway inside an existing Koa service. The host mounts one middleware under a path
// of its choice and says who is asking with its own authenticate(ctx) (its session, its SSO); the gateway
// serves its routes below that path exactly as the standalone server does, and nothing else.
import type { Context, Middleware, Next } from "koa";
import type { Logger } from "pino";
import type { AguiOutput } from "../operators/index.js";
import { assembleGateway, type AssemblyOptions } from "./gateway.js";
import type { Authenticate } from "./http/auth.js";
import type { RunService } from "./runs/service.js";
import type { GatewayMetrics } from "./ops/metrics.js";

export type { Authenticate, Caller } from "./http/auth.js";
export { GatewayError } from "./errors.js";

export interface GatewayMiddlewareOptions extends Omit<AssemblyOptions, "authToken" | "jwt" | "authenticate" | "console" | "extraMiddleware" | "onActivity"> {
  /** Where the gateway's routes live in the host's URL space, e.g. "/agent" (POST /agent runs, GET /agent/health …). */
  prefix: string;
  /**
   * Who is asking, for every route but /health: `{kind:"user", userId}` (owns the threads it creates and sees no
   * other), `{kind:"trusted"}` (a server-side caller that may act on any thread), or throw a GatewayError to refuse
   * (401, 403 … with the gateway's localized envelope).
   */
  authenticate: Authenticate;
  logger?: Logger;
  onEvent?: (event: AguiOutput) => void;
}

export interface GatewayMiddleware {
  middleware: Middleware;
  runs: RunService;
  metrics: GatewayMetrics;
  /** Stops admitting runs, waits (bounded) for active streams to end, closes the A2A client and the state store. */
  close(): Promise<void>;
}

export async function createGatewayMiddleware(options: GatewayMiddlewareOptions): Promise<GatewayMiddleware> {
  const prefix = normalizePrefix(options.prefix);
  const gateway = await assembleGateway(options);
  const chain = gateway.app.middleware;
  const recovery = gateway.runs.recoverAbandonedRuns().catch((error: unknown) => {
    gateway.logger.error({ err: error }, "start-up recovery failed");
    return 0;
  });
  const middleware = async (ctx: Context, next: Next) => {
    const rest = below(prefix, ctx.path);
    if (rest === undefined) return next();
    const hostPath = ctx.path;
    ctx.path = rest;
    try {
      await runChain(chain, ctx);
    } finally {
      // A stream goes on after the chain returns (it writes to ctx.res itself); the host sees its own path again.
      ctx.path = hostPath;
    }
  };
  return {
    middleware,
    runs: gateway.runs,
    metrics: gateway.metrics,
    close: async () => {
      gateway.runs.stopAdmitting();
      await recovery;
      await gateway.runs.drain(5_000);
      await gateway.closeConnections();
    },
  };
}

/** "/agent/" and "agent" → "/agent"; "/" → "". */
function normalizePrefix(prefix: string): string {
  const trimmed = prefix.replace(/\/+$/, "");
  return trimmed === "" ? "" : trimmed.startsWith("/") ? trimmed : `/${trimmed}`;
}

/** The gateway's path for a host path under `prefix` ("/agent" → "/", "/agent/health" → "/health"), else undefined. */
function below(prefix: string, path: string): string | undefined {
  if (path === prefix) return "/";
  if (!path.startsWith(`${prefix}/`)) return undefined;
  return path.slice(prefix.length);
}

/** The gateway app's own middleware, in its order, on the host's context (what koa-mount does). */
function runChain(chain: readonly Middleware[], ctx: Context): Promise<void> {
  const dispatch = async (i: number): Promise<void> => {
    const step = chain[i];
    if (step) await step(ctx as never, () => dispatch(i + 1));
  };
  return dispatch(0);
}
