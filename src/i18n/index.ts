/**
 * Per-request localisation (reference §9): language negotiation from Accept-Language or a preferred tag, and
 * translation of the gateway's own messages, named by catalog key. No global locale is ever switched.
 */
import { CATALOG, LANGUAGES, type MessageKey, type Translations } from "./catalog.js";

export type { MessageKey } from "./catalog.js";

export const SUPPORTED_LANGUAGES = LANGUAGES;
export type Language = (typeof SUPPORTED_LANGUAGES)[number];

const SUPPORTED = new Set<string>(SUPPORTED_LANGUAGES);

/** Every message key of the catalog. */
export const MESSAGE_KEYS: readonly MessageKey[] = Object.freeze(Object.keys(CATALOG) as MessageKey[]);

// English text → its translations. Errors and the operator library carry English text (RunError.message); the
// edge localizes it by this exact text. A Map rather than indexing an object, so texts such as "constructor" or
// "__proto__" never hit the prototype.
const BY_ENGLISH: ReadonlyMap<string, Translations> = new Map(MESSAGE_KEYS.map((key) => [CATALOG[key].en, CATALOG[key]]));

/** The English source text of every catalog message. */
export const CATALOG_TEXTS: readonly string[] = Object.freeze([...BY_ENGLISH.keys()]);

function isLanguage(value: string): value is Language {
  return SUPPORTED.has(value);
}

/** "zh-CN" → "zh", "pt_BR" → "pt", " JA " → "ja"; unsupported or non-string → undefined. */
export function normalizeLanguage(tag: unknown): Language | undefined {
  if (typeof tag !== "string") return undefined;
  const primary = tag.trim().toLowerCase().replaceAll("_", "-").split("-")[0] ?? "";
  return isLanguage(primary) ? primary : undefined;
}

// Plain decimal (optionally with exponent) only: the reference parses q with Python float(), which rejects
// hex and empty strings that JavaScript's Number() would accept. "inf"/"nan" would be dropped anyway.
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

function parseQuality(params: readonly string[]): number {
  for (const param of params) {
    const trimmed = param.trim();
    if (!trimmed.startsWith("q=")) continue;
    const raw = trimmed.slice(2).trim();
    return DECIMAL.test(raw) ? Number(raw) : 0;
  }
  return 1;
}

/**
 * q-weighted Accept-Language exactly as reference §9: split on ",", value = first ";" segment, q from the first
 * "q=" param (unparsable → 0), drop q ≤ 0, q > 1 or non-finite, "*" → fallback, unsupported dropped, highest q
 * wins, earliest wins ties, nothing left → fallback.
 */
export function resolveAcceptLanguage(header: string | undefined, fallback: Language = "en"): Language {
  if (typeof header !== "string") return fallback;
  let best: { language: Language; q: number } | undefined;
  for (const item of header.split(",")) {
    const [value = "", ...params] = item.split(";");
    const q = parseQuality(params);
    if (!Number.isFinite(q) || q <= 0 || q > 1) continue;
    const tag = value.trim();
    const language = tag === "*" ? fallback : normalizeLanguage(tag);
    if (language === undefined) continue;
    // Strictly greater: an equal q later in the header never displaces an earlier one.
    if (best === undefined || q > best.q) best = { language, q };
  }
  return best?.language ?? fallback;
}

/** The English text of a catalog message: what errors carry and what the `en` envelope says. */
export function messageText<K extends MessageKey>(key: K): (typeof CATALOG)[K]["en"] {
  return CATALOG[key].en;
}

/** A catalog message in `lang`. */
export function translate(lang: Language, key: MessageKey): string {
  return CATALOG[key][lang];
}

/**
 * Localize an English text that travelled as a string (an error's message, a RUN_ERROR text of the operators).
 * A text that is not the exact English of a catalog message is returned unchanged (deliberate: arbitrary
 * upstream text is never "translated").
 */
export function localize(lang: Language, english: string): string {
  return BY_ENGLISH.get(english)?.[lang] ?? english;
}

export function isKnownMessage(english: string): boolean {
  return BY_ENGLISH.has(english);
}
