// The error of a request that fails validation, and the catalog texts it is built from (named by catalog key;
// the edge localizes them by exact text). Shared by the run layer, which raises it, and src/errors.ts, which
// turns it into a 400 INVALID_INPUT.
import { messageText } from "./i18n/index.js";

/** Base texts of INVALID_INPUT errors, from the i18n catalog (localized at the edge by their exact text). */
export const INPUT_ERROR_BASES = {
  envelope: messageText("input.invalidEnvelope"),
  forwardedProps: messageText("input.invalidForwardedProps"),
  noUserMessage: messageText("content.userMessageRequired"),
  contentInvalid: messageText("content.invalid"),
  unsupportedPart: messageText("content.unsupportedPart"),
  remoteMedia: messageText("content.remoteMedia"),
  imageMediaType: messageText("content.imageMediaType"),
  imageBase64: messageText("content.imageBase64"),
  imageTooLarge: messageText("content.imageTooLarge"),
  imagesTooLarge: messageText("content.imagesTooLarge"),
  cwdNotAbsolute: messageText("workspace.notAbsolute"),
  cwdInvalid: messageText("workspace.invalid"),
  cwdOutsideRoots: messageText("workspace.outsideRoots"),
  cwdNotDirectory: messageText("workspace.notDirectory"),
  cwdCannotCreate: messageText("workspace.cannotCreate"),
  clientTools: messageText("input.clientToolsUnsupported"),
} as const;
export type InputErrorBase = (typeof INPUT_ERROR_BASES)[keyof typeof INPUT_ERROR_BASES];

/** Reason texts that follow the field path; also catalog texts. */
export const INPUT_ERROR_REASONS = {
  unknownField: messageText("field.unknown"),
  missing: messageText("field.missing"),
  string: messageText("field.string"),
  nonEmptyString: messageText("field.nonEmptyString"),
  boolean: messageText("field.boolean"),
  integer: messageText("field.integer"),
  positiveInteger: messageText("field.positiveInteger"),
  object: messageText("field.object"),
  array: messageText("field.array"),
  numberOne: messageText("field.one"),
  length1to256: messageText("field.length1To256"),
  allowedValue: messageText("field.allowedValue"),
  invalid: messageText("field.invalid"),
} as const;
export type InputErrorReason = (typeof INPUT_ERROR_REASONS)[keyof typeof INPUT_ERROR_REASONS];

export class InputError extends Error {
  readonly code = "INVALID_INPUT";
  constructor(
    readonly base: InputErrorBase,
    readonly field?: string,
    readonly reason?: InputErrorReason,
    /** Client values the message names, already quoted (the refused tools); never translated. */
    readonly values?: readonly string[],
  ) {
    // A field without a reason happens when the base text already says what is wrong (cwd, tools).
    super(base + (field ? ` ${field}` + (reason ? `: ${reason}` : values?.length ? `: ${values.join(", ")}` : "") : ""));
    this.name = "InputError";
  }
}
