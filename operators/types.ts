// Shared vocabulary of the pipeline: the A2A 1.0 stream items that go in and the AG-UI events that
// come out. A2A shapes are the protobuf-JSON forms (camelCase, enum names, defaults omitted) that
// `iac-code a2a` and @a2a-js/sdk put on the wire; every field is optional because protobuf JSON drops
// defaults and kernels differ.
import type { AGUIEvent, Interrupt, TokenUsage } from "@ag-ui/core";

export type JsonObject = { [key: string]: unknown };

export interface A2APart {
  text?: string;
  data?: unknown;
  raw?: string;
  url?: string;
  mediaType?: string;
  filename?: string;
  metadata?: JsonObject;
}

export interface A2AMessage {
  messageId?: string;
  contextId?: string;
  taskId?: string;
  role?: string;
  parts?: A2APart[];
  metadata?: JsonObject;
}

export interface A2ATaskStatus {
  state?: string;
  message?: A2AMessage;
  timestamp?: string;
}

export interface A2AArtifact {
  artifactId?: string;
  name?: string;
  description?: string;
  parts?: A2APart[];
  metadata?: JsonObject;
  extensions?: string[];
}

export interface A2ATask {
  id?: string;
  contextId?: string;
  status?: A2ATaskStatus;
  history?: A2AMessage[];
  artifacts?: A2AArtifact[];
  metadata?: JsonObject;
}

export interface A2AStatusUpdate {
  taskId?: string;
  contextId?: string;
  status?: A2ATaskStatus;
  metadata?: JsonObject;
}

export interface A2AArtifactUpdate {
  taskId?: string;
  contextId?: string;
  artifact?: A2AArtifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: JsonObject;
}

/** One `result` of an A2A 1.0 streaming JSON-RPC response (a StreamResponse). */
export type A2AStreamResponse =
  | { task: A2ATask }
  | { statusUpdate: A2AStatusUpdate }
  | { artifactUpdate: A2AArtifactUpdate }
  | { message: A2AMessage };

export type AguiEvent = AGUIEvent;
export type { Interrupt, TokenUsage };

/** Keep-alive marker; the SSE writer turns it into the comment `: heartbeat`. Not an AG-UI event. */
export interface Heartbeat {
  type: "HEARTBEAT";
}
export const HEARTBEAT: Heartbeat = Object.freeze({ type: "HEARTBEAT" }) as Heartbeat;

export type AguiOutput = AguiEvent | Heartbeat;

/** The iac-code CUSTOM namespaces. Signals without a standard AG-UI event travel under these. */
export type IacCodeNamespace = "session" | "artifact" | "tool-progress" | "pipeline";

/**
 * Internal carrier between projection and namespacing: `namespaceCustom` turns it into
 * `CUSTOM {name: "iac-code.<namespace>.v1", value}` or drops it (pipeline allowlist).
 */
export interface IacCodeSignal {
  type: "IAC_CODE_SIGNAL";
  namespace: IacCodeNamespace;
  value: JsonObject;
  timestamp: number;
}

/** Error codes a run can end with (RUN_ERROR.code); the seeds' table. */
export type RunErrorCode =
  | "INVALID_INPUT"
  | "EXECUTION_LOST"
  | "EXECUTION_EXPIRED"
  | "RESUME_ALREADY_APPLIED"
  | "UNKNOWN_INTERRUPT"
  | "INCOMPLETE_RESUME"
  | "RESUME_PAYLOAD_INVALID"
  | "A2A_PROTOCOL_ERROR"
  | "STATE_PERSISTENCE_FAILED"
  | "A2A_UNAVAILABLE"
  | "A2A_EXECUTION_FAILED"
  | "CANCELLED"
  | "SESSION_BACKUP_NOT_READY";

/**
 * An error that ends a run with a known code. Thrown (or emitted as an Observable error) by the edges
 * and by operators; the projection turns it into RUN_ERROR with spans balanced.
 */
export class RunError extends Error {
  constructor(
    readonly code: RunErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "RunError";
  }
}

/**
 * Internal carrier from stripResumedText to the edge: the SHA-256 hex digest of a finished text segment
 * (reference-adapter §5.4). The edge keeps digests with the execution so a later run can recognise text
 * it already showed; createAguiPipeline hands them to `commit` and never emits them.
 */
export interface TextSegmentDigest {
  type: "IAC_CODE_TEXT_SEGMENT";
  digest: string;
}
