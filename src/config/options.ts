// The option table: every setting is written here once. The configuration's types, its defaults, the
// zod schema, flag parsing, env lookup, YAML keys and the --help text are all derived from it.
import path from "node:path";
import { z } from "zod";
import { ASYMMETRIC_ALGORITHMS } from "../jwt-algorithms.js";
import { redisUrlProblem } from "../state/redis-url.js";

/** How a string from argv or env is turned into a typed value before validation. */
export type OptionKind = "string" | "path" | "port" | "seconds" | "count" | "boolean" | "pathList" | "originList";

export interface OptionSpec<S extends z.ZodType = z.ZodType> {
  kind: OptionKind;
  /** Validation of the merged value; its messages are the tail of "<source label> …". */
  schema: S;
  /** Used when no source sets the option; absent means unset (or derived, for stateDir and console). */
  default?: z.output<S>;
  /** The help text's "default …"; `String(default)` when absent. */
  defaultText?: string;
  flag?: string;
  shortFlag?: string;
  /** Checked in order; the first non-empty one wins. */
  env?: readonly string[];
  /** Normalised spelling (`_`); the help text shows the `-` spelling. */
  yamlKey?: string;
  valueName?: string;
  description: string;
  /** An empty string means "unset" (URLs, tokens, paths). */
  emptyIsUnset?: true;
}

/** Keeps each entry's own schema type, so the merged values' type can be inferred from the table. */
const option = <S extends z.ZodType>(spec: OptionSpec<S>): OptionSpec<S> => spec;

// Messages are the tail of "<source label> must be …".
// Node clamps timer delays above 2^31-1 ms to 1 ms, so a larger value would fire at once.
const MAX_TIMER_SECONDS = Math.floor((2 ** 31 - 1) / 1000);
const PORT_MESSAGE = "must be an integer between 0 and 65535.";
const NON_NEGATIVE_SECONDS = "must be a non-negative number of seconds.";
const POSITIVE_SECONDS = "must be a positive number of seconds.";
const TOO_MANY_SECONDS = `must be at most ${MAX_TIMER_SECONDS} seconds.`;
const BOOLEAN_MESSAGE = "must be true or false.";
const STRING_MESSAGE = "must be a string.";
const COUNT_MESSAGE = "must be a positive integer.";

const text = () => z.string({ error: STRING_MESSAGE });
const flag = () => z.boolean({ error: BOOLEAN_MESSAGE });
const count = (min: number) =>
  z
    .number({ error: COUNT_MESSAGE })
    .int(COUNT_MESSAGE)
    .min(min, min === 1 ? COUNT_MESSAGE : `must be an integer of at least ${min}.`)
    .max(2 ** 31 - 1, COUNT_MESSAGE);
const positiveSeconds = () =>
  z.number({ error: POSITIVE_SECONDS }).positive(POSITIVE_SECONDS).max(MAX_TIMER_SECONDS, TOO_MANY_SECONDS);
const nonNegativeSeconds = () =>
  z.number({ error: NON_NEGATIVE_SECONDS }).min(0, NON_NEGATIVE_SECONDS).max(MAX_TIMER_SECONDS, TOO_MANY_SECONDS);
const pathList = () =>
  z
    .array(z.string({ error: "must be a list of paths." }).min(1, "must not contain empty paths."), {
      error: "must be a list of paths.",
    })
    .min(1, "must list at least one path.");

const ORIGIN_FORM = "an exact origin such as https://app.example.com (scheme, host and port only: no path, no trailing slash, no *)";
/** What a browser sends in `Origin`: scheme, lowercase host, port only when not the scheme's default. */
const isExactOrigin = (value: string): boolean => {
  try {
    const url = new URL(value);
    // URL takes `*` as a host character; an origin pattern is still a wildcard.
    return (url.protocol === "http:" || url.protocol === "https:") && url.origin === value && !value.includes("*");
  } catch {
    return false;
  }
};
const originList = () =>
  z
    .array(z.string({ error: "must be a list of origins." }), { error: "must be a list of origins." })
    .min(1, "must list at least one origin.")
    .superRefine((origins, ctx) => {
      const bad = origins.find((origin) => !isExactOrigin(origin));
      if (bad !== undefined) ctx.addIssue({ code: "custom", message: `must list exact origins: ${JSON.stringify(bad)} is not ${ORIGIN_FORM}.` });
    });

/** `RS256, ES256` → ["RS256", "ES256"]. */
export function algorithmList(value: string): string[] {
  return value.split(",").map((alg) => alg.trim()).filter((alg) => alg !== "");
}

/** Keys travel over TLS, except from the machine itself (a local issuer, a test). */
function jwksUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be a URL.";
  }
  const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
  if (url.protocol === "https:" || (url.protocol === "http:" && loopback)) return undefined;
  return "must be an https:// URL (http:// only on 127.0.0.1, localhost or ::1).";
}

/** In --help order. Everything except --config and --demo, which pick sources rather than set values. */
export const OPTIONS = {
  host: option({
    kind: "string", schema: text().min(1, "must be a non-empty string."), default: "127.0.0.1",
    flag: "--host", env: ["IAC_CODE_AGUI_HOST"], yamlKey: "host", valueName: "HOST", description: "Interface to listen on.",
  }),
  port: option({
    kind: "port", schema: z.number({ error: PORT_MESSAGE }).int(PORT_MESSAGE).min(0, PORT_MESSAGE).max(65535, PORT_MESSAGE),
    default: 41243, flag: "--port", env: ["IAC_CODE_AGUI_PORT"], yamlKey: "port", valueName: "PORT",
    description: "TCP port to listen on (0 = any free port).",
  }),
  a2aUrl: option({
    kind: "string", schema: text().optional(), defaultText: "unset", emptyIsUnset: true,
    flag: "--a2a-url", env: ["IAC_CODE_AGUI_A2A_URL"], yamlKey: "a2a_url", valueName: "URL",
    description: "Loopback URL of the A2A JSON-RPC endpoint (unset: start `iac-code a2a` from PATH).",
  }),
  a2aToken: option({
    kind: "string", schema: text().optional(), defaultText: "unset", emptyIsUnset: true,
    env: ["IAC_CODE_AGUI_A2A_TOKEN"], yamlKey: "a2a_token", description: "Bearer token sent to the A2A endpoint.",
  }),
  a2aHttp2: option({
    kind: "boolean", schema: flag(), default: false, flag: "--a2a-http2", env: ["IAC_CODE_AGUI_A2A_HTTP2"], yamlKey: "a2a_http2",
    description: "Speak HTTP/2 without TLS (h2c) to an http:// A2A endpoint: runs share a few connections instead of a socket each.",
  }),
  authToken: option({
    kind: "string", schema: text().optional(), defaultText: "unset (no auth)", emptyIsUnset: true,
    env: ["IAC_CODE_AGUI_AUTH_TOKEN"], yamlKey: "auth_token", description: "Bearer token AG-UI clients must send; empty disables auth.",
  }),
  authJwksUrl: option({
    kind: "string",
    schema: text()
      .superRefine((value, ctx) => {
        const problem = jwksUrlProblem(value);
        if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
      })
      .optional(),
    defaultText: "unset (no user tokens)", emptyIsUnset: true,
    flag: "--auth-jwks-url", env: ["IAC_CODE_AGUI_AUTH_JWKS_URL"], yamlKey: "auth_jwks_url", valueName: "URL",
    description: "Accept users' JWTs verified with this JSON Web Key Set (https://, or http:// on loopback).",
  }),
  authJwtKey: option({
    kind: "path", schema: text().optional(), defaultText: "unset", emptyIsUnset: true,
    flag: "--auth-jwt-key", env: ["IAC_CODE_AGUI_AUTH_JWT_KEY"], yamlKey: "auth_jwt_key", valueName: "PEM_FILE",
    description: "Accept users' JWTs verified with this PEM public key (instead of --auth-jwks-url).",
  }),
  authJwtIssuer: option({
    kind: "string", schema: text().optional(), defaultText: "unset (required with user tokens)", emptyIsUnset: true,
    flag: "--auth-jwt-issuer", env: ["IAC_CODE_AGUI_AUTH_JWT_ISSUER"], yamlKey: "auth_jwt_issuer", valueName: "ISS",
    description: "The `iss` every user token must carry.",
  }),
  authJwtAudience: option({
    kind: "string", schema: text().optional(), defaultText: "unset (required with user tokens)", emptyIsUnset: true,
    flag: "--auth-jwt-audience", env: ["IAC_CODE_AGUI_AUTH_JWT_AUDIENCE"], yamlKey: "auth_jwt_audience", valueName: "AUD",
    description: "The `aud` every user token must carry.",
  }),
  authJwtAlgorithms: option({
    kind: "string",
    schema: text().superRefine((value, ctx) => {
      const listed = algorithmList(value);
      const unknown = listed.filter((alg) => !ASYMMETRIC_ALGORITHMS.includes(alg));
      if (listed.length === 0 || unknown.length > 0) {
        ctx.addIssue({ code: "custom", message: `must be a comma-separated list of ${ASYMMETRIC_ALGORITHMS.join(", ")}.` });
      }
    }),
    default: ASYMMETRIC_ALGORITHMS.join(","),
    flag: "--auth-jwt-algorithms", env: ["IAC_CODE_AGUI_AUTH_JWT_ALGORITHMS"], yamlKey: "auth_jwt_algorithms", valueName: "ALGS",
    description: "JWS algorithms user tokens may be signed with (asymmetric only).",
  }),
  authJwtClockToleranceSeconds: option({
    kind: "seconds", schema: nonNegativeSeconds(), default: 30,
    flag: "--auth-jwt-clock-tolerance", env: ["IAC_CODE_AGUI_AUTH_JWT_CLOCK_TOLERANCE"], yamlKey: "auth_jwt_clock_tolerance",
    valueName: "SECONDS", description: "Clock skew allowed when checking a user token's exp and nbf.",
  }),
  authUserClaim: option({
    kind: "string", schema: text().min(1, "must be a non-empty string."), default: "sub",
    flag: "--auth-user-claim", env: ["IAC_CODE_AGUI_AUTH_USER_CLAIM"], yamlKey: "auth_user_claim", valueName: "CLAIM",
    description: "The user token claim that names the user.",
  }),
  maxActiveRunsPerUser: option({
    kind: "count", schema: count(0), default: 0,
    flag: "--max-active-runs-per-user", env: ["IAC_CODE_AGUI_MAX_ACTIVE_RUNS_PER_USER"], yamlKey: "max_active_runs_per_user", valueName: "N",
    description: "Runs one user may have streaming at once, all replicas together; more: 429 USER_RUN_LIMIT (0 = no limit).",
  }),
  userRequestLimit: option({
    kind: "count", schema: count(0), default: 0,
    flag: "--user-request-limit", env: ["IAC_CODE_AGUI_USER_REQUEST_LIMIT"], yamlKey: "user_request_limit", valueName: "N",
    description: "Requests one user may make per --user-request-interval, all replicas together; more: 429 USER_RATE_LIMITED (0 = no limit).",
  }),
  userRequestIntervalSeconds: option({
    kind: "seconds", schema: positiveSeconds(), default: 60,
    flag: "--user-request-interval", env: ["IAC_CODE_AGUI_USER_REQUEST_INTERVAL"], yamlKey: "user_request_interval", valueName: "SECONDS",
    description: "The window --user-request-limit counts in.",
  }),
  stateDir: option({
    kind: "path", schema: text().optional(), defaultText: "<IAC_CODE_CONFIG_DIR or ~/.iac-code>/agui", emptyIsUnset: true,
    flag: "--state-dir", env: ["IAC_CODE_AGUI_STATE_DIR"], yamlKey: "state_dir", valueName: "DIR",
    description: "Directory for persisted thread state.",
  }),
  stateStore: option({
    kind: "string",
    schema: text()
      .superRefine((value, ctx) => {
        const problem = redisUrlProblem(value);
        if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
      })
      .optional(),
    defaultText: "unset (files in the state directory)", emptyIsUnset: true,
    flag: "--state-store", env: ["IAC_CODE_AGUI_STATE_STORE"], yamlKey: "state_store", valueName: "URL",
    description: "Keep thread state in Redis or Valkey (redis:// or rediss://) so several replicas can share threads.",
  }),
  redisPassword: option({
    kind: "string", schema: text().optional(), defaultText: "unset (the URL's, if any)", emptyIsUnset: true,
    env: ["IAC_CODE_AGUI_REDIS_PASSWORD"], yamlKey: "redis_password",
    description: "Password for --state-store when the URL carries none; never logged.",
  }),
  leaseTtlSeconds: option({
    kind: "seconds", schema: positiveSeconds(), default: 30,
    flag: "--lease-ttl", env: ["IAC_CODE_AGUI_LEASE_TTL"], yamlKey: "lease_ttl", valueName: "SECONDS",
    description: "With --state-store: how long a replica's claim on a thread outlives the replica (renewed every third of it).",
  }),
  interruptTtlSeconds: option({
    kind: "seconds", schema: nonNegativeSeconds(), default: 540,
    flag: "--interrupt-ttl", env: ["IAC_CODE_AGUI_INTERRUPT_TTL"], yamlKey: "interrupt_ttl", valueName: "SECONDS",
    description: "How long an interrupt can be answered (0 = never expires).",
  }),
  idleShutdownSeconds: option({
    kind: "seconds", schema: nonNegativeSeconds(), default: 0,
    flag: "--idle-shutdown", env: ["IAC_CODE_AGUI_IDLE_SHUTDOWN"], yamlKey: "idle_shutdown", valueName: "SECONDS",
    description: "Exit 0 after this long with no active run and no pending interrupt (0 = never).",
  }),
  heartbeatSeconds: option({
    kind: "seconds", schema: positiveSeconds(), default: 15,
    flag: "--heartbeat", env: ["IAC_CODE_AGUI_HEARTBEAT"], yamlKey: "heartbeat", valueName: "SECONDS",
    description: "SSE heartbeat interval when no event is sent (must be > 0).",
  }),
  upstreamIdleTimeoutSeconds: option({
    kind: "seconds", schema: nonNegativeSeconds(), default: 0,
    flag: "--upstream-idle-timeout", env: ["IAC_CODE_AGUI_UPSTREAM_IDLE_TIMEOUT"], yamlKey: "upstream_idle_timeout",
    valueName: "SECONDS", description: "Fail a run when A2A sends nothing for this long (0 = no limit).",
  }),
  reconnectGraceSeconds: option({
    kind: "seconds", schema: nonNegativeSeconds(), default: 0,
    flag: "--reconnect-grace", env: ["IAC_CODE_AGUI_RECONNECT_GRACE"], yamlKey: "reconnect_grace", valueName: "SECONDS",
    description: "How long a run whose client went away keeps running for it to reconnect with Last-Event-ID (0 = cancelled at once).",
  }),
  replayEvents: option({
    kind: "count", schema: count(1), default: 10_000,
    flag: "--replay-events", env: ["IAC_CODE_AGUI_REPLAY_EVENTS"], yamlKey: "replay_events", valueName: "N",
    description: "Events of a run kept for a client that reconnects with Last-Event-ID (the oldest go first).",
  }),
  replayMib: option({
    kind: "count", schema: count(1), default: 4,
    flag: "--replay-mib", env: ["IAC_CODE_AGUI_REPLAY_MIB"], yamlKey: "replay_mib", valueName: "MIB",
    description: "MiB of a run's events kept for a reconnect (the oldest go first).",
  }),
  replayRetentionSeconds: option({
    kind: "seconds", schema: positiveSeconds(), default: 60,
    flag: "--replay-retention", env: ["IAC_CODE_AGUI_REPLAY_RETENTION"], yamlKey: "replay_retention", valueName: "SECONDS",
    description: "How long a run's events are kept after its last event (must be > 0).",
  }),
  historyMessages: option({
    kind: "count", schema: count(1), default: 200,
    flag: "--history-messages", env: ["IAC_CODE_AGUI_HISTORY_MESSAGES"], yamlKey: "history_messages", valueName: "N",
    description: "POST /connect brings the thread's most recent N messages.",
  }),
  replayBudgetMib: option({
    kind: "count", schema: count(1), default: 256,
    flag: "--replay-budget", env: ["IAC_CODE_AGUI_REPLAY_BUDGET"], yamlKey: "replay_budget", valueName: "MIB",
    description: "MiB of ended runs' events kept in all for reconnects; over it the oldest ended run's go first.",
  }),
  allowedCwds: option({
    // The second name is the kernel's own variable; the reference falls back to it too (§3.4).
    kind: "pathList", schema: pathList().optional(), defaultText: "the server's working directory",
    env: ["IAC_CODE_AGUI_ALLOWED_CWDS", "IACCODE_A2A_ALLOWED_CWDS"], yamlKey: "allowed_cwds",
    description: `Allowed workspace roots (env: separated by "${path.delimiter}"; yaml: a list).`,
  }),
  corsOrigins: option({
    // Exact origins only: the API is called with a bearer token, so a wildcard would hand it to any page.
    kind: "originList", schema: originList().optional(), defaultText: "unset (same origin only)",
    flag: "--cors-origins", env: ["IAC_CODE_AGUI_CORS_ORIGINS"], yamlKey: "cors_origins", valueName: "ORIGINS",
    description: "Origins whose pages may call the API from a browser (comma-separated; yaml: a list), e.g. https://app.example.com.",
  }),
  runIdWindow: option({
    kind: "count", schema: count(1), default: 256,
    flag: "--run-id-window", env: ["IAC_CODE_AGUI_RUN_ID_WINDOW"], yamlKey: "run_id_window", valueName: "N",
    description: "Run ids kept per thread: a reuse within the last N runs is refused (also ended executions and applied answers kept).",
  }),
  bodyBudgetMib: option({
    // One largest request (12 MiB) must always fit.
    kind: "count", schema: count(12), default: 64,
    flag: "--body-budget", env: ["IAC_CODE_AGUI_BODY_BUDGET"], yamlKey: "body_budget", valueName: "MIB",
    description: "Request-body MiB read and parsed at once across all connections; over it: 503 with Retry-After (at least 12).",
  }),
  bodyTimeoutSeconds: option({
    kind: "seconds", schema: positiveSeconds(), default: 30,
    flag: "--body-timeout", env: ["IAC_CODE_AGUI_BODY_TIMEOUT"], yamlKey: "body_timeout", valueName: "SECONDS",
    description: "Deadline for a whole request body; a slower one is cut with 408 (must be > 0).",
  }),
  headersTimeoutSeconds: option({
    kind: "seconds", schema: positiveSeconds(), default: 20,
    flag: "--headers-timeout", env: ["IAC_CODE_AGUI_HEADERS_TIMEOUT"], yamlKey: "headers_timeout", valueName: "SECONDS",
    description: "Deadline for a request's headers (must be > 0).",
  }),
  keepAliveTimeoutSeconds: option({
    kind: "seconds", schema: positiveSeconds(), default: 5,
    flag: "--keep-alive-timeout", env: ["IAC_CODE_AGUI_KEEP_ALIVE_TIMEOUT"], yamlKey: "keep_alive_timeout", valueName: "SECONDS",
    description: "How long an idle keep-alive connection is kept open (must be > 0).",
  }),
  maxConnections: option({
    kind: "count", schema: count(1), default: 16_384,
    flag: "--max-connections", env: ["IAC_CODE_AGUI_MAX_CONNECTIONS"], yamlKey: "max_connections", valueName: "N",
    description: "Open client connections (streams included); more are closed at once. Keep it below the file-descriptor limit.",
  }),
  validateEvents: option({
    kind: "boolean", schema: flag(), default: false,
    flag: "--validate-events", env: ["IAC_CODE_AGUI_VALIDATE_EVENTS"], yamlKey: "validate_events",
    description: "Check every outgoing AG-UI event against the schema.",
  }),
  tracing: option({
    // Unset: on exactly when the standard OTLP endpoint variables are (src/ops/trace.ts tracingWanted).
    kind: "boolean", schema: flag().optional(), defaultText: "off (on when OTEL_EXPORTER_OTLP_ENDPOINT is set)",
    flag: "--tracing", env: ["IAC_CODE_AGUI_TRACING"], yamlKey: "tracing",
    description: "Export OpenTelemetry traces over OTLP/HTTP; the OTEL_* variables configure the exporter.",
  }),
  console: option({
    kind: "boolean", schema: flag().optional(), defaultText: "false (true with --demo)",
    flag: "--console", yamlKey: "console", description: "Serve the browser console.",
  }),
  debug: option({
    kind: "boolean", schema: flag(), default: false, flag: "--debug", shortFlag: "-d", yamlKey: "debug",
    description: "Log at debug level.",
  }),
  logStdout: option({
    kind: "boolean", schema: flag(), default: false, flag: "--log-stdout", yamlKey: "log_stdout",
    description: "Mirror logs to stdout.",
  }),
};

type Table = typeof OPTIONS;
/** Options that can come from the merged sources (everything except --config and --demo). */
export type OptionKey = keyof Table;

/** The table as a list, in --help order. */
export const OPTION_LIST: readonly (OptionSpec & { key: OptionKey })[] = (Object.keys(OPTIONS) as OptionKey[]).map(
  (key) => ({ ...(OPTIONS[key] as OptionSpec), key }),
);

/** Validates the merged values, each by its own option's schema. */
export const mergedSchema = z.object(
  Object.fromEntries(OPTION_LIST.map((o) => [o.key, o.schema])) as { [K in OptionKey]: Table[K]["schema"] },
);

export type MergedValues = z.infer<typeof mergedSchema>;

/** The merged values once finished: empty strings dropped, paths made absolute, stateDir and console settled. */
export type GatewayConfig = Omit<MergedValues, "stateDir" | "console"> & {
  /** Directory for persisted thread state (absolute). */
  stateDir: string;
  /** The YAML file given with --config (absolute). */
  configFile?: string;
  demo: boolean;
  console: boolean;
};

export const CONFIG_FLAG = "--config";
export const DEMO_FLAG = "--demo";
