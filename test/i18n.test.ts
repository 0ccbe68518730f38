import { describe, expect, it } from "vitest";
import {
  CATALOG_KEYS,
  SUPPORTED_LANGUAGES,
  isKnownMessage,
  normalizeLanguage,
  resolveAcceptLanguage,
  translate,
  type Language,
} from "../src/i18n/index.js";

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
    expect(new Set(CATALOG_KEYS).size).toBe(CATALOG_KEYS.length);
  });

  it("has a non-empty translation in all six non-English languages for every key", () => {
    const gaps: string[] = [];
    for (const key of CATALOG_KEYS) {
      for (const lang of TARGETS) {
        const text = translate(lang, key);
        if (text.trim() === "") gaps.push(`${lang}: ${key}`);
      }
    }
    expect(gaps).toEqual([]);
  });

  it("is really translated, not English copies", () => {
    for (const lang of TARGETS) {
      const untranslated = CATALOG_KEYS.filter((key) => translate(lang, key) === key);
      // Every current text has a distinct translation; allow a little room for short product-term texts.
      expect(untranslated.length, `${lang}: ${untranslated.join(" | ")}`).toBeLessThanOrEqual(2);
    }
    // Languages must not simply share one translation either.
    const sample = "The execution was cancelled.";
    expect(new Set(TARGETS.map((lang) => translate(lang, sample))).size).toBe(TARGETS.length);
  });

  it("keeps product terms and field names untranslated", () => {
    for (const lang of TARGETS) {
      expect(translate(lang, "The AG-UI run id has already been used.")).toContain("AG-UI");
      expect(translate(lang, "threadId and rosInvocationId are required.")).toMatch(/threadId.*rosInvocationId/);
      expect(translate(lang, "Content-Type must be application/json.")).toContain("application/json");
      expect(translate(lang, "The iac-code workspace is invalid.")).toContain("iac-code");
      expect(translate(lang, "The A2A execution failed.")).toContain("A2A");
    }
  });

  it("uses the catalog text for each language", () => {
    expect(translate("de", "Unknown field.")).toBe("Unbekanntes Feld.");
    expect(translate("ja", "Input required")).toBe("入力が必要です");
    expect(translate("zh", "The execution was cancelled.")).toBe("执行已取消。");
    expect(translate("en", "Unknown field.")).toBe("Unknown field.");
  });

  it("passes unknown text through untranslated", () => {
    const upstream = "Traceback: KeyError 'foo' in worker 3";
    for (const lang of SUPPORTED_LANGUAGES) expect(translate(lang, upstream)).toBe(upstream);
    expect(isKnownMessage(upstream)).toBe(false);
    // Near misses are not matched: the key is the exact English text.
    expect(translate("fr", "Unknown field")).toBe("Unknown field");
    expect(translate("fr", "unknown field.")).toBe("unknown field.");
    // Object prototype names are not catalog entries.
    expect(translate("es", "constructor")).toBe("constructor");
    expect(translate("es", "__proto__")).toBe("__proto__");
    expect(isKnownMessage("toString")).toBe(false);
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
