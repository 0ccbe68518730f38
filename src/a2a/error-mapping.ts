// A2A failures → the run's error code: what the kernel said (a JSON-RPC error, a retryable session
// backup) or that it could not be reached.
import { messageText } from "../i18n/index.js";
import { RunError } from "../../operators/types.js";
import { A2AJsonRpcError } from "./errors.js";

/** Edge errors → the run's error code. */
export function toRunError(error: unknown, fallback: "A2A_EXECUTION_FAILED" | "A2A_UNAVAILABLE" = "A2A_EXECUTION_FAILED"): RunError {
  if (error instanceof RunError) return error;
  if (error instanceof A2AJsonRpcError) {
    const data = error.data as { code?: unknown; retryable?: unknown } | undefined;
    if (data && typeof data === "object" && data.code === "SESSION_BACKUP_NOT_READY" && data.retryable === true) {
      return new RunError("SESSION_BACKUP_NOT_READY", messageText("a2a.sessionBackupNotReady"));
    }
    return fallback === "A2A_UNAVAILABLE"
      ? new RunError("A2A_UNAVAILABLE", messageText("a2a.unavailable"))
      : new RunError("A2A_EXECUTION_FAILED", messageText("a2a.executionFailed"));
  }
  return new RunError("A2A_UNAVAILABLE", messageText("a2a.unavailable"));
}

/** The kernel refused an answer before accepting it: the interrupt stays pending and can be retried. */
export function answerRejected(error: unknown): RunError {
  const mapped = toRunError(error, "A2A_UNAVAILABLE");
  if (error instanceof A2AJsonRpcError && mapped.code === "A2A_UNAVAILABLE") {
    return new RunError("A2A_UNAVAILABLE", messageText("a2a.interruptResponseRefused"));
  }
  return mapped;
}

/** -32001: the task is not (or no longer) known to the kernel. */
export function isTaskNotFound(error: unknown): boolean {
  return error instanceof A2AJsonRpcError && error.code === -32001;
}

/** -32002: the task already reached a terminal state (a cancel that comes too late). */
export function isTaskAlreadyTerminal(error: unknown): boolean {
  return error instanceof A2AJsonRpcError && error.code === -32002;
}

/** Any JSON-RPC error: the kernel answered, so it is reachable. */
export function isKernelAnswer(error: unknown): boolean {
  return error instanceof A2AJsonRpcError;
}
