// The three ways an A2A call fails: A2A_UNAVAILABLE (transport), A2AJsonRpcError (the kernel said no),
// A2A_PROTOCOL_ERROR (the kernel said something we cannot read, built by `invalidFrame` in frames.ts).
import { RunError } from "../../operators/types.js";
import { invalidFrame } from "./frames.js";
import { messageText } from "../i18n/index.js";
import { isObject } from "../../operators/lib/json.js";

/** A JSON-RPC error object from the kernel (e.g. -32001 task not found, -32602 invalid params). */
export class A2AJsonRpcError extends Error {
  override readonly name = "A2AJsonRpcError";
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export function a2aUnavailable(): RunError {
  return new RunError("A2A_UNAVAILABLE", messageText("a2a.unavailable"));
}

/** The `error` member of a JSON-RPC envelope; an envelope without a well-formed one is a protocol error. */
export function jsonRpcErrorOf(envelope: unknown): Error {
  const error = isObject(envelope) ? envelope.error : undefined;
  if (!isObject(error) || typeof error.code !== "number" || !Number.isInteger(error.code)) return invalidFrame();
  const message = typeof error.message === "string" ? error.message : "";
  return new A2AJsonRpcError(error.code, message, error.data);
}

/** Our own errors pass through; anything else (refused, reset, timeout, aborted socket) is the transport. */
export function classify(error: unknown): Error {
  if (error instanceof RunError || error instanceof A2AJsonRpcError) return error;
  return a2aUnavailable();
}
