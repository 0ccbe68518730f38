// Refusals before the SSE stream starts: an HTTP status, a code of the seeds' table and an English text
// that the HTTP layer localizes.
import type { Interrupt } from "@ag-ui/core";

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
  stateUnavailable: () => new AdmissionError(503, "STATE_UNAVAILABLE", "The AG-UI adapter state is unavailable."),
  executionLost: () => new AdmissionError(409, "EXECUTION_LOST", "The execution to resume is no longer available."),
  resumeMismatch: () => new AdmissionError(409, "EXECUTION_LOST", "The resume request does not match the interrupted run."),
  duplicateRunId: () => new AdmissionError(409, "DUPLICATE_RUN_ID", "The AG-UI run id has already been used."),
  runIdConflict: () => new AdmissionError(409, "RUN_ID_CONFLICT", "The AG-UI run id has already been used."),
  threadBusy: () => new AdmissionError(409, "THREAD_BUSY", "The AG-UI thread already has an active run."),
  bindingConflict: () =>
    new AdmissionError(409, "THREAD_BINDING_CONFLICT", "The AG-UI thread is already bound to another workspace or caller."),
  resumeRequired: (interrupts: readonly Interrupt[]) =>
    new AdmissionError(409, "RESUME_REQUIRED", "The AG-UI thread is waiting for interrupt responses.", interrupts),
  shuttingDown: () => new AdmissionError(503, "SHUTTING_DOWN", "The gateway is shutting down."),
};
