// Closes every open text, reasoning, tool and step span before the terminal event — RUN_FINISHED
// (success or interrupt) and RUN_ERROR alike (the reference leaves spans open on errors, which
// @ag-ui/client rejects). Passes exactly one terminal event and completes after it; a source error
// becomes a balanced RUN_ERROR.
import { EventType } from "@ag-ui/core";
import { Observable, type OperatorFunction } from "rxjs";
import { RunError, type AguiEvent } from "./types.js";

type Spanned = { type: string; messageId?: string; toolCallId?: string; stepName?: string; timestamp?: number };

export function balanceSpans<T extends { type: string }>(): OperatorFunction<T, T | AguiEvent> {
  return (source) =>
    new Observable<T | AguiEvent>((subscriber) => {
      const text = new Set<string>();
      const reasoningSpans = new Set<string>();
      const reasoningMessages = new Set<string>();
      const tools = new Set<string>();
      const steps = new Set<string>();
      let done = false;

      const closeAll = (timestamp: number | undefined) => {
        const at = timestamp === undefined ? {} : { timestamp };
        for (const id of [...new Set([...reasoningMessages, ...reasoningSpans])].sort()) {
          if (reasoningMessages.has(id)) subscriber.next({ type: EventType.REASONING_MESSAGE_END, messageId: id, ...at } as AguiEvent);
          if (reasoningSpans.has(id)) subscriber.next({ type: EventType.REASONING_END, messageId: id, ...at } as AguiEvent);
        }
        for (const id of [...tools].sort()) subscriber.next({ type: EventType.TOOL_CALL_END, toolCallId: id, ...at } as AguiEvent);
        for (const id of [...text].sort()) subscriber.next({ type: EventType.TEXT_MESSAGE_END, messageId: id, ...at } as AguiEvent);
        for (const name of [...steps].sort()) subscriber.next({ type: EventType.STEP_FINISHED, stepName: name, ...at } as AguiEvent);
        reasoningMessages.clear();
        reasoningSpans.clear();
        tools.clear();
        text.clear();
        steps.clear();
      };

      const upstream = source.subscribe({
        next: (item) => {
          if (done) return;
          const e = item as unknown as Spanned;
          switch (e.type) {
            case EventType.TEXT_MESSAGE_START:
              text.add(e.messageId!);
              break;
            case EventType.TEXT_MESSAGE_END:
              text.delete(e.messageId!);
              break;
            case EventType.REASONING_START:
              reasoningSpans.add(e.messageId!);
              break;
            case EventType.REASONING_END:
              reasoningSpans.delete(e.messageId!);
              break;
            case EventType.REASONING_MESSAGE_START:
              reasoningMessages.add(e.messageId!);
              break;
            case EventType.REASONING_MESSAGE_END:
              reasoningMessages.delete(e.messageId!);
              break;
            case EventType.TOOL_CALL_START:
              tools.add(e.toolCallId!);
              break;
            case EventType.TOOL_CALL_END:
              tools.delete(e.toolCallId!);
              break;
            case EventType.STEP_STARTED:
              steps.add(e.stepName!);
              break;
            case EventType.STEP_FINISHED:
              steps.delete(e.stepName!);
              break;
            case EventType.RUN_FINISHED:
            case EventType.RUN_ERROR:
              done = true;
              closeAll(e.timestamp);
              subscriber.next(item);
              subscriber.complete();
              return;
          }
          subscriber.next(item);
        },
        error: (error: unknown) => {
          if (done) return;
          done = true;
          const timestamp = Date.now();
          closeAll(timestamp);
          const code = error instanceof RunError ? error.code : "A2A_UNAVAILABLE";
          const message = error instanceof RunError ? error.message : "The local A2A execution service is unavailable.";
          subscriber.next({ type: EventType.RUN_ERROR, code, message, timestamp } as AguiEvent);
          subscriber.complete();
        },
        complete: () => {
          if (done) return;
          closeAll(undefined);
          subscriber.complete();
        },
      });
      return () => upstream.unsubscribe();
    });
}
