// A stage of projectA2A: text, reasoning and tool-call spans. Text opens a message and continues it (status
// text continues the current message and ends the one before; pipeline text is keyed by its message id, so
// several stay open); reasoning closes when text comes; a tool call starts once, its input completes once,
// its result ends it. A status text that repeats the whole answer after it was streamed is dropped; a task
// frame's history is shown only when the run has shown no text. Spans still open at the end are
// balanceSpans' job.
import { EventType } from "@ag-ui/core";
import type { OperatorFunction } from "rxjs";
import { unprocessableFrame } from "../lib/a2a-read.js";
import { canonicalJson, isObject } from "../lib/json.js";
import { stageOperator, type Stage, type StageHandlers, type StageOutput } from "../lib/stage.js";
import type { AguiEvent } from "../types.js";
import type { ReasoningPart, StatusTextPart, TextPart, ToolCallPart, ToolResultPart } from "./parts.js";

export interface ProjectSpansOptions {
  /** Reasoning with no message to belong to is `reasoning-<runId>`. */
  runId: string;
  /** Suffix source for generated ids (`assistant-<id>`, `tool-<id>`). */
  newId?: () => string;
}

const READS: ReadonlySet<string> = new Set(["A2A_TEXT", "A2A_STATUS_TEXT", "A2A_REASONING", "A2A_TOOL_CALL", "A2A_TOOL_RESULT"]);

type SpanPart = TextPart | StatusTextPart | ReasoningPart | ToolCallPart | ToolResultPart;

let idCounter = 0;
const defaultNewId = () => `${Date.now().toString(16)}${(++idCounter).toString(16).padStart(8, "0")}`;

/**
 * Consumes `A2A_TEXT`, `A2A_STATUS_TEXT`, `A2A_REASONING`, `A2A_TOOL_CALL` and `A2A_TOOL_RESULT` parts;
 * passes everything else on.
 *
 * @example
 * parts$.pipe(projectSpans({ runId: "r" }))
 * // A2A_TEXT {delta: "Hi", messageId: "m"} → TEXT_MESSAGE_START m, TEXT_MESSAGE_CONTENT m "Hi"
 * // A2A_TOOL_CALL {toolUseId: "c", name: "bash", args: "{}"} → TOOL_CALL_START c, TOOL_CALL_ARGS c, TOOL_CALL_END c
 */
export function projectSpans<T extends { type: string }>(options: ProjectSpansOptions): OperatorFunction<T, Exclude<T, SpanPart> | AguiEvent> {
  return stageOperator(projectSpansStage<T>(options), unprocessableFrame);
}

/** projectSpans as a Stage, for fuseStages (projectA2A runs the eight stages fused). */
export function projectSpansStage<T extends { type: string }>(options: ProjectSpansOptions): Stage<T, Exclude<T, SpanPart> | AguiEvent> {
  const newId = options.newId ?? defaultNewId;
  return (out) => new SpanProjector<T>(options.runId, newId, out);
}

/** One subscription's open spans: a class, since an idle run holds it (its methods on the prototype, not closures). */
class SpanProjector<T extends { type: string }> implements StageHandlers<T> {
  readonly reads = READS;
  // Made on first use: an idle stream holds none (each empty Set is ~150 B).
  private openMessages: Set<string> | undefined;
  private openReasoning: Set<string> | undefined;
  private openTools: Set<string> | undefined;
  private endedTools: Set<string> | undefined;
  private toolResults: Set<string> | undefined;
  private currentMessage: string | undefined;
  private textShown = false;

  constructor(
    private readonly runId: string,
    private readonly newId: () => string,
    private readonly out: StageOutput<Exclude<T, SpanPart> | AguiEvent>,
  ) {}

  next(item: T): void {
    const part = item as unknown as SpanPart;
    switch (part.type) {
      case "A2A_TEXT":
        return this.text(part.delta, part.messageId, part.parallel, part.time);
      case "A2A_STATUS_TEXT":
        return this.statusText(part);
      case "A2A_REASONING":
        return this.reasoning(part);
      case "A2A_TOOL_CALL":
        return this.toolCall(part);
      case "A2A_TOOL_RESULT":
        return this.toolResult(part);
    }
    this.out.next(item as Exclude<T, SpanPart>);
  }

  private emit(event: object): void {
    this.out.next(event as AguiEvent);
  }

  private closeReasoning(timestamp: number): void {
    if (this.openReasoning === undefined || this.openReasoning.size === 0) return;
    for (const messageId of [...this.openReasoning].sort()) {
      this.emit({ type: EventType.REASONING_MESSAGE_END, messageId, timestamp });
      this.emit({ type: EventType.REASONING_END, messageId, timestamp });
    }
    this.openReasoning = undefined;
  }

  private text(delta: string, messageId: string | undefined, parallel: boolean, timestamp: number): void {
    if (delta === "") return;
    this.closeReasoning(timestamp);
    let id: string;
    if (parallel) {
      id = messageId ?? `assistant-${this.newId()}`;
    } else {
      const current = this.currentMessage;
      id = messageId ?? current ?? `assistant-${this.newId()}`;
      if (current !== undefined && current !== id && this.openMessages?.delete(current)) {
        this.emit({ type: EventType.TEXT_MESSAGE_END, messageId: current, timestamp });
      }
      this.currentMessage = id;
    }
    if (!this.openMessages?.has(id)) {
      (this.openMessages ??= new Set()).add(id);
      this.emit({ type: EventType.TEXT_MESSAGE_START, messageId: id, role: "assistant", timestamp });
    }
    this.emit({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: id, delta, timestamp });
    this.textShown = true;
  }

  private statusText({ delta, messageId, final, history, time }: StatusTextPart): void {
    if (delta === "" && !this.textShown && history !== undefined) {
      delta = history.text;
      messageId = history.messageId;
    }
    if (delta === "") return;
    if (final && this.textShown) return; // the kernel repeats the whole answer after streaming it
    this.text(delta, messageId, false, time);
  }

  private reasoning({ thinking, ownerMessageId, time }: ReasoningPart): void {
    if (!isObject(thinking) || thinking.type !== "raw_thinking") return;
    if (typeof thinking.text !== "string" || thinking.text === "") return;
    const messageId = `reasoning-${ownerMessageId ?? this.currentMessage ?? this.runId}`;
    if (!this.openReasoning?.has(messageId)) {
      (this.openReasoning ??= new Set()).add(messageId);
      this.emit({ type: EventType.REASONING_START, messageId, timestamp: time });
      this.emit({ type: EventType.REASONING_MESSAGE_START, messageId, role: "reasoning", timestamp: time });
    }
    this.emit({ type: EventType.REASONING_MESSAGE_CONTENT, messageId, delta: thinking.text, timestamp: time });
  }

  private toolEnd(toolCallId: string, timestamp: number): void {
    if (!this.openTools?.delete(toolCallId)) return;
    (this.endedTools ??= new Set()).add(toolCallId);
    this.emit({ type: EventType.TOOL_CALL_END, toolCallId, timestamp });
  }

  private toolCall({ toolUseId, name, parentMessageId, ofCurrentMessage, args, time }: ToolCallPart): void {
    const toolCallId = toolIdOf(toolUseId, this.newId);
    const parent = ofCurrentMessage ? this.currentMessage : parentMessageId;
    if (!this.openTools?.has(toolCallId) && !this.endedTools?.has(toolCallId)) {
      (this.openTools ??= new Set()).add(toolCallId);
      this.emit({
        type: EventType.TOOL_CALL_START,
        toolCallId,
        toolCallName: name,
        ...(parent !== undefined && this.openMessages?.has(parent) && { parentMessageId: parent }),
        timestamp: time,
      });
    }
    if (args === undefined || !this.openTools?.has(toolCallId)) return;
    this.emit({ type: EventType.TOOL_CALL_ARGS, toolCallId, delta: args, timestamp: time });
    this.toolEnd(toolCallId, time);
  }

  private toolResult({ toolUseId, result, time }: ToolResultPart): void {
    const toolCallId = toolIdOf(toolUseId, this.newId);
    if (this.toolResults?.has(toolCallId)) return;
    (this.toolResults ??= new Set()).add(toolCallId);
    this.toolEnd(toolCallId, time); // a result closes the call even when its input never completed
    this.emit({
      type: EventType.TOOL_CALL_RESULT,
      messageId: `tool-result-${toolCallId}`,
      toolCallId,
      content: typeof result === "string" ? result : canonicalJson(result ?? null),
      role: "tool",
      timestamp: time,
    });
  }
}

function toolIdOf(value: unknown, newId: () => string): string {
  return typeof value === "string" && value !== "" ? value : `tool-${newId()}`;
}
