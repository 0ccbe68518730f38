import { describe, expect, it } from "vitest";
import {
  CATALOG_TEXTS,
  SUPPORTED_LANGUAGES,
  isKnownMessage,
  normalizeLanguage,
  resolveAcceptLanguage,
  MESSAGE_KEYS,
  localize,
  messageText,
  translate,
  type Language,
  type MessageKey,
} from "../src/i18n/index.js";
import { CATALOG } from "../src/i18n/catalog.js";
import { OPERATOR_TEXTS } from "../operators/messages.js";

const TARGETS = SUPPORTED_LANGUAGES.filter((l): l is Exclude<Language, "en"> => l !== "en");

// The texts the brief and reference §10 require; a missing one means an HTTP error or RUN_ERROR goes out in English.
const REQUIRED_TEXTS = [
  "A valid bearer token is required.",
  "Content-Type must be application/json.",
  "The AG-UI request body is too large.",
  "The cancel request body is too large.",
  "The request body is not valid JSON.",
  "The cancel request body is not valid JSON.",
  "RunAgentInput must be a JSON object.",
  "Invalid AG-UI RunAgentInput envelope.",
  "Invalid iac-code forwarded properties.",
  "The cancel request must be a JSON object.",
  "threadId and rosInvocationId are required.",
  "The AG-UI adapter state is unavailable.",
  "The execution to resume is no longer available.",
  "The resume request does not match the interrupted run.",
  "The AG-UI run id has already been used.",
  "The AG-UI thread already has an active run.",
  "The AG-UI thread is already bound to another workspace or caller.",
  "The AG-UI thread is waiting for interrupt responses.",
  "The execution was not found.",
  "The requested resource was not found.",
  "The method is not allowed for this resource.",
  "The gateway is shutting down.",
  "The request could not be processed.",
  "The observation request is invalid.",
  "The gateway is receiving too many request bodies. Retry shortly.",
  "The request body did not arrive in time.",
  // §10.2
  "The A2A task to resume is unavailable.",
  "The iac-code session to resume is unavailable.",
  "The interrupt response has already been applied.",
  "The resume references an unknown interrupt.",
  "The resume contains duplicate interrupt ids.",
  "The resume must resolve every pending interrupt exactly once.",
  "A resolved interrupt requires a payload.",
  "The interrupt response payload is invalid.",
  "The interrupt response does not contain an answer.",
  "The A2A stream contained an invalid frame.",
  "The A2A context identity changed unexpectedly.",
  "The A2A task identity changed unexpectedly.",
  "The A2A task identity does not match the interrupted run.",
  "The iac-code session identity changed unexpectedly.",
  "An interrupt belongs to another A2A task.",
  "An interrupt belongs to another A2A context.",
  "The A2A interrupt response was not accepted.",
  "The execution mapping could not be committed.",
  "The execution session mapping could not be committed.",
  "The interrupted execution state could not be committed.",
  "The accepted interrupt response could not be committed.",
  "The local A2A execution service is unavailable.",
  "The local A2A execution service rejected the interrupt response.",
  "The A2A permission response was not accepted.",
  "The A2A execution failed.",
  "The execution was cancelled.",
  "The execution was cancelled by the interrupt response.",
  "Session backup is still synchronizing. Retry after 3 seconds.",
  "The observed execution failed.",
  "The interrupted execution has expired.",
  // §3.3 / §3.4
  "A new run requires a user message.",
  "The user message content is invalid.",
  "Only text and inline data images are supported.",
  "Remote media URLs are not supported.",
  "The image media type is not supported.",
  "The image data is not valid base64.",
  "An image exceeds the maximum size.",
  "The total image content exceeds the maximum size.",
  "The image data is invalid.",
  "The iac-code workspace must be an absolute path.",
  "The iac-code workspace is invalid.",
  "The iac-code workspace is outside the allowed roots.",
  "The iac-code workspace is not a directory.",
  "The iac-code workspace cannot be created.",
  "Client-defined tools are not supported.",
  // field-level reasons
  "Unknown field.",
  "Required field is missing.",
  "Expected a string.",
  "Expected a non-empty string.",
  "Expected a boolean.",
  "Expected an integer.",
  "Expected a positive integer.",
  "Expected an object.",
  "Expected an array.",
  "Expected the number 1.",
  "Expected 1 to 256 characters.",
  "Expected one of the allowed values.",
  "Invalid value.",
  // interrupt fallbacks
  "Input required",
  "Permission required",
];

describe("catalog", () => {
  it("contains every required English text", () => {
    const missing = REQUIRED_TEXTS.filter((text) => !isKnownMessage(text));
    expect(missing).toEqual([]);
    expect(new Set(CATALOG_TEXTS).size).toBe(CATALOG_TEXTS.length);
  });

  it("has a non-empty translation in all six non-English languages for every key", () => {
    const gaps: string[] = [];
    for (const key of CATALOG_TEXTS) {
      for (const lang of TARGETS) {
        const text = localize(lang, key);
        if (text.trim() === "") gaps.push(`${lang}: ${key}`);
      }
    }
    expect(gaps).toEqual([]);
  });

  it("is really translated, not English copies", () => {
    for (const lang of TARGETS) {
      const untranslated = CATALOG_TEXTS.filter((key) => localize(lang, key) === key);
      // Every current text has a distinct translation; allow a little room for short product-term texts.
      expect(untranslated.length, `${lang}: ${untranslated.join(" | ")}`).toBeLessThanOrEqual(2);
    }
    // Languages must not simply share one translation either.
    const sample = "The execution was cancelled.";
    expect(new Set(TARGETS.map((lang) => localize(lang, sample))).size).toBe(TARGETS.length);
  });

  it("keeps product terms and field names untranslated", () => {
    for (const lang of TARGETS) {
      expect(localize(lang, "The AG-UI run id has already been used.")).toContain("AG-UI");
      expect(localize(lang, "threadId and rosInvocationId are required.")).toMatch(/threadId.*rosInvocationId/);
      expect(localize(lang, "Content-Type must be application/json.")).toContain("application/json");
      expect(localize(lang, "The iac-code workspace is invalid.")).toContain("iac-code");
      expect(localize(lang, "The A2A execution failed.")).toContain("A2A");
    }
  });

  it("uses the catalog text for each language", () => {
    expect(localize("de", "Unknown field.")).toBe("Unbekanntes Feld.");
    expect(localize("ja", "Input required")).toBe("入力が必要です");
    expect(localize("zh", "The execution was cancelled.")).toBe("执行已取消。");
    expect(localize("en", "Unknown field.")).toBe("Unknown field.");
  });

  it("passes unknown text through untranslated", () => {
    const upstream = "Traceback: KeyError 'foo' in worker 3";
    for (const lang of SUPPORTED_LANGUAGES) expect(localize(lang, upstream)).toBe(upstream);
    expect(isKnownMessage(upstream)).toBe(false);
    // Near misses are not matched: the key is the exact English text.
    expect(localize("fr", "Unknown field")).toBe("Unknown field");
    expect(localize("fr", "unknown field.")).toBe("unknown field.");
    // Object prototype names are not catalog entries.
    expect(localize("es", "constructor")).toBe("constructor");
    expect(localize("es", "__proto__")).toBe("__proto__");
    expect(isKnownMessage("toString")).toBe(false);
  });
});

describe("message keys", () => {
  it("are identifiers, and every key has a non-empty text in every supported language", () => {
    expect(MESSAGE_KEYS.length).toBeGreaterThan(80);
    const gaps: string[] = [];
    for (const key of MESSAGE_KEYS) {
      expect(key, "a key names a message, it is not its English text").toMatch(/^[a-z][a-zA-Z0-9]*\.[a-z][a-zA-Z0-9]*$/);
      const entry: Readonly<Record<string, string>> = CATALOG[key];
      expect(Object.keys(entry).sort(), key).toEqual([...SUPPORTED_LANGUAGES].sort());
      for (const lang of SUPPORTED_LANGUAGES) if ((entry[lang] ?? "").trim() === "") gaps.push(`${lang}: ${key}`);
    }
    expect(gaps).toEqual([]);
  });

  it("gives each key its own English text, so an error's text localizes back to exactly one entry", () => {
    const texts = MESSAGE_KEYS.map((key) => messageText(key));
    expect(new Set(texts).size).toBe(texts.length);
    expect(CATALOG_TEXTS).toEqual(texts);
  });

  it("translates by key and localizes the same message by its English text", () => {
    expect(translate("de", "field.unknown")).toBe("Unbekanntes Feld.");
    expect(translate("en", "field.unknown")).toBe("Unknown field.");
    expect(messageText("a2a.unavailable")).toBe("The local A2A execution service is unavailable.");
    for (const key of MESSAGE_KEYS) {
      for (const lang of SUPPORTED_LANGUAGES) expect(localize(lang, messageText(key))).toBe(translate(lang, key));
    }
  });

  it("rejects a misspelt key at typecheck", () => {
    // @ts-expect-error "a2a.unavailabel" is not a MessageKey: tsc fails if this line ever compiles.
    const typo: MessageKey = "a2a.unavailabel";
    expect(MESSAGE_KEYS).not.toContain(typo);
  });

  it("covers every English text the operators emit, under the same key", () => {
    // Typed: an operator key that is not a catalog key fails typecheck here.
    const keys: readonly MessageKey[] = Object.keys(OPERATOR_TEXTS) as (keyof typeof OPERATOR_TEXTS)[];
    for (const key of keys) {
      expect(MESSAGE_KEYS, key).toContain(key);
      expect(messageText(key), key).toBe(OPERATOR_TEXTS[key as keyof typeof OPERATOR_TEXTS]);
    }
  });
});

describe("normalizeLanguage", () => {
  it.each([
    ["zh-CN", "zh"],
    ["pt_BR", "pt"],
    [" JA ", "ja"],
    ["en", "en"],
    ["DE-at", "de"],
    ["fr_CA", "fr"],
    ["es-419", "es"],
  ])("%j → %s", (tag, expected) => {
    expect(normalizeLanguage(tag)).toBe(expected);
  });

  it.each([["it"], ["ko-KR"], [""], ["   "], ["*"], ["-zh"], [42], [null], [undefined], [{}], [["zh"]]])(
    "%j → undefined",
    (tag) => {
      expect(normalizeLanguage(tag)).toBeUndefined();
    },
  );
});

describe("resolveAcceptLanguage", () => {
  it("follows the reference §9 examples", () => {
    expect(resolveAcceptLanguage("ja-JP, en;q=0.5")).toBe("ja");
    expect(resolveAcceptLanguage("zh;q=0, en;q=0.2, ja;q=1")).toBe("ja");
  });

  it("maps * to the fallback language", () => {
    expect(resolveAcceptLanguage("*")).toBe("en");
    expect(resolveAcceptLanguage("*", "de")).toBe("de");
    // "*" at a higher q beats a specific lower-q language.
    expect(resolveAcceptLanguage("fr;q=0.3, *;q=0.9", "zh")).toBe("zh");
  });

  it("counts an unparsable q as 0 and drops it", () => {
    expect(resolveAcceptLanguage("fr;q=abc, de;q=0.1")).toBe("de");
    expect(resolveAcceptLanguage("fr;q=, de;q=0.1")).toBe("de");
    expect(resolveAcceptLanguage("fr;q=0x1, de;q=0.1")).toBe("de");
  });

  it("drops q ≤ 0, q > 1 and non-finite q", () => {
    expect(resolveAcceptLanguage("fr;q=1.5, de;q=0.2")).toBe("de");
    expect(resolveAcceptLanguage("fr;q=-0.5, de;q=0.2")).toBe("de");
    expect(resolveAcceptLanguage("fr;q=1e400, de;q=0.2")).toBe("de");
    expect(resolveAcceptLanguage("fr;q=inf, de;q=0.2")).toBe("de");
    expect(resolveAcceptLanguage("fr;q=0")).toBe("en");
  });

  it("reads q from the first q= parameter only", () => {
    expect(resolveAcceptLanguage("fr;q=0.2;q=0.9, de;q=0.5")).toBe("de");
    expect(resolveAcceptLanguage("fr;level=1;q=0.9, de;q=0.5")).toBe("fr");
  });

  it("returns the fallback for empty or missing headers", () => {
    expect(resolveAcceptLanguage("")).toBe("en");
    expect(resolveAcceptLanguage(undefined)).toBe("en");
    expect(resolveAcceptLanguage(" , ,")).toBe("en");
    expect(resolveAcceptLanguage(undefined, "pt")).toBe("pt");
  });

  it("lets the earliest item win ties", () => {
    expect(resolveAcceptLanguage("de, fr")).toBe("de");
    expect(resolveAcceptLanguage("fr;q=0.5, de;q=0.5")).toBe("fr");
    expect(resolveAcceptLanguage("es;q=0.4, pt;q=0.8, zh;q=0.8")).toBe("pt");
  });

  it("drops unsupported languages and falls back when nothing is left", () => {
    expect(resolveAcceptLanguage("it, ko;q=0.9")).toBe("en");
    expect(resolveAcceptLanguage("it, ko;q=0.9", "ja")).toBe("ja");
    expect(resolveAcceptLanguage("it, pt-BR;q=0.1")).toBe("pt");
  });
});
