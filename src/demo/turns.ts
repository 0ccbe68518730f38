// What a scripted turn sees and yields, and what the demo server remembers about each task beyond the
// SDK's store. Shared by the script executor, the request handler and the HTTP layer.
import type { Message } from "@a2a-js/sdk";
import type { A2AMessage, A2AStreamResponse } from "../../operators/types.js";

export interface TurnContext {
  taskId: string;
  contextId: string;
  /** The incoming message as protobuf-JSON (camelCase), with taskId/contextId resolved. */
  userMessage: A2AMessage;
  /** True when message.taskId named an existing task (a resume / answer / follow-up turn). */
  existingTask: boolean;
  /** How many turns this task has already executed (0 for the first). */
  turnIndex: number;
  /** Aborted when the task is cancelled (CancelTask) or the server closes. */
  signal: AbortSignal;
}

/**
 * A script yields StreamResponse JSON exactly as it appears in `result` on the wire, or a pause.
 * Missing taskId/contextId on status/artifact updates and tasks are filled from the turn.
 * Throw an A2AError (e.g. RequestMalformedError) or a TurnRejectedError before the first frame to
 * answer the request with a plain JSON-RPC error instead of a stream.
 */
export type ScriptItem = A2AStreamResponse | { delayMs: number } | { waitForCancel: true };
export type TurnScript = (turn: TurnContext) => AsyncIterable<ScriptItem> | Iterable<ScriptItem>;

/** A pre-stream rejection with an exact JSON-RPC error object (for codes/data the SDK errors lack). */
export class TurnRejectedError extends Error {
  constructor(readonly rpcError: { code: number; message: string; data?: unknown }) {
    super(rpcError.message);
    this.name = "TurnRejectedError";
  }
}

export type RpcError = { code: number; message: string; data?: unknown };

// Keys in ServerCallContext.state: the executor leaves notes there for the HTTP layer of the same request.
export const REJECTION_KEY = "scripted.rejection";
export const SYNTHETIC_RESUME_FRAME_KEY = "scripted.syntheticResumeFrame";

/** What the server knows about each task beyond the SDK's store. */
export class TurnRegistry {
  readonly active = new Map<string, AbortController>();
  readonly turnCounts = new Map<string, number>();
  readonly contextIds = new Map<string, string>();
  readonly sessionIds = new Map<string, string>();
  /** User messages and every published status message, in order (iac-code's GetTask history). */
  readonly history: Map<string, Message[]> = new Map();

  record(taskId: string, message: Message): void {
    const log = this.history.get(taskId) ?? [];
    log.push(structuredClone(message));
    this.history.set(taskId, log);
  }

  abortAll(): void {
    for (const controller of this.active.values()) controller.abort(new Error("server closed"));
  }
}

