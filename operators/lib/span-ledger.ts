// The open text, reasoning, tool and step spans of one stream: what balanceSpans closes before a terminal
// event, and what the SSE writer closes when it must end a stream early (an event it cannot encode).
import { EventType } from "@ag-ui/core";
import type { AguiEvent } from "../types.js";

type Spanned = { type: string; messageId?: string; toolCallId?: string; stepName?: string };

export class SpanLedger {
  // Made on first use: an idle stream (hours at a permission) holds none of them.
  private text: Set<string> | undefined;
  private reasoningSpans: Set<string> | undefined;
  private reasoningMessages: Set<string> | undefined;
  private tools: Set<string> | undefined;
  private steps: Set<string> | undefined;

  /** Records what `event` opens or closes; true for a terminal event (RUN_FINISHED, RUN_ERROR). */
  track(event: Spanned): boolean {
    switch (event.type) {
      case EventType.TEXT_MESSAGE_START:
        (this.text ??= new Set()).add(event.messageId!);
        break;
      case EventType.TEXT_MESSAGE_END:
        this.text?.delete(event.messageId!);
        break;
      case EventType.REASONING_START:
        (this.reasoningSpans ??= new Set()).add(event.messageId!);
        break;
      case EventType.REASONING_END:
        this.reasoningSpans?.delete(event.messageId!);
        break;
      case EventType.REASONING_MESSAGE_START:
        (this.reasoningMessages ??= new Set()).add(event.messageId!);
        break;
      case EventType.REASONING_MESSAGE_END:
        this.reasoningMessages?.delete(event.messageId!);
        break;
      case EventType.TOOL_CALL_START:
        (this.tools ??= new Set()).add(event.toolCallId!);
        break;
      case EventType.TOOL_CALL_END:
        this.tools?.delete(event.toolCallId!);
        break;
      case EventType.STEP_STARTED:
        (this.steps ??= new Set()).add(event.stepName!);
        break;
      case EventType.STEP_FINISHED:
        this.steps?.delete(event.stepName!);
        break;
      case EventType.RUN_FINISHED:
      case EventType.RUN_ERROR:
        return true;
    }
    return false;
  }

  /** END events for every open span (reasoning, tools, text, steps; each sorted by id), then forgets them. */
  close(timestamp: number | undefined): AguiEvent[] {
    const at = timestamp === undefined ? {} : { timestamp };
    const out: AguiEvent[] = [];
    const sorted = (open: Set<string> | undefined) => (open === undefined ? [] : [...open].sort());
    for (const id of [...new Set([...sorted(this.reasoningMessages), ...sorted(this.reasoningSpans)])].sort()) {
      if (this.reasoningMessages?.has(id)) out.push({ type: EventType.REASONING_MESSAGE_END, messageId: id, ...at } as AguiEvent);
      if (this.reasoningSpans?.has(id)) out.push({ type: EventType.REASONING_END, messageId: id, ...at } as AguiEvent);
    }
    for (const id of sorted(this.tools)) out.push({ type: EventType.TOOL_CALL_END, toolCallId: id, ...at } as AguiEvent);
    for (const id of sorted(this.text)) out.push({ type: EventType.TEXT_MESSAGE_END, messageId: id, ...at } as AguiEvent);
    for (const name of sorted(this.steps)) out.push({ type: EventType.STEP_FINISHED, stepName: name, ...at } as AguiEvent);
    this.reasoningMessages = this.reasoningSpans = this.tools = this.text = this.steps = undefined;
    return out;
  }
}
