// The gateway's one error type: a code of the seeds' table, the HTTP status it is refused with before a
// stream starts, and whether its text may be shown to the client. Every failure that reaches the HTTP
// edge is turned into one (gatewayErrorOf), and from there into the JSON envelope or a RUN_ERROR.
import { RunError, type AguiEvent } from "../operators/index.js";
import { runErrorEvent } from "../operators/lib/run-error-event.js";
import { type Language, localize, messageText, normalizeLanguage } from "./i18n/index.js";
import { InputError } from "./input-error.js";

/** "client": the text is the client's to read; "internal": logged, and a generic text is shown instead. */
export type Exposure = "client" | "internal";

export interface ErrorDetail {
  field: string;
  reason?: string;
  values?: readonly string[];
}

export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly english: string,
    /** Appended after the localized text: the failing field and why (both localized where known). */
    readonly detail?: ErrorDetail,
    /** Machine-readable fields added to the envelope's `error` (RESUME_REQUIRED's pending interrupts). */
    readonly extra?: Readonly<Record<string, unknown>>,
    readonly exposure: Exposure = "client",
  ) {
    super(english);
    this.name = "GatewayError";
  }

  localized(language: Language): string {
    const head = localize(language, this.english);
    if (!this.detail) return head;
    const values = this.detail.values?.length ? `: ${this.detail.values.join(", ")}` : "";
    const reason = this.detail.reason === undefined ? values : `: ${localize(language, this.detail.reason)}`;
    return `${head} ${this.detail.field}${reason}`;
  }
}

/** A per-user limit: 429, and when to try again (the Retry-After header). */
export class LimitError extends GatewayError {
  constructor(
    code: string,
    english: string,
    readonly retryAfterSeconds: number,
  ) {
    super(429, code, english);
  }
}

const INTERNAL_TEXT = messageText("http.internal");

export const internalError = (): GatewayError => new GatewayError(500, "INTERNAL_ERROR", INTERNAL_TEXT, undefined, undefined, "internal");

/**
 * Any thrown value → a GatewayError. A request that fails validation is a 400 INVALID_INPUT; a run failure raised before its stream (an upstream refusal) is a
 * 503 when the gateway's own state failed and a 502 otherwise; anything unknown is an internal 500.
 */
export function gatewayErrorOf(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  if (error instanceof InputError) return invalidInput(error);
  if (error instanceof RunError) return new GatewayError(error.code === "STATE_PERSISTENCE_FAILED" ? 503 : 502, error.code, error.message);
  return internalError();
}

/** The pre-SSE error envelope {"error":{"code","message"}}, localized. */
export function errorEnvelope(error: GatewayError, language: Language): { error: { code: string; message: string } } {
  const message = error.exposure === "client" ? error.localized(language) : localize(language, INTERNAL_TEXT);
  return { error: { code: error.code, message, ...error.extra } };
}

/** A failure after the stream started → its RUN_ERROR (through the one builder the operators use too). */
export function runErrorOf(error: unknown, language: Language, timestamp = Date.now()): AguiEvent {
  return runErrorEvent(error, { timestamp, language, translate: (english, lang) => localize(normalizeLanguage(lang) ?? language, english) });
}

/** The request failed validation: 400 INVALID_INPUT naming the field and why. */
export function invalidInput(error: InputError): GatewayError {
  return new GatewayError(
    400,
    "INVALID_INPUT",
    error.base,
    error.field === undefined
      ? undefined
      : { field: error.field, ...(error.reason !== undefined && { reason: error.reason }), ...(error.values !== undefined && { values: error.values }) },
  );
}
