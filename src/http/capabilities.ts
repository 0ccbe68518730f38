// GET /capabilities: what this agent is, in AG-UI 1.0's AgentCapabilities. Only what is true: a flag the
// gateway cannot keep is absent (unknown) or false, never a guess.
import type { AgentCapabilities } from "@ag-ui/core";
import { IMAGE_MEDIA_TYPES, MAX_IMAGE_BYTES, MAX_TOTAL_IMAGE_BYTES } from "../runs/parts.js";

export function agentCapabilities(serverVersion: string): AgentCapabilities {
  return {
    identity: {
      name: "agui-gateway",
      type: "a2a-1.0",
      description: "AG-UI gateway for an A2A 1.0 execution kernel (iac-code a2a).",
      version: serverVersion,
    },
    // SSE always; protobuf when the request accepts application/vnd.ag-ui.event+proto.
    transport: { streaming: true, httpBinary: true, websocket: false, pushNotifications: false, resumable: false },
    // The kernel calls its own tools (shown as TOOL_CALL_* events); a request's `tools` is refused.
    tools: { supported: true, clientProvided: false },
    reasoning: { supported: true, streaming: true, encrypted: false },
    multimodal: { input: { image: true, audio: false, video: false, pdf: false, file: false } },
    humanInTheLoop: { supported: true, approvals: true, interrupts: true, approveWithEdits: false },
    custom: {
      "iac-code": {
        imageInput: {
          source: "base64",
          mediaTypes: [...IMAGE_MEDIA_TYPES],
          maxImageBytes: MAX_IMAGE_BYTES,
          maxTotalImageBytes: MAX_TOTAL_IMAGE_BYTES,
        },
        cancel: { method: "POST", path: "/extensions/iac-code/v1/executions/{executionId}/cancel" },
        runModes: ["normal", "pipeline"],
      },
    },
  };
}
