/**
 * Per-request localisation (reference §9): language negotiation from Accept-Language or a preferred tag, and
 * translation of the gateway's own English texts. No global locale is ever switched.
 */
import { CATALOG, type TranslatedLanguage, type Translations } from "./catalog.js";

export const SUPPORTED_LANGUAGES = ["en", "zh", "ja", "pt", "es", "de", "fr"] as const;
export type Language = (typeof SUPPORTED_LANGUAGES)[number];

const SUPPORTED = new Set<string>(SUPPORTED_LANGUAGES);

// A Map rather than indexing the object, so texts such as "constructor" or "__proto__" never hit the prototype.
const MESSAGES: ReadonlyMap<string, Translations> = new Map(Object.entries(CATALOG));

export const CATALOG_KEYS: readonly string[] = Object.freeze([...MESSAGES.keys()]);

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

/**
 * Translate an English source message. Messages are keyed by their exact English text (gettext style). A text
 * that is not in the catalog is returned unchanged (this is deliberate: arbitrary upstream text is never
 * "translated").
 */
export function translate(lang: Language, english: string): string {
  if (lang === "en") return english;
  const translations = MESSAGES.get(english);
  return translations === undefined ? english : translations[lang satisfies TranslatedLanguage];
}

export function isKnownMessage(english: string): boolean {
  return MESSAGES.has(english);
}
