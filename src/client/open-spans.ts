// What a client's run has open (text and reasoning messages, tool calls, reasoning, steps), so that a run which ended
// while the client was away can be closed in order before its terminal event.
import type { BaseEvent } from "@ag-ui/client";

type Opening = { type: string; key: string; field: "messageId" | "toolCallId" | "stepName" };

const OPENS: Record<string, Omit<Opening, "key"> & { end: string }> = {
  TEXT_MESSAGE_START: { type: "text", field: "messageId", end: "TEXT_MESSAGE_END" },
  TOOL_CALL_START: { type: "tool", field: "toolCallId", end: "TOOL_CALL_END" },
  REASONING_START: { type: "reasoning", field: "messageId", end: "REASONING_END" },
  REASONING_MESSAGE_START: { type: "reasoningMessage", field: "messageId", end: "REASONING_MESSAGE_END" },
  STEP_STARTED: { type: "step", field: "stepName", end: "STEP_FINISHED" },
};
const CLOSES: Record<string, string> = {
  TEXT_MESSAGE_END: "text",
  TOOL_CALL_END: "tool",
  REASONING_END: "reasoning",
  REASONING_MESSAGE_END: "reasoningMessage",
  STEP_FINISHED: "step",
};

export class OpenSpans {
  /** Open spans by `<type>:<id>`, in the order they opened. */
  private readonly open = new Map<string, { end: string; field: string; id: string }>();

  see(event: BaseEvent): void {
    const fields = event as unknown as Record<string, unknown>;
    const opens = OPENS[event.type];
    if (opens) {
      const id = fields[opens.field];
      if (typeof id === "string") this.open.set(`${opens.type}:${id}`, { end: opens.end, field: opens.field, id });
      return;
    }
    const closes = CLOSES[event.type];
    if (closes) {
      const field = closes === "tool" ? "toolCallId" : closes === "step" ? "stepName" : "messageId";
      this.open.delete(`${closes}:${String(fields[field])}`);
    }
  }

  /** The events that close what is open, innermost (latest opened) first. */
  closing(): BaseEvent[] {
    return [...this.open.values()].reverse().map(({ end, field, id }) => ({ type: end, [field]: id }) as unknown as BaseEvent);
  }
}
