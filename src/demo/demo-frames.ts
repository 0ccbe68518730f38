// The demo agent's frame vocabulary: ids derived from a seed, the prompt as quoted back, model-like text
// deltas, and the status frames of one turn (a2a-upstream.md §3.2), each carrying the session id.
import { createHash } from "node:crypto";
import type { A2AMessage, A2AStreamResponse, JsonObject } from "../../operators/types.js";
import type { TurnContext } from "./a2a-server.js";

/** Stable hex derived from a seed, so ids are reproducible per task. */
export function hex(seed: string, length: number): string {
  return createHash("sha256").update(seed).digest("hex").slice(0, length);
}

export function promptOf(message: A2AMessage): string {
  return (message.parts ?? [])
    .map((part) => (typeof part.text === "string" ? part.text : ""))
    .join("")
    .trim();
}

/** The prompt as it is quoted back: one line, bounded. */
export function quoted(prompt: string): string {
  const line = prompt.replace(/\s+/g, " ");
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

/** Model-like deltas: a few words per chunk, spaces kept, so joining them gives the text back. */
function deltas(text: string): string[] {
  const words = text.match(/\S+\s*/g) ?? [];
  const chunks: string[] = [];
  for (let i = 0; i < words.length; i += 3) chunks.push(words.slice(i, i + 3).join(""));
  return chunks;
}

function now(): string {
  return new Date().toISOString();
}

/** Frame builders bound to one turn; every status frame carries the context's session id. */
export class Frames {
  constructor(
    private readonly turn: TurnContext,
    private readonly sessionId: string,
  ) {}

  status(
    state: string,
    opts: { iac?: JsonObject; text?: string; messageId?: string; timestamp?: boolean; session?: boolean } = {},
  ): A2AStreamResponse {
    const { taskId, contextId } = this.turn;
    const message =
      opts.text === undefined
        ? undefined
        : { messageId: opts.messageId ?? `${taskId}-message`, contextId, taskId, role: "ROLE_AGENT", parts: [{ text: opts.text }] };
    const iac: JsonObject = { ...opts.iac };
    if (opts.session !== false) iac.iacCodeSessionId = this.sessionId;
    return {
      statusUpdate: {
        taskId,
        contextId,
        status: { state, ...(opts.timestamp ? { timestamp: now() } : {}), ...(message ? { message } : {}) },
        metadata: { iac_code: iac },
      },
    };
  }

  working(iac: JsonObject): A2AStreamResponse {
    return this.status("TASK_STATE_WORKING", { iac });
  }

  text(text: string): A2AStreamResponse[] {
    return deltas(text).map((chunk) => this.status("TASK_STATE_WORKING", { text: chunk }));
  }

  thinking(texts: string[]): A2AStreamResponse[] {
    return texts.map((text) => this.working({ thinking: { type: "raw_thinking", text } }));
  }

  usage(inputTokens: number, outputTokens: number): A2AStreamResponse {
    return this.working({ usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens } });
  }

  /** The repeat of the whole final assistant text that a delta consumer must skip (§3.2 frame 10). */
  assistantFinal(text: string): A2AStreamResponse {
    return this.status("TASK_STATE_WORKING", {
      text,
      messageId: `${this.turn.taskId}-2`,
      timestamp: true,
      iac: { assistantFinal: { complete: true } },
    });
  }

  /** iac-code's "turn finished OK": INPUT_REQUIRED without message and without input. */
  endOfTurn(): A2AStreamResponse {
    return this.status("TASK_STATE_INPUT_REQUIRED", { timestamp: true });
  }
}
