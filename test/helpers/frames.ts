// A2A 1.0 frame builders for hand-written upstream scripts (the scripted SDK server fills in the turn's task and
// context ids when a frame leaves them out). The hostile-kernel cases (hostile.ts) are raw JSON text on purpose.
import type { A2AStreamResponse, JsonObject } from "../../operators/types.js";

export interface StatusFrameOptions {
  /** An agent message with this text. */
  text?: string;
  messageId?: string;
  /** `metadata.iac_code` keys. */
  iac?: JsonObject;
  /** Sets `iac_code.iacCodeSessionId`. */
  sessionId?: string;
  taskId?: string;
  contextId?: string;
}

/** A statusUpdate frame; `metadata` only when there is an iac_code key. */
export function statusFrame(state: string, opts: StatusFrameOptions = {}): A2AStreamResponse {
  const iac: JsonObject = { ...opts.iac };
  if (opts.sessionId !== undefined) iac["iacCodeSessionId"] = opts.sessionId;
  return {
    statusUpdate: {
      ...(opts.taskId !== undefined && { taskId: opts.taskId }),
      ...(opts.contextId !== undefined && { contextId: opts.contextId }),
      status: {
        state,
        ...(opts.text !== undefined && {
          message: { messageId: opts.messageId ?? "agent-message-1", role: "ROLE_AGENT", parts: [{ text: opts.text }] },
        }),
      },
      ...(Object.keys(iac).length > 0 && { metadata: { iac_code: iac } }),
    },
  };
}

/** Status-update frames for hand-written scripts; ids default to the turn's. */
export const frame = {
  status: statusFrame,
  working(opts: StatusFrameOptions = {}): A2AStreamResponse {
    return statusFrame("TASK_STATE_WORKING", opts);
  },
};

/** A ros_deploy permission request as the kernel announces it (metadata.iac_code.input). */
export function permissionInput(turn: { taskId: string; contextId: string }, inputId: string, toolUseId: string): JsonObject {
  return {
    schemaVersion: 1,
    kind: "permission",
    requestTaskId: turn.taskId,
    contextId: turn.contextId,
    inputId,
    toolUseId,
    toolName: "ros_deploy",
    title: "Deploy ROS stack",
    prompt: `Run ${toolUseId}?`,
    options: [
      { id: "allow_once", label: "Allow once" },
      { id: "deny", label: "Deny" },
    ],
    language: "en",
    required: true,
  };
}
