// The pre-SSE error envelope {"error":{"code","message"}}: English texts are localized at the edge.
import { localize, messageText, type Language } from "../i18n/index.js";
import type { AdmissionError } from "../runs/errors.js";
import type { InputError } from "../runs/input.js";

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly english: string,
    /** Appended after the localized text: the failing field and why (both localized where known). */
    readonly detail?: { field: string; reason?: string; values?: readonly string[] },
    /** Machine-readable fields added to the envelope's `error` (RESUME_REQUIRED's pending interrupts). */
    readonly extra?: Readonly<Record<string, unknown>>,
  ) {
    super(english);
    this.name = "HttpError";
  }

  localized(language: Language): string {
    const head = localize(language, this.english);
    if (!this.detail) return head;
    const values = this.detail.values?.length ? `: ${this.detail.values.join(", ")}` : "";
    const reason = this.detail.reason === undefined ? values : `: ${localize(language, this.detail.reason)}`;
    return `${head} ${this.detail.field}${reason}`;
  }

  envelope(language: Language): { error: { code: string; message: string } } {
    return { error: { code: this.code, message: this.localized(language), ...this.extra } };
  }
}

export function invalidInput(error: InputError): HttpError {
  return new HttpError(
    400,
    "INVALID_INPUT",
    error.base,
    error.field === undefined
      ? undefined
      : { field: error.field, ...(error.reason !== undefined && { reason: error.reason }), ...(error.values !== undefined && { values: error.values }) },
  );
}

/** A refusal of the run service, with the pending interrupts when it names them (RESUME_REQUIRED). */
export function fromAdmission(error: AdmissionError): HttpError {
  return new HttpError(error.status, error.code, error.english, undefined, error.interrupts && { interrupts: error.interrupts });
}

export const httpErrors = {
  unauthorized: () => new HttpError(401, "UNAUTHORIZED", messageText("http.bearerTokenRequired")),
  unsupportedMediaType: () => new HttpError(415, "UNSUPPORTED_MEDIA_TYPE", messageText("http.contentTypeJson")),
  notFound: () => new HttpError(404, "NOT_FOUND", messageText("http.notFound")),
  methodNotAllowed: () => new HttpError(405, "METHOD_NOT_ALLOWED", messageText("http.methodNotAllowed")),
  internal: () => new HttpError(500, "INTERNAL_ERROR", messageText("http.internal")),
};
