/**
 * Gateway configuration: command-line flags > environment > YAML file > built-in defaults.
 *
 * Names follow the reference adapter (`iac-code agui`, reference-adapter §1.1–1.2) so existing
 * scripts and config files keep working. We are stricter in two places: unknown YAML keys are
 * rejected, and every error names the flag, env var or YAML key it came from. Every setting is
 * declared once, in the option table (options.ts).
 */
import os from "node:os";
import path from "node:path";
import { parseArgv } from "./argv.js";
import { ConfigError } from "./errors.js";
import { HELP_TEXT } from "./help.js";
import { OPTION_LIST, mergedSchema, type GatewayConfig, type MergedValues } from "./options.js";
import { pickValue } from "./sources.js";
import { loadYamlFile } from "./yaml-file.js";

export { ConfigError } from "./errors.js";
export { HELP_TEXT } from "./help.js";
export type { GatewayConfig } from "./options.js";

export type ConfigResult =
  | { kind: "help"; text: string }
  | { kind: "version" }
  | { kind: "config"; config: GatewayConfig };

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
  for (const option of OPTION_LIST) {
    const picked = pickValue(option, parsed.flagValues, env, yaml);
    if (picked !== undefined) {
      merged[option.key] = picked.value;
      labels.set(option.key, picked.label);
    } else if (option.default !== undefined) {
      merged[option.key] = option.default;
    }
  }

  const result = mergedSchema.safeParse(merged);
  if (!result.success) {
    const issue = result.error.issues[0];
    const key = String(issue?.path[0] ?? "");
    throw new ConfigError(`${labels.get(key) ?? key} ${issue?.message ?? "is invalid."}`);
  }
  const config = finish(result.data, parsed.demo, configFile, env, homeDir);
  const jwtSource = ["authJwksUrl", "authJwtKey"].filter((key) => config[key as "authJwksUrl" | "authJwtKey"] !== undefined);
  if (jwtSource.length === 2) throw new ConfigError(`${labels.get("authJwksUrl")} and ${labels.get("authJwtKey")} exclude each other: user tokens are verified by one of them.`);
  if (jwtSource.length === 1) {
    // Without both, a token the issuer made for another application would be accepted here.
    for (const key of ["authJwtIssuer", "authJwtAudience"] as const) {
      if (config[key] === undefined) throw new ConfigError(`${labels.get(jwtSource[0]!)} needs ${key === "authJwtIssuer" ? "--auth-jwt-issuer" : "--auth-jwt-audience"}.`);
    }
  }
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
  const finished: Record<string, unknown> = {};
  for (const option of OPTION_LIST) {
    const value: unknown = values[option.key];
    if (value === undefined || (option.emptyIsUnset && value === "")) continue;
    if (option.kind === "path") finished[option.key] = absolutePath(value as string, homeDir);
    else if (option.kind === "pathList") finished[option.key] = (value as string[]).map((p) => absolutePath(p, homeDir));
    else finished[option.key] = value;
  }
  return {
    ...(finished as Omit<GatewayConfig, "stateDir" | "console" | "demo">),
    stateDir: (finished.stateDir as string | undefined) ?? path.join(configRoot(env, homeDir), "agui"),
    ...(configFile === undefined ? {} : { configFile }),
    demo,
    console: values.console ?? demo,
  };
}

function configRoot(env: NodeJS.ProcessEnv, homeDir: string): string {
  const fromEnv = env["IAC_CODE_CONFIG_DIR"];
  return fromEnv === undefined || fromEnv === "" ? path.join(homeDir, ".iac-code") : absolutePath(fromEnv, homeDir);
}

/** `~` or `~/…` expands to the home directory; anything relative resolves against the cwd. */
function absolutePath(raw: string, homeDir: string): string {
  const expanded = /^~(?=$|[\\/])/.test(raw) ? homeDir + raw.slice(1) : raw;
  return path.resolve(process.cwd(), expanded);
}
