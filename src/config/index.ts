/**
 * Gateway configuration: command-line flags > environment > YAML file > built-in defaults.
 *
 * Names follow the reference adapter (`iac-code agui`, reference-adapter §1.1–1.2) so existing
 * scripts and config files keep working. We are stricter in two places: unknown YAML keys are
 * rejected, and every error names the flag, env var or YAML key it came from.
 */
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseDocument } from "yaml";
import { z } from "zod";

export interface GatewayConfig {
  host: string;
  port: number;
  a2aUrl?: string;
  a2aToken?: string;
  a2aHttp2: boolean;
  authToken?: string;
  stateDir: string;
  configFile?: string;
  demo: boolean;
  interruptTtlSeconds: number;
  idleShutdownSeconds: number;
  heartbeatSeconds: number;
  upstreamIdleTimeoutSeconds: number;
  allowedCwds?: string[];
  validateEvents: boolean;
  console: boolean;
  debug: boolean;
  logStdout: boolean;
  /** Run ids remembered per thread (single-use within this window). */
  runIdWindow: number;
  /** Request-body bytes buffered at once across all connections, in MiB. */
  bodyBudgetMib: number;
  bodyTimeoutSeconds: number;
  headersTimeoutSeconds: number;
  keepAliveTimeoutSeconds: number;
  maxConnections: number;
}

/** A configuration mistake; `message` is one line, meant to be printed as-is before exit 1. */
export class ConfigError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ConfigError";
  }
}

export type ConfigResult =
  | { kind: "help"; text: string }
  | { kind: "version" }
  | { kind: "config"; config: GatewayConfig };

// ---------------------------------------------------------------------------------------------
// Option table: the single source for flag parsing, env lookup, YAML keys and the help text.

/** How a string from argv or env is turned into a typed value before validation. */
type OptionKind = "string" | "port" | "seconds" | "count" | "boolean" | "pathList";

/** Options that can come from the merged sources (everything except --config and --demo). */
type MergedKey =
  | "host"
  | "port"
  | "a2aUrl"
  | "a2aToken"
  | "a2aHttp2"
  | "authToken"
  | "stateDir"
  | "interruptTtlSeconds"
  | "idleShutdownSeconds"
  | "heartbeatSeconds"
  | "upstreamIdleTimeoutSeconds"
  | "allowedCwds"
  | "validateEvents"
  | "console"
  | "debug"
  | "logStdout"
  | "runIdWindow"
  | "bodyBudgetMib"
  | "bodyTimeoutSeconds"
  | "headersTimeoutSeconds"
  | "keepAliveTimeoutSeconds"
  | "maxConnections";

interface OptionSpec {
  key: MergedKey;
  kind: OptionKind;
  flag?: string;
  shortFlag?: string;
  /** Checked in order; the first non-empty one wins. */
  env?: readonly string[];
  /** Normalised spelling (`_`); the help text shows the `-` spelling. */
  yamlKey?: string;
  valueName?: string;
  defaultText: string;
  description: string;
}

const OPTIONS: readonly OptionSpec[] = [
  {
    key: "host", kind: "string", flag: "--host", env: ["IAC_CODE_AGUI_HOST"], yamlKey: "host",
    valueName: "HOST", defaultText: "127.0.0.1", description: "Interface to listen on.",
  },
  {
    key: "port", kind: "port", flag: "--port", env: ["IAC_CODE_AGUI_PORT"], yamlKey: "port",
    valueName: "PORT", defaultText: "41243", description: "TCP port to listen on (0 = any free port).",
  },
  {
    key: "a2aUrl", kind: "string", flag: "--a2a-url", env: ["IAC_CODE_AGUI_A2A_URL"], yamlKey: "a2a_url",
    valueName: "URL", defaultText: "unset", description: "Loopback URL of the A2A JSON-RPC endpoint (unset: start `iac-code a2a` from PATH).",
  },
  {
    key: "a2aToken", kind: "string", env: ["IAC_CODE_AGUI_A2A_TOKEN"], yamlKey: "a2a_token",
    defaultText: "unset", description: "Bearer token sent to the A2A endpoint.",
  },
  {
    key: "a2aHttp2", kind: "boolean", flag: "--a2a-http2", env: ["IAC_CODE_AGUI_A2A_HTTP2"], yamlKey: "a2a_http2",
    defaultText: "false",
    description: "Speak HTTP/2 without TLS (h2c) to an http:// A2A endpoint: runs share a few connections instead of a socket each.",
  },
  {
    key: "authToken", kind: "string", env: ["IAC_CODE_AGUI_AUTH_TOKEN"], yamlKey: "auth_token",
    defaultText: "unset (no auth)", description: "Bearer token AG-UI clients must send; empty disables auth.",
  },
  {
    key: "stateDir", kind: "string", flag: "--state-dir", env: ["IAC_CODE_AGUI_STATE_DIR"], yamlKey: "state_dir",
    valueName: "DIR", defaultText: "<IAC_CODE_CONFIG_DIR or ~/.iac-code>/agui",
    description: "Directory for persisted thread state.",
  },
  {
    key: "interruptTtlSeconds", kind: "seconds", flag: "--interrupt-ttl", env: ["IAC_CODE_AGUI_INTERRUPT_TTL"],
    yamlKey: "interrupt_ttl", valueName: "SECONDS", defaultText: "540",
    description: "How long an interrupt can be answered (0 = never expires).",
  },
  {
    key: "idleShutdownSeconds", kind: "seconds", flag: "--idle-shutdown", env: ["IAC_CODE_AGUI_IDLE_SHUTDOWN"],
    yamlKey: "idle_shutdown", valueName: "SECONDS", defaultText: "0",
    description: "Exit 0 after this long with no active run and no pending interrupt (0 = never).",
  },
  {
    key: "heartbeatSeconds", kind: "seconds", flag: "--heartbeat", env: ["IAC_CODE_AGUI_HEARTBEAT"],
    yamlKey: "heartbeat", valueName: "SECONDS", defaultText: "15",
    description: "SSE heartbeat interval when no event is sent (must be > 0).",
  },
  {
    key: "upstreamIdleTimeoutSeconds", kind: "seconds", flag: "--upstream-idle-timeout",
    env: ["IAC_CODE_AGUI_UPSTREAM_IDLE_TIMEOUT"], yamlKey: "upstream_idle_timeout", valueName: "SECONDS",
    defaultText: "0", description: "Fail a run when A2A sends nothing for this long (0 = no limit).",
  },
  {
    // The second name is the kernel's own variable; the reference falls back to it too (§3.4).
    key: "allowedCwds", kind: "pathList", env: ["IAC_CODE_AGUI_ALLOWED_CWDS", "IACCODE_A2A_ALLOWED_CWDS"],
    yamlKey: "allowed_cwds", defaultText: "the server's working directory",
    description: `Allowed workspace roots (env: separated by "${path.delimiter}"; yaml: a list).`,
  },
  {
    key: "runIdWindow", kind: "count", flag: "--run-id-window", env: ["IAC_CODE_AGUI_RUN_ID_WINDOW"], yamlKey: "run_id_window",
    valueName: "N", defaultText: "256",
    description: "Run ids kept per thread: a reuse within the last N runs is refused (also ended executions and applied answers kept).",
  },
  {
    key: "bodyBudgetMib", kind: "count", flag: "--body-budget", env: ["IAC_CODE_AGUI_BODY_BUDGET"], yamlKey: "body_budget",
    valueName: "MIB", defaultText: "64",
    description: "Request-body MiB read and parsed at once across all connections; over it: 503 with Retry-After (at least 12).",
  },
  {
    key: "bodyTimeoutSeconds", kind: "seconds", flag: "--body-timeout", env: ["IAC_CODE_AGUI_BODY_TIMEOUT"], yamlKey: "body_timeout",
    valueName: "SECONDS", defaultText: "30", description: "Deadline for a whole request body; a slower one is cut with 408 (must be > 0).",
  },
  {
    key: "headersTimeoutSeconds", kind: "seconds", flag: "--headers-timeout", env: ["IAC_CODE_AGUI_HEADERS_TIMEOUT"],
    yamlKey: "headers_timeout", valueName: "SECONDS", defaultText: "20", description: "Deadline for a request's headers (must be > 0).",
  },
  {
    key: "keepAliveTimeoutSeconds", kind: "seconds", flag: "--keep-alive-timeout", env: ["IAC_CODE_AGUI_KEEP_ALIVE_TIMEOUT"],
    yamlKey: "keep_alive_timeout", valueName: "SECONDS", defaultText: "5", description: "How long an idle keep-alive connection is kept open (must be > 0).",
  },
  {
    key: "maxConnections", kind: "count", flag: "--max-connections", env: ["IAC_CODE_AGUI_MAX_CONNECTIONS"], yamlKey: "max_connections",
    valueName: "N", defaultText: "16384",
    description: "Open client connections (streams included); more are closed at once. Keep it below the file-descriptor limit.",
  },
  {
    key: "validateEvents", kind: "boolean", flag: "--validate-events", env: ["IAC_CODE_AGUI_VALIDATE_EVENTS"],
    yamlKey: "validate_events", defaultText: "false", description: "Check every outgoing AG-UI event against the schema.",
  },
  {
    key: "console", kind: "boolean", flag: "--console", yamlKey: "console",
    defaultText: "false (true with --demo)", description: "Serve the browser console.",
  },
  {
    key: "debug", kind: "boolean", flag: "--debug", shortFlag: "-d", yamlKey: "debug",
    defaultText: "false", description: "Log at debug level.",
  },
  {
    key: "logStdout", kind: "boolean", flag: "--log-stdout", yamlKey: "log_stdout",
    defaultText: "false", description: "Mirror logs to stdout.",
  },
];

const DEFAULTS = {
  host: "127.0.0.1",
  port: 41243,
  interruptTtlSeconds: 540,
  idleShutdownSeconds: 0,
  heartbeatSeconds: 15,
  upstreamIdleTimeoutSeconds: 0,
  a2aHttp2: false,
  validateEvents: false,
  debug: false,
  logStdout: false,
  runIdWindow: 256,
  bodyBudgetMib: 64,
  bodyTimeoutSeconds: 30,
  headersTimeoutSeconds: 20,
  keepAliveTimeoutSeconds: 5,
  maxConnections: 16_384,
} as const;

const CONFIG_FLAG = "--config";
const DEMO_FLAG = "--demo";
const CONFIG_FILE_LABEL = "the AG-UI config file";
const YAML_KEYS: ReadonlySet<string> = new Set(OPTIONS.flatMap((o) => (o.yamlKey ? [o.yamlKey] : [])));

// ---------------------------------------------------------------------------------------------
// Validation of the merged values. Messages are the tail of "<source label> must be …".

// Node clamps timer delays above 2^31-1 ms to 1 ms, so a larger value would fire at once.
const MAX_TIMER_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

const PORT_MESSAGE = "must be an integer between 0 and 65535.";
const NON_NEGATIVE_SECONDS = "must be a non-negative number of seconds.";
const POSITIVE_SECONDS = "must be a positive number of seconds.";
const TOO_MANY_SECONDS = `must be at most ${MAX_TIMER_SECONDS} seconds.`;
const BOOLEAN_MESSAGE = "must be true or false.";
const STRING_MESSAGE = "must be a string.";
const BOOLEAN_WORDS = "1, true, yes, on, 0, false, no, off";

const COUNT_MESSAGE = "must be a positive integer.";
const count = (min: number) =>
  z.number({ error: COUNT_MESSAGE }).int(COUNT_MESSAGE).min(min, min === 1 ? COUNT_MESSAGE : `must be an integer of at least ${min}.`).max(2 ** 31 - 1, COUNT_MESSAGE);
const positiveSeconds = z.number({ error: POSITIVE_SECONDS }).positive(POSITIVE_SECONDS).max(MAX_TIMER_SECONDS, TOO_MANY_SECONDS);

const nonNegativeSeconds = z
  .number({ error: NON_NEGATIVE_SECONDS })
  .min(0, NON_NEGATIVE_SECONDS)
  .max(MAX_TIMER_SECONDS, TOO_MANY_SECONDS);

const mergedSchema = z.object({
  host: z.string({ error: STRING_MESSAGE }).min(1, "must be a non-empty string."),
  port: z.number({ error: PORT_MESSAGE }).int(PORT_MESSAGE).min(0, PORT_MESSAGE).max(65535, PORT_MESSAGE),
  a2aUrl: z.string({ error: STRING_MESSAGE }).optional(),
  a2aToken: z.string({ error: STRING_MESSAGE }).optional(),
  a2aHttp2: z.boolean({ error: BOOLEAN_MESSAGE }),
  authToken: z.string({ error: STRING_MESSAGE }).optional(),
  stateDir: z.string({ error: STRING_MESSAGE }).optional(),
  interruptTtlSeconds: nonNegativeSeconds,
  idleShutdownSeconds: nonNegativeSeconds,
  heartbeatSeconds: z
    .number({ error: POSITIVE_SECONDS })
    .positive(POSITIVE_SECONDS)
    .max(MAX_TIMER_SECONDS, TOO_MANY_SECONDS),
  upstreamIdleTimeoutSeconds: nonNegativeSeconds,
  allowedCwds: z
    .array(z.string({ error: "must be a list of paths." }).min(1, "must not contain empty paths."), {
      error: "must be a list of paths.",
    })
    .min(1, "must list at least one path.")
    .optional(),
  validateEvents: z.boolean({ error: BOOLEAN_MESSAGE }),
  console: z.boolean({ error: BOOLEAN_MESSAGE }).optional(),
  debug: z.boolean({ error: BOOLEAN_MESSAGE }),
  logStdout: z.boolean({ error: BOOLEAN_MESSAGE }),
  runIdWindow: count(1),
  // One largest request (12 MiB) must always fit.
  bodyBudgetMib: count(12),
  bodyTimeoutSeconds: positiveSeconds,
  headersTimeoutSeconds: positiveSeconds,
  keepAliveTimeoutSeconds: positiveSeconds,
  maxConnections: count(1),
});

type MergedValues = z.infer<typeof mergedSchema>;

// ---------------------------------------------------------------------------------------------
// Public entry point.

/**
 * Builds the gateway configuration. `argv` holds the user's arguments only (`process.argv.slice(2)`).
 * Pure except for reading the YAML file named by `--config`; relative paths resolve against
 * `process.cwd()`.
 */
export function loadConfig(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  homeDir: string = os.homedir(),
): ConfigResult {
  const parsed = parseArgv(argv);
  if (parsed.kind !== "args") return parsed.kind === "help" ? { kind: "help", text: HELP_TEXT } : parsed;

  const configFile =
    parsed.configPath === undefined ? undefined : absolutePath(parsed.configPath, homeDir);
  const yaml = configFile === undefined ? {} : loadYamlFile(configFile);

  const merged: Record<string, unknown> = {};
  const labels = new Map<string, string>();
  for (const option of OPTIONS) {
    const picked = pickValue(option, parsed.flagValues, env, yaml);
    if (picked === undefined) continue;
    merged[option.key] = picked.value;
    labels.set(option.key, picked.label);
  }
  for (const [key, value] of Object.entries(DEFAULTS)) {
    if (!(key in merged)) merged[key] = value;
  }

  const result = mergedSchema.safeParse(merged);
  if (!result.success) {
    const issue = result.error.issues[0];
    const key = String(issue?.path[0] ?? "");
    throw new ConfigError(`${labels.get(key) ?? key} ${issue?.message ?? "is invalid."}`);
  }
  const config = finish(result.data, parsed.demo, configFile, env, homeDir);
  if (config.a2aHttp2) {
    const label = labels.get("a2aHttp2") ?? "a2aHttp2";
    if (config.demo || config.a2aUrl === undefined) {
      throw new ConfigError(`${label} needs --a2a-url: the demo upstream and a managed \`iac-code a2a\` speak HTTP/1.1 only.`);
    }
    if (!/^http:\/\//i.test(config.a2aUrl)) throw new ConfigError(`${label} needs an http:// --a2a-url: it speaks h2c (HTTP/2 without TLS).`);
  }
  return { kind: "config", config };
}

/** Turns validated values into the final shape: empty strings mean "unset", paths made absolute. */
function finish(
  values: MergedValues,
  demo: boolean,
  configFile: string | undefined,
  env: NodeJS.ProcessEnv,
  homeDir: string,
): GatewayConfig {
  const a2aUrl = nonEmpty(values.a2aUrl);
  const a2aToken = nonEmpty(values.a2aToken);
  const authToken = nonEmpty(values.authToken);
  const explicitStateDir = nonEmpty(values.stateDir);
  const stateDir =
    explicitStateDir === undefined
      ? path.join(configRoot(env, homeDir), "agui")
      : absolutePath(explicitStateDir, homeDir);
  return {
    host: values.host,
    port: values.port,
    ...(a2aUrl === undefined ? {} : { a2aUrl }),
    ...(a2aToken === undefined ? {} : { a2aToken }),
    a2aHttp2: values.a2aHttp2,
    ...(authToken === undefined ? {} : { authToken }),
    stateDir,
    ...(configFile === undefined ? {} : { configFile }),
    demo,
    interruptTtlSeconds: values.interruptTtlSeconds,
    idleShutdownSeconds: values.idleShutdownSeconds,
    heartbeatSeconds: values.heartbeatSeconds,
    upstreamIdleTimeoutSeconds: values.upstreamIdleTimeoutSeconds,
    ...(values.allowedCwds === undefined
      ? {}
      : { allowedCwds: values.allowedCwds.map((p) => absolutePath(p, homeDir)) }),
    validateEvents: values.validateEvents,
    console: values.console ?? demo,
    debug: values.debug,
    logStdout: values.logStdout,
    runIdWindow: values.runIdWindow,
    bodyBudgetMib: values.bodyBudgetMib,
    bodyTimeoutSeconds: values.bodyTimeoutSeconds,
    headersTimeoutSeconds: values.headersTimeoutSeconds,
    keepAliveTimeoutSeconds: values.keepAliveTimeoutSeconds,
    maxConnections: values.maxConnections,
  };
}

function configRoot(env: NodeJS.ProcessEnv, homeDir: string): string {
  const fromEnv = nonEmpty(env["IAC_CODE_CONFIG_DIR"]);
  return fromEnv === undefined ? path.join(homeDir, ".iac-code") : absolutePath(fromEnv, homeDir);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/** `~` or `~/…` expands to the home directory; anything relative resolves against the cwd. */
function absolutePath(raw: string, homeDir: string): string {
  const expanded = /^~(?=$|[\\/])/.test(raw) ? homeDir + raw.slice(1) : raw;
  return path.resolve(process.cwd(), expanded);
}

// ---------------------------------------------------------------------------------------------
// Source selection: flag, then env, then YAML. Defaults are filled in by the caller.

interface PickedValue {
  value: unknown;
  label: string;
}

function pickValue(
  option: OptionSpec,
  flagValues: ReadonlyMap<MergedKey, FlagValue>,
  env: NodeJS.ProcessEnv,
  yaml: Readonly<Record<string, unknown>>,
): PickedValue | undefined {
  const fromFlag = flagValues.get(option.key);
  if (fromFlag !== undefined) {
    const value = typeof fromFlag.raw === "boolean" ? fromFlag.raw : coerceString(option, fromFlag.raw, fromFlag.label);
    return { value, label: fromFlag.label };
  }
  for (const name of option.env ?? []) {
    const raw = env[name];
    // An empty variable counts as unset, as in `FOO= cmd` or the reference's `env or yaml`.
    if (raw === undefined || raw === "") continue;
    const value = coerceString(option, raw, name);
    if (value === undefined) continue;
    return { value, label: name };
  }
  if (option.yamlKey !== undefined && option.yamlKey in yaml) {
    const value = yaml[option.yamlKey];
    // `key:` with nothing after it is YAML null: treat it as not written.
    if (value === null || value === undefined) return undefined;
    return { value, label: `${option.yamlKey.replaceAll("_", "-")} in ${CONFIG_FILE_LABEL}` };
  }
  return undefined;
}

/**
 * Parses a flag or env string by the option's kind. Anything that does not look like the wanted
 * type is returned unchanged so the schema rejects it with the option's own message.
 * Returns undefined only for a path list with no entries (treated as unset).
 */
function coerceString(option: OptionSpec, raw: string, label: string): unknown {
  switch (option.kind) {
    case "string":
      return raw;
    case "port":
      return /^\d+$/.test(raw) ? Number(raw) : raw;
    case "seconds":
      return /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(raw) ? Number(raw) : raw;
    case "count":
      return /^\d+$/.test(raw) ? Number(raw) : raw;
    case "boolean":
      return parseBooleanWord(raw, label);
    case "pathList": {
      const entries = raw.split(path.delimiter).filter((entry) => entry !== "");
      return entries.length === 0 ? undefined : entries;
    }
  }
}

function parseBooleanWord(raw: string, label: string): boolean {
  const word = raw.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(word)) return true;
  if (["0", "false", "no", "off"].includes(word)) return false;
  throw new ConfigError(`${label} must be one of ${BOOLEAN_WORDS}.`);
}

// ---------------------------------------------------------------------------------------------
// Command line.

interface FlagValue {
  /** `true`/`false` for a bare boolean flag or its `--no-` form, else the text given. */
  raw: string | boolean;
  label: string;
}

type ParsedArgv =
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "args"; flagValues: Map<MergedKey, FlagValue>; configPath?: string; demo: boolean };

type FlagTarget =
  | { type: "option"; option: OptionSpec; negated: boolean }
  | { type: "config" }
  | { type: "demo"; negated: boolean }
  | { type: "help" }
  | { type: "version" };

const FLAG_TARGETS: ReadonlyMap<string, FlagTarget> = buildFlagTargets();

function buildFlagTargets(): Map<string, FlagTarget> {
  const targets = new Map<string, FlagTarget>([
    ["--help", { type: "help" }],
    ["-h", { type: "help" }],
    ["--version", { type: "version" }],
    [CONFIG_FLAG, { type: "config" }],
    [DEMO_FLAG, { type: "demo", negated: false }],
    ["--no-demo", { type: "demo", negated: true }],
  ]);
  for (const option of OPTIONS) {
    if (option.flag === undefined) continue;
    targets.set(option.flag, { type: "option", option, negated: false });
    if (option.shortFlag !== undefined) targets.set(option.shortFlag, { type: "option", option, negated: false });
    if (option.kind === "boolean") {
      targets.set(`--no-${option.flag.slice(2)}`, { type: "option", option, negated: true });
    }
  }
  return targets;
}

function parseArgv(argv: readonly string[]): ParsedArgv {
  const flagValues = new Map<MergedKey, FlagValue>();
  let configPath: string | undefined;
  let demo = false;

  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index] ?? "";
    if (!arg.startsWith("-") || arg === "-" || arg === "--") {
      throw new ConfigError(`Unexpected argument ${arg}. See --help.`);
    }
    const equals = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const name = equals === -1 ? arg : arg.slice(0, equals);
    const inlineValue = equals === -1 ? undefined : arg.slice(equals + 1);
    const target = FLAG_TARGETS.get(name);
    if (target === undefined) throw new ConfigError(`Unknown option ${name}. See --help.`);

    const takesValue =
      target.type === "config" || (target.type === "option" && target.option.kind !== "boolean");
    if (!takesValue) {
      const negated = (target.type === "option" || target.type === "demo") && target.negated;
      if (inlineValue !== undefined && (negated || target.type === "help" || target.type === "version")) {
        throw new ConfigError(`${name} does not take a value. See --help.`);
      }
      if (target.type === "help" || target.type === "version") return { kind: target.type };
      const flagValue = inlineValue === undefined ? !negated : parseBooleanWord(inlineValue, name);
      if (target.type === "demo") demo = flagValue;
      else if (target.type === "option") flagValues.set(target.option.key, { raw: flagValue, label: name });
      continue;
    }

    let value = inlineValue;
    if (value === undefined) {
      const next = argv[index + 1];
      // "-5" is a value (so the range check can report it); "--port" or "-d" is the next flag.
      if (next === undefined || (next.startsWith("-") && !/^-\d|^-\.\d/.test(next))) {
        throw new ConfigError(`Missing value for ${name}. See --help.`);
      }
      value = next;
      index++;
    }
    if (target.type === "config") {
      if (value === "") throw new ConfigError(`${CONFIG_FLAG} must be a non-empty path.`);
      configPath = value;
    } else if (target.type === "option") {
      flagValues.set(target.option.key, { raw: value, label: target.option.flag ?? name });
    }
  }
  return { kind: "args", flagValues, ...(configPath === undefined ? {} : { configPath }), demo };
}

// ---------------------------------------------------------------------------------------------
// YAML file.

function loadYamlFile(file: string): Record<string, unknown> {
  const loadError = (cause: unknown) =>
    new ConfigError(`Unable to load the AG-UI config file: ${file}`, { cause });

  let document: unknown;
  try {
    // fatal: a file that is not valid UTF-8 is a load error, not text with U+FFFD in it.
    const text = new TextDecoder("utf-8", { fatal: true }).decode(readFileSync(file));
    const parsed = parseDocument(text, { uniqueKeys: true });
    if (parsed.errors.length > 0) throw parsed.errors[0];
    document = parsed.toJS({ maxAliasCount: 100 });
  } catch (error) {
    throw loadError(error);
  }

  if (document === null || document === undefined) return {};
  if (!isPlainMapping(document)) throw new ConfigError("AG-UI config file must contain a YAML mapping.");

  for (const key of Object.keys(document)) {
    if (!YAML_KEYS.has(normaliseKey(key))) {
      throw new ConfigError(`Unknown key in the AG-UI config file: ${key}`);
    }
  }
  return normaliseKeys(document) as Record<string, unknown>;
}

function isPlainMapping(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  // Sequences, !!set, !!binary and the like come out of toJS as arrays, Sets or typed arrays.
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function normaliseKey(key: string): string {
  return key.replaceAll("-", "_");
}

/** `a2a-url` and `a2a_url` are one key, at every depth (reference §1.2). */
function normaliseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normaliseKeys);
  if (!isPlainMapping(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    const normalised = normaliseKey(key);
    if (Object.hasOwn(out, normalised)) {
      throw new ConfigError(`Duplicate key in the AG-UI config file: ${key}`);
    }
    out[normalised] = normaliseKeys(inner);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Help text, generated from the option table so it cannot drift from the parser.

function buildHelpText(): string {
  const width = 36;
  const row = (left: string, right: string): string =>
    left.length < width - 2 ? `  ${left.padEnd(width - 2)}${right}` : `  ${left}\n${" ".repeat(width)}${right}`;
  const detail = (text: string): string => `${" ".repeat(width)}${text}`;
  const sources = (option: OptionSpec): string => {
    const parts = [
      ...(option.env?.length ? [`env ${option.env.join(" or ")}`] : []),
      ...(option.yamlKey ? [`yaml ${option.yamlKey.replaceAll("_", "-")}`] : []),
      `default ${option.defaultText}`,
    ];
    return parts.join(" | ");
  };

  const flagged = OPTIONS.filter((o) => o.flag !== undefined);
  const unflagged = OPTIONS.filter((o) => o.flag === undefined);
  const lines: string[] = [
    "Usage: agui-gateway [options]",
    "",
    "AG-UI gateway in front of an A2A 1.0 execution kernel (iac-code a2a).",
    "Precedence: command-line flag > environment variable > YAML config file > default.",
    "",
    "Options:",
    row(`${CONFIG_FLAG} PATH`, "YAML config file (keys as below; `-` and `_` are the same)."),
    row(`${DEMO_FLAG}, --no-demo`, "Serve the built-in demo A2A upstream (turns on --console)."),
  ];
  for (const option of flagged) {
    const flag = option.flag ?? "";
    const names =
      option.kind === "boolean"
        ? [option.shortFlag, flag, `--no-${flag.slice(2)}`].filter(Boolean).join(", ")
        : `${flag} ${option.valueName ?? "VALUE"}`;
    lines.push(row(names, option.description), detail(sources(option)));
  }
  lines.push(row("-h, --help", "Show this help and exit."), row("--version", "Print the version and exit."));
  lines.push("", "Settings without a flag:");
  for (const option of unflagged) {
    lines.push(row(option.env?.[0] ?? option.key, option.description), detail(sources(option)));
  }
  lines.push(
    row("IAC_CODE_CONFIG_DIR", "Config root; the default state dir is <root>/agui."),
    detail("default ~/.iac-code"),
    "",
    "Examples:",
    "  agui-gateway --demo",
    "  agui-gateway --a2a-url http://127.0.0.1:41241/ --port 8080",
    "  IAC_CODE_AGUI_AUTH_TOKEN=secret agui-gateway --config ./agui.yaml --interrupt-ttl=0",
  );
  return lines.join("\n") + "\n";
}

export const HELP_TEXT: string = buildHelpText();
