// Refusals of the run service before the SSE stream starts: GatewayErrors (src/errors.ts) with an HTTP
// status, a code of the seeds' table and an English text that the HTTP layer localizes.
import { messageText } from "../i18n/index.js";
import type { Interrupt } from "@ag-ui/core";
import { GatewayError } from "../errors.js";

export const admission = {
  stateUnavailable: () => new GatewayError(503, "STATE_UNAVAILABLE", messageText("admission.stateUnavailable")),
  executionLost: () => new GatewayError(409, "EXECUTION_LOST", messageText("admission.executionLost")),
  resumeMismatch: () => new GatewayError(409, "EXECUTION_LOST", messageText("admission.resumeMismatch")),
  duplicateRunId: () => new GatewayError(409, "DUPLICATE_RUN_ID", messageText("admission.runIdUsed")),
  runIdConflict: () => new GatewayError(409, "RUN_ID_CONFLICT", messageText("admission.runIdUsed")),
  threadBusy: () => new GatewayError(409, "THREAD_BUSY", messageText("admission.threadBusy")),
  bindingConflict: () =>
    new GatewayError(409, "THREAD_BINDING_CONFLICT", messageText("admission.bindingConflict")),
  /** The thread's pending interrupts ride along, so any client can rebuild its approval UI from the refusal. */
  resumeRequired: (interrupts: readonly Interrupt[]) =>
    new GatewayError(409, "RESUME_REQUIRED", messageText("admission.resumeRequired"), undefined, { interrupts }),
  shuttingDown: () => new GatewayError(503, "SHUTTING_DOWN", messageText("admission.shuttingDown")),
  executionNotFound: () => new GatewayError(404, "EXECUTION_NOT_FOUND", messageText("execution.notFound")),
  /** A shared store names the execution, but this replica's kernel does not know its task. */
  executionElsewhere: () => new GatewayError(404, "EXECUTION_NOT_FOUND", messageText("execution.elsewhere")),
};
