// Source selection for one option: flag, then env, then YAML. Defaults are filled in by the caller.
import path from "node:path";
import { ConfigError } from "./errors.js";
import type { OptionKey, OptionSpec } from "./options.js";
import { CONFIG_FILE_LABEL } from "./yaml-file.js";

const BOOLEAN_WORDS = "1, true, yes, on, 0, false, no, off";

export interface FlagValue {
  /** `true`/`false` for a bare boolean flag or its `--no-` form, else the text given. */
  raw: string | boolean;
  label: string;
}

export interface PickedValue {
  value: unknown;
  /** Where it came from, as error messages name it: the flag, the env var or the YAML key. */
  label: string;
}

export function pickValue(
  option: OptionSpec & { key: OptionKey },
  flagValues: ReadonlyMap<OptionKey, FlagValue>,
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
 * Returns undefined only for a list with no entries (treated as unset).
 */
function coerceString(option: OptionSpec, raw: string, label: string): unknown {
  switch (option.kind) {
    case "string":
    case "path":
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
    case "originList": {
      const entries = raw.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "");
      return entries.length === 0 ? undefined : entries;
    }
  }
}

export function parseBooleanWord(raw: string, label: string): boolean {
  const word = raw.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(word)) return true;
  if (["0", "false", "no", "off"].includes(word)) return false;
  throw new ConfigError(`${label} must be one of ${BOOLEAN_WORDS}.`);
}
