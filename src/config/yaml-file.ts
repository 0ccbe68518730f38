// The YAML config file named by --config: one mapping of known keys, `-` and `_` spellings being one key.
import { readFileSync } from "node:fs";
import { parseDocument } from "yaml";
import { ConfigError } from "./errors.js";
import { OPTION_LIST } from "./options.js";

export const CONFIG_FILE_LABEL = "the AG-UI config file";
const YAML_KEYS: ReadonlySet<string> = new Set(OPTION_LIST.flatMap((o) => (o.yamlKey ? [o.yamlKey] : [])));

/** The file's mapping with normalised keys; an empty file is an empty mapping. */
export function loadYamlFile(file: string): Record<string, unknown> {
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
