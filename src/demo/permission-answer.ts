// A permission the demo agent waits for, and iac-code's checks on the answer to it (a2a-upstream §4.2):
// every violation is the -32602 the real kernel sends.
import { RequestMalformedError } from "@a2a-js/sdk/errors";
import type { A2AMessage, JsonObject } from "../../operators/types.js";
import type { TurnContext } from "./a2a-server.js";
import { isObject } from "../../operators/lib/json.js";

/** A permission the agent is waiting for; one per task (iac-code queues the rest). */
export interface PendingPermission {
  contextId: string;
  inputId: string;
  toolUseId: string;
  toolName: string;
  stackName: string;
  regionId: string;
}

export type Decision = "allow_once" | "deny";

const ANSWER_KEYS = ["decision", "inputId", "kind", "requestTaskId", "schemaVersion", "toolUseId"];

/** The data of a permission answer part, if the message carries one (validated separately). */
export function permissionAnswerOf(message: A2AMessage): JsonObject | undefined {
  for (const part of message.parts ?? []) {
    if (isObject(part.data) && part.data.kind === "permission") return part.data;
  }
  return undefined;
}

/** iac-code's resume checks (a2a-upstream §4.2); every violation is -32602. */
export function validateAnswer(turn: TurnContext, wait: PendingPermission): Decision {
  const invalid = (why: string): never => {
    throw new RequestMalformedError(`permission_resume_invalid: ${why}`);
  };
  const mismatch = (field: string): never => {
    throw new RequestMalformedError(`input_response_mismatch: ${field} does not match the pending permission`);
  };
  const message = turn.userMessage;
  if (message.role !== "ROLE_USER") invalid("role must be ROLE_USER");
  const parts = message.parts ?? [];
  if (parts.length !== 1) invalid("a permission answer must have exactly one part");
  const part = parts[0];
  if (!part || part.mediaType !== "application/json" || !isObject(part.data)) {
    return invalid("the part must be a DataPart with mediaType application/json");
  }
  const data = part.data;
  const keys = Object.keys(data).sort();
  if (keys.length !== ANSWER_KEYS.length || keys.some((key, i) => key !== ANSWER_KEYS[i])) {
    invalid(`the answer must have exactly the keys ${ANSWER_KEYS.join(", ")}`);
  }
  if (data.schemaVersion !== 1) invalid("schemaVersion must be 1");
  if (data.kind !== "permission") invalid("kind must be permission");
  if (data.decision !== "allow_once" && data.decision !== "deny") invalid("decision must be allow_once or deny");
  if (data.requestTaskId !== turn.taskId) mismatch("requestTaskId");
  if (turn.contextId !== wait.contextId) mismatch("contextId");
  if (data.inputId !== wait.inputId) mismatch("inputId");
  if (data.toolUseId !== wait.toolUseId) mismatch("toolUseId");
  return data.decision as Decision;
}
