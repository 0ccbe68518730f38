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
import { stageOperator, type Stage } from "../lib/stage.js";
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
  return (out) => {
    // Made on first use: an idle stream holds none (each empty Set is ~150 B).
    let openMessages: Set<string> | undefined;
    let openReasoning: Set<string> | undefined;
    let openTools: Set<string> | undefined;
    let endedTools: Set<string> | undefined;
    let toolResults: Set<string> | undefined;
    let currentMessage: string | undefined;
    let textShown = false;
    const emit = (event: object) => out.next(event as AguiEvent);

    const closeReasoning = (timestamp: number) => {
      if (openReasoning === undefined || openReasoning.size === 0) return;
      for (const messageId of [...openReasoning].sort()) {
        emit({ type: EventType.REASONING_MESSAGE_END, messageId, timestamp });
        emit({ type: EventType.REASONING_END, messageId, timestamp });
      }
      openReasoning = undefined;
    };

    const text = (delta: string, messageId: string | undefined, parallel: boolean, timestamp: number) => {
      if (delta === "") return;
      closeReasoning(timestamp);
      let id: string;
      if (parallel) {
        id = messageId ?? `assistant-${newId()}`;
      } else {
        id = messageId ?? currentMessage ?? `assistant-${newId()}`;
        if (currentMessage !== undefined && currentMessage !== id && openMessages?.delete(currentMessage)) {
          emit({ type: EventType.TEXT_MESSAGE_END, messageId: currentMessage, timestamp });
        }
        currentMessage = id;
      }
      if (!openMessages?.has(id)) {
        (openMessages ??= new Set()).add(id);
        emit({ type: EventType.TEXT_MESSAGE_START, messageId: id, role: "assistant", timestamp });
      }
      emit({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: id, delta, timestamp });
      textShown = true;
    };

    const statusText = ({ delta, messageId, final, history, time }: StatusTextPart) => {
      if (delta === "" && !textShown && history !== undefined) {
        delta = history.text;
        messageId = history.messageId;
      }
      if (delta === "") return;
      if (final && textShown) return; // the kernel repeats the whole answer after streaming it
      text(delta, messageId, false, time);
    };

    const reasoning = ({ thinking, ownerMessageId, time }: ReasoningPart) => {
      if (!isObject(thinking) || thinking.type !== "raw_thinking") return;
      if (typeof thinking.text !== "string" || thinking.text === "") return;
      const messageId = `reasoning-${ownerMessageId ?? currentMessage ?? options.runId}`;
      if (!openReasoning?.has(messageId)) {
        (openReasoning ??= new Set()).add(messageId);
        emit({ type: EventType.REASONING_START, messageId, timestamp: time });
        emit({ type: EventType.REASONING_MESSAGE_START, messageId, role: "reasoning", timestamp: time });
      }
      emit({ type: EventType.REASONING_MESSAGE_CONTENT, messageId, delta: thinking.text, timestamp: time });
    };

    const toolEnd = (toolCallId: string, timestamp: number) => {
      if (!openTools?.delete(toolCallId)) return;
      (endedTools ??= new Set()).add(toolCallId);
      emit({ type: EventType.TOOL_CALL_END, toolCallId, timestamp });
    };

    const toolCall = ({ toolUseId, name, parentMessageId, ofCurrentMessage, args, time }: ToolCallPart) => {
      const toolCallId = toolIdOf(toolUseId, newId);
      const parent = ofCurrentMessage ? currentMessage : parentMessageId;
      if (!openTools?.has(toolCallId) && !endedTools?.has(toolCallId)) {
        (openTools ??= new Set()).add(toolCallId);
        emit({
          type: EventType.TOOL_CALL_START,
          toolCallId,
          toolCallName: name,
          ...(parent !== undefined && openMessages?.has(parent) && { parentMessageId: parent }),
          timestamp: time,
        });
      }
      if (args === undefined || !openTools?.has(toolCallId)) return;
      emit({ type: EventType.TOOL_CALL_ARGS, toolCallId, delta: args, timestamp: time });
      toolEnd(toolCallId, time);
    };

    const toolResult = ({ toolUseId, result, time }: ToolResultPart) => {
      const toolCallId = toolIdOf(toolUseId, newId);
      if (toolResults?.has(toolCallId)) return;
      (toolResults ??= new Set()).add(toolCallId);
      toolEnd(toolCallId, time); // a result closes the call even when its input never completed
      emit({
        type: EventType.TOOL_CALL_RESULT,
        messageId: `tool-result-${toolCallId}`,
        toolCallId,
        content: typeof result === "string" ? result : canonicalJson(result ?? null),
        role: "tool",
        timestamp: time,
      });
    };

    const next = (item: T) => {
      const part = item as unknown as SpanPart;
      switch (part.type) {
        case "A2A_TEXT":
          return text(part.delta, part.messageId, part.parallel, part.time);
        case "A2A_STATUS_TEXT":
          return statusText(part);
        case "A2A_REASONING":
          return reasoning(part);
        case "A2A_TOOL_CALL":
          return toolCall(part);
        case "A2A_TOOL_RESULT":
          return toolResult(part);
      }
      out.next(item as Exclude<T, SpanPart>);
    };
    return { next, reads: READS };
  };
}

function toolIdOf(value: unknown, newId: () => string): string {
  return typeof value === "string" && value !== "" ? value : `tool-${newId()}`;
}
