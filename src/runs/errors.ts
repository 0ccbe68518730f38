// Refusals of the run service before the SSE stream starts: GatewayErrors (src/errors.ts) with an HTTP
// status, a code of the seeds' table and an English text that the HTTP layer localizes.
import type { Interrupt } from "@ag-ui/core";
import { GatewayError } from "../errors.js";

export const admission = {
  stateUnavailable: () => new GatewayError(503, "STATE_UNAVAILABLE", "The AG-UI adapter state is unavailable."),
  executionLost: () => new GatewayError(409, "EXECUTION_LOST", "The execution to resume is no longer available."),
  resumeMismatch: () => new GatewayError(409, "EXECUTION_LOST", "The resume request does not match the interrupted run."),
  duplicateRunId: () => new GatewayError(409, "DUPLICATE_RUN_ID", "The AG-UI run id has already been used."),
  runIdConflict: () => new GatewayError(409, "RUN_ID_CONFLICT", "The AG-UI run id has already been used."),
  threadBusy: () => new GatewayError(409, "THREAD_BUSY", "The AG-UI thread already has an active run."),
  bindingConflict: () =>
    new GatewayError(409, "THREAD_BINDING_CONFLICT", "The AG-UI thread is already bound to another workspace or caller."),
  /** The thread's pending interrupts ride along, so any client can rebuild its approval UI from the refusal. */
  resumeRequired: (interrupts: readonly Interrupt[]) =>
    new GatewayError(409, "RESUME_REQUIRED", "The AG-UI thread is waiting for interrupt responses.", undefined, { interrupts }),
  shuttingDown: () => new GatewayError(503, "SHUTTING_DOWN", "The gateway is shutting down."),
  executionNotFound: () => new GatewayError(404, "EXECUTION_NOT_FOUND", "The execution was not found."),
};
