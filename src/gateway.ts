// Wires the layers into a running gateway: config → A2A client → run service → Koa on node:http.
import { readFileSync } from "node:fs";
import { Writable, type Duplex } from "node:stream";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type Koa from "koa";
import pino, { type Logger } from "pino";
import type { AguiOutput } from "../operators/index.js";
import { A2AClient, SECRET_METADATA_KEYS } from "./a2a/index.js";
import { consoleRoutes } from "./console/route.js";
import { createApp } from "./http/app.js";
import { DEFAULT_REPLAY_BOUNDS } from "./http/replay-log.js";
import { RunFeeds } from "./http/run-feed.js";
import { GatewayError, errorEnvelope as envelopeOf } from "./errors.js";
import { messageText } from "./i18n/index.js";
import { builtInAuthenticate, type Authenticate } from "./http/auth.js";
import { createJwtVerifier, type JwtOptions } from "./http/jwt.js";
import { createSelfCheck } from "./http/self-check.js";
import { createMetrics, type GatewayMetrics } from "./ops/metrics.js";
import { startIdleMonitor, type IdleMonitor } from "./ops/idle-monitor.js";
import { captureUnhandledErrors } from "./ops/unhandled.js";
import { startTracing } from "./ops/trace.js";
import { allowedRootsFromEnv, exampleWorkspace } from "./runs/cwd.js";
import { RunService } from "./runs/service.js";
import { openStateStore } from "./state/open-store.js";
import type { ThreadStore } from "./state/thread-store.js";

export interface GatewayOptions {
  host: string;
  port: number;
  a2aUrl: string;
  a2aToken?: string;
  /** The static bearer token: the trusted server-side caller (a CopilotKit runtime). */
  authToken?: string;
  /** Users' JWTs (docs/auth.md); with authToken, both are accepted. */
  jwt?: JwtOptions;
  /** An embedder's own check, used instead of authToken and jwt. */
  authenticate?: Authenticate;
  allowedRoots?: readonly string[];
  /** Durable thread files live here; without it (and without `store` or `stateStore`) state is kept in memory. */
  stateDir?: string;
  store?: ThreadStore;
  /** redis:// or rediss://: thread state shared by several replicas (wins over stateDir). */
  stateStore?: string;
  /** Password for stateStore when its URL has none (IAC_CODE_AGUI_REDIS_PASSWORD); never logged. */
  redisPassword?: string;
  /** With stateStore: how long a replica's claim on a thread outlives it (default 30). */
  leaseTtlSeconds?: number;
  interruptTtlSeconds?: number;
  heartbeatSeconds?: number;
  upstreamIdleTimeoutSeconds?: number;
  /** HTTP/2 (h2c on http://) to the A2A endpoint; see A2AClientOptions.http2. */
  a2aHttp2?: boolean;
  logger?: Logger;
  onEvent?: (event: AguiOutput) => void;
  /** Parse every outgoing event with EventSchema and verify every run; violations are logged and counted. */
  validateEvents?: boolean;
  extraMiddleware?: Koa.Middleware[];
  /** Origins whose pages may call the API from a browser (CORS); unset: same origin only. */
  corsOrigins?: readonly string[];
  /** Serve the web console at /console (needs the built page in dist/console). */
  console?: { demo: boolean };
  /** > 0: call onIdle once no run is active and no interrupt is pending for that long. */
  idleShutdownSeconds?: number;
  onIdle?: () => void;
  /** Run ids remembered per thread (default 256). */
  runIdWindow?: number;
  /** POST /connect brings the thread's most recent this many messages (default 200). */
  historyMessages?: number;
  /** How long a run whose client went away waits for it to reconnect (default 0: it is cancelled at once). */
  reconnectGraceSeconds?: number;
  /** What is kept of each run's stream for a reconnect; defaults: 10,000 events, 4 MiB, 60 s after its end, 256 MiB of ended runs in all. */
  replay?: { events?: number; mib?: number; retentionSeconds?: number; budgetMib?: number };
  /** Client-side budgets (docs/configuration.md "Limits"); defaults: 64 MiB, 30 s, 20 s, 5 s, 16,384. */
  bodyBudgetMib?: number;
  bodyTimeoutSeconds?: number;
  headersTimeoutSeconds?: number;
  keepAliveTimeoutSeconds?: number;
  maxConnections?: number;
  /** Per-user limits (users with JWTs or an embedder's authenticate); 0 or absent: none. */
  maxActiveRunsPerUser?: number;
  userRequestLimit?: number;
  userRequestIntervalSeconds?: number;
  /**
   * OpenTelemetry traces over OTLP/HTTP (default off; the CLI turns it on for --tracing or OTEL_EXPORTER_OTLP_ENDPOINT).
   * The exporter reads the standard OTEL_* variables; `exporterUrl` (…/v1/traces) overrides their endpoint.
   */
  tracing?: boolean | { exporterUrl: string };
}

export interface RunningGateway {
  url: string;
  port: number;
  runs: RunService;
  metrics: GatewayMetrics;
  server: Server;
  /** The workspace roots a run's cwd must lie under, as configured (or the default: the server's directory). */
  allowedRoots: readonly string[];
  /** Start-up recovery of runs that were active when a previous process stopped: how many were cancelled. */
  recovery: Promise<number>;
  close(): Promise<void>;
}

export const SERVER_VERSION: string = readPackageVersion();
/** How long a closing gateway waits for its last spans to reach the collector. */
const TRACE_FLUSH_MS = 5_000;

function bounded(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not done within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
/** The console page is built next to the compiled code (dist/console), also when running from src in tests. */
const CONSOLE_DIST = fileURLToPath(new URL(import.meta.url.includes("/dist/") ? "../console/" : "../dist/console/", import.meta.url));

function readPackageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "agui-gateway" && pkg.version) return pkg.version;
    } catch {
      // not here; look one level up
    }
    dir = dirname(dir);
  }
  return "0.0.0";
}

/** Secrets never reach a log line: request metadata keys and auth headers are censored wherever they appear. */
export function createLogger(options: { debug?: boolean; destination?: NodeJS.WritableStream; pretty?: boolean } = {}): Logger {
  const paths = ["req.headers.authorization", "headers.authorization", "authorization", "token", "a2aToken", "authToken",
    "llmApiKey", "llmHeaders", "accessKeyId", "accessKeySecret", "securityToken",
    ...SECRET_METADATA_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`])];
  return pino(
    { level: options.debug ? "debug" : "info", redact: { paths, censor: "[redacted]" }, base: { service: "agui-gateway" } },
    options.pretty ? prettyLines(options.destination ?? process.stderr) : (options.destination ?? process.stderr),
  );
}

const LEVELS: Record<number, string> = { 10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL" };

/** For a terminal: `12:00:01 INFO run finished threadId=… outcome=success`, one line per record. */
function prettyLines(out: NodeJS.WritableStream): NodeJS.WritableStream {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line === "") continue;
        try {
          const { time, level, msg, service: _service, ...rest } = JSON.parse(line) as Record<string, unknown>;
          const fields = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
          const clock = new Date(Number(time)).toISOString().slice(11, 19);
          out.write(`${clock} ${LEVELS[Number(level)] ?? level} ${String(msg ?? "")}${fields.length ? ` ${fields.join(" ")}` : ""}\n`);
        } catch {
          out.write(`${line}\n`);
        }
      }
      done();
    },
  });
}

/** A gateway without its listening socket: the Koa app and the layers behind it (startGateway, src/server.ts). */
export interface AssembledGateway {
  app: Koa;
  runs: RunService;
  metrics: GatewayMetrics;
  logger: Logger;
  allowedRoots: readonly string[];
  bodyTimeoutMs: number;
  /** Spans are exported (--tracing or OTEL_EXPORTER_OTLP_ENDPOINT). */
  tracing: boolean;
  /** After the last stream: the A2A client, the state store and the trace exporter. */
  closeConnections(): Promise<void>;
}

export type AssemblyOptions = Omit<GatewayOptions, "host" | "port" | "idleShutdownSeconds" | "onIdle" | "headersTimeoutSeconds" | "keepAliveTimeoutSeconds" | "maxConnections"> & {
  onActivity?: () => void;
};

export async function assembleGateway(options: AssemblyOptions): Promise<AssembledGateway> {
  const logger = options.logger ?? createLogger();
  const metrics = createMetrics();
  const tracing = options.tracing;
  const tracer = await startTracing({
    enabled: tracing !== undefined && tracing !== false,
    serviceVersion: SERVER_VERSION,
    ...(typeof tracing === "object" && { exporterUrl: tracing.exporterUrl }),
  });
  const a2a = new A2AClient({
    url: options.a2aUrl,
    ...(options.a2aToken !== undefined && { token: options.a2aToken }),
    idleTimeoutMs: (options.upstreamIdleTimeoutSeconds ?? 0) * 1000,
    ...(options.a2aHttp2 && { http2: true }),
    observeLatency: (method, seconds) => metrics.upstreamLatency.observe({ method }, seconds),
  });
  const state = await openStateStore({ ...options, logger, metrics }).catch(async (error: unknown) => {
    await tracer.shutdown();
    throw error;
  });
  const runs = new RunService({
    metrics,
    ...(options.onActivity && { onActivity: options.onActivity }),
    store: state.store,
    ...(state.replicaId !== undefined && { replicaId: state.replicaId }),
    ...(state.relay && { relay: state.relay }),
    ...(options.leaseTtlSeconds !== undefined && { leaseTtlMs: options.leaseTtlSeconds * 1000 }),
    a2a,
    logger,
    tracer,
    interruptTtlMs: (options.interruptTtlSeconds ?? 540) * 1000,
    heartbeatMs: (options.heartbeatSeconds ?? 15) * 1000,
    orphanGraceMs: (options.reconnectGraceSeconds ?? 0) * 1000,
    ...(options.runIdWindow !== undefined && { runIdWindow: options.runIdWindow }),
    ...(options.maxActiveRunsPerUser && { userRuns: { counters: state.counters, max: options.maxActiveRunsPerUser } }),
  });
  const bodyTimeoutMs = (options.bodyTimeoutSeconds ?? 30) * 1000;
  const allowedRoots = options.allowedRoots ?? allowedRootsFromEnv(process.env, process.cwd());
  const feeds = new RunFeeds(
    {
      maxEvents: options.replay?.events ?? DEFAULT_REPLAY_BOUNDS.maxEvents,
      maxBytes: options.replay?.mib !== undefined ? options.replay.mib * 1024 * 1024 : DEFAULT_REPLAY_BOUNDS.maxBytes,
      retentionMs: options.replay?.retentionSeconds !== undefined ? options.replay.retentionSeconds * 1000 : DEFAULT_REPLAY_BOUNDS.retentionMs,
      endedBudgetBytes: options.replay?.budgetMib !== undefined ? options.replay.budgetMib * 1024 * 1024 : DEFAULT_REPLAY_BOUNDS.endedBudgetBytes,
    },
    (options.reconnectGraceSeconds ?? 0) * 1000,
    state.replay,
  );
  const app = createApp({
    runs,
    feeds,
    ...(options.historyMessages !== undefined && { historyMessages: options.historyMessages }),
    logger,
    allowedRoots,
    serverVersion: SERVER_VERSION,
    authenticate: options.authenticate ?? builtInAuthenticate({
      ...(options.authToken !== undefined && { authToken: options.authToken }),
      ...(options.jwt && { verifyJwt: createJwtVerifier(options.jwt, (reason) => logger.debug({ reason }, "bearer token refused")) }),
    }),
    ...(options.onEvent !== undefined && { onEvent: options.onEvent }),
    ...(options.userRequestLimit && {
      userRequests: { counters: state.counters, limit: options.userRequestLimit, windowMs: (options.userRequestIntervalSeconds ?? 60) * 1000 },
    }),
    metrics,
    tracer,
    bodyBudgetBytes: (options.bodyBudgetMib ?? 64) * 1024 * 1024,
    bodyTimeoutMs,
    ...(state.health && { stateStore: state.health }),
    ...(options.corsOrigins?.length && { corsOrigins: options.corsOrigins }),
    ...(options.validateEvents && { selfCheck: createSelfCheck(logger, { violation: (kind) => metrics.validationViolations.inc({ kind }) }) }),
    extraMiddleware: [
      ...(options.console ? [consoleRoutes({ distDir: CONSOLE_DIST, cwd: exampleWorkspace(allowedRoots), demo: options.console.demo })] : []),
      ...(options.extraMiddleware ?? []),
    ],
  });
  return {
    app,
    runs,
    metrics,
    logger,
    allowedRoots,
    bodyTimeoutMs,
    tracing: tracer.enabled,
    closeConnections: async () => {
      await a2a.close();
      await state.close();
      // After the runs' ends: their spans are exported before the process goes (a collector that does not answer
      // holds the shutdown back no longer than this).
      await bounded(tracer.shutdown(), TRACE_FLUSH_MS).catch((error: unknown) => logger.warn({ err: error }, "traces could not be exported"));
    },
  };
}

// Node's own answers to a request it could not parse (node:_http_server), kept for everything but oversized headers.
const NODE_CLIENT_ERRORS: Readonly<Record<string, string>> = {
  HPE_CHUNK_EXTENSIONS_OVERFLOW: "413 Payload Too Large",
  ERR_HTTP_REQUEST_TIMEOUT: "408 Request Timeout",
};

/**
 * Headers over Node's limit (16 KiB; a 1 MB bearer token) never reach Koa: they still get the JSON envelope, in
 * English since no header, Accept-Language included, was read.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (socket.writable && (socket as Duplex & { bytesWritten?: number }).bytesWritten === 0) {
    if (error.code === "HPE_HEADER_OVERFLOW") {
      const body = JSON.stringify(envelopeOf(new GatewayError(431, "REQUEST_HEADERS_TOO_LARGE", messageText("http.headersTooLarge")), "en"));
      socket.write(
        `HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    } else {
      socket.write(`HTTP/1.1 ${NODE_CLIENT_ERRORS[error.code ?? ""] ?? "400 Bad Request"}\r\nConnection: close\r\n\r\n`);
    }
  }
  socket.destroy();
}

export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  let idle: IdleMonitor | undefined;
  const { app, runs, metrics, logger, allowedRoots, bodyTimeoutMs, tracing, closeConnections } = await assembleGateway({ ...options, onActivity: () => idle?.touch() });
  const headersTimeoutMs = (options.headersTimeoutSeconds ?? 20) * 1000;
  const server = createServer(
    {
      // Node's own deadlines, checked every second: headers, and the whole request as a backstop to the
      // body deadline the routes apply (it also covers bodies sent to routes that never read them). Both end
      // when the request has arrived, so SSE responses that last hours are not affected.
      headersTimeout: headersTimeoutMs,
      requestTimeout: headersTimeoutMs + bodyTimeoutMs + 1_000,
      connectionsCheckingInterval: 1_000,
      keepAliveTimeout: (options.keepAliveTimeoutSeconds ?? 5) * 1000,
    },
    app.callback(),
  );
  // Beyond it new sockets are closed at once, so file descriptors are left for streams, state files and /health.
  server.maxConnections = options.maxConnections ?? 16_384;
  server.on("clientError", answerClientError);
  server.on("drop", () => metrics.refusedRequests.inc({ reason: "connections" }));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  }).catch(async (error: unknown) => {
    await closeConnections();
    throw error;
  });
  const releaseUnhandled = captureUnhandledErrors({ logger, count: () => metrics.unhandledErrors.inc() });
  const { port } = server.address() as AddressInfo;
  const idleSeconds = options.idleShutdownSeconds ?? 0;
  if (idleSeconds > 0 && options.onIdle) {
    const onIdle = options.onIdle;
    idle = startIdleMonitor({ idleMs: idleSeconds * 1000, isIdle: () => runs.isIdle, onIdle: () => {
      logger.info({ idleShutdownSeconds: idleSeconds }, "idle: shutting down");
      onIdle();
    } });
  }
  // In the background: a large state directory must not delay serving.
  const recovery = runs.recoverAbandonedRuns().then((n) => {
    if (n > 0) logger.warn({ recovered: n }, "cancelled the A2A tasks of runs that were active when the gateway stopped");
    return n;
  });
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  logger.info(
    {
      host: options.host,
      port,
      a2aUrl: options.a2aUrl,
      allowedRoots,
      ...(options.corsOrigins?.length && { corsOrigins: options.corsOrigins }),
      ...(tracing && { tracing: true }),
    },
    "gateway listening",
  );
  return {
    url: `http://${host}:${port}/`,
    port,
    runs,
    metrics,
    server,
    allowedRoots,
    recovery,
    close: async () => {
      idle?.stop();
      runs.stopAdmitting();
      await recovery;
      // Closing the sockets ends every stream: interrupted runs are already durable, active normal runs
      // are cancelled upstream by their release, which drain() waits for (bounded).
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await runs.drain(5_000);
      await closeConnections();
      releaseUnhandled();
    },
  };
}
