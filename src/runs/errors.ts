// Refusals before the SSE stream starts: an HTTP status, a code of the seeds' table and an English text
// that the HTTP layer localizes.
import type { Interrupt } from "@ag-ui/core";
import { messageText } from "../i18n/index.js";

export class AdmissionError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly english: string,
    /** The thread's pending interrupts, so any client can rebuild its approval UI from the refusal. */
    readonly interrupts?: readonly Interrupt[],
  ) {
    super(english);
    this.name = "AdmissionError";
  }
}

export const admission = {
  stateUnavailable: () => new AdmissionError(503, "STATE_UNAVAILABLE", messageText("admission.stateUnavailable")),
  executionLost: () => new AdmissionError(409, "EXECUTION_LOST", messageText("admission.executionLost")),
  resumeMismatch: () => new AdmissionError(409, "EXECUTION_LOST", messageText("admission.resumeMismatch")),
  duplicateRunId: () => new AdmissionError(409, "DUPLICATE_RUN_ID", messageText("admission.runIdUsed")),
  runIdConflict: () => new AdmissionError(409, "RUN_ID_CONFLICT", messageText("admission.runIdUsed")),
  threadBusy: () => new AdmissionError(409, "THREAD_BUSY", messageText("admission.threadBusy")),
  bindingConflict: () =>
    new AdmissionError(409, "THREAD_BINDING_CONFLICT", messageText("admission.bindingConflict")),
  resumeRequired: (interrupts: readonly Interrupt[]) =>
    new AdmissionError(409, "RESUME_REQUIRED", messageText("admission.resumeRequired"), interrupts),
  shuttingDown: () => new AdmissionError(503, "SHUTTING_DOWN", messageText("admission.shuttingDown")),
};
