// The one RUN_ERROR builder: a thrown value → the run's terminal error event. A RunError keeps its code
// and text; anything else ends the run with `fallback`. The text is localized with the run's language.
import { EventType, type TokenUsage } from "@ag-ui/core";
import { RunError, type AguiEvent, type RunErrorCode } from "../types.js";
import type { Translate } from "./interrupts.js";
import { OPERATOR_TEXTS } from "../messages.js";

export interface RunErrorEventOptions {
  timestamp: number;
  /** What a value that is not a RunError means (default: the A2A service is unavailable). */
  fallback?: { code: RunErrorCode; english: string };
  translate?: Translate;
  language?: string;
  /** Token usage so far (iac-code extension), carried on the terminal event. */
  usage?: TokenUsage[];
}

export const A2A_UNAVAILABLE_TEXT = OPERATOR_TEXTS["a2a.unavailable"];

/**
 * @example
 * runErrorEvent(new RunError("CANCELLED", "The execution was cancelled."), { timestamp: 1 })
 * // → { type: "RUN_ERROR", code: "CANCELLED", message: "The execution was cancelled.", timestamp: 1 }
 */
export function runErrorEvent(error: unknown, options: RunErrorEventOptions): AguiEvent {
  const known = error instanceof RunError;
  const code = known ? error.code : (options.fallback?.code ?? "A2A_UNAVAILABLE");
  const english = known ? error.message : (options.fallback?.english ?? A2A_UNAVAILABLE_TEXT);
  // AG-UI 1.0's RUN_ERROR has no thread or run id; @ag-ui/client strips them with a warning.
  const event = {
    type: EventType.RUN_ERROR,
    code,
    message: options.translate ? options.translate(english, options.language) : english,
    timestamp: options.timestamp,
  } as AguiEvent;
  if (options.usage) (event as { usage?: TokenUsage[] }).usage = options.usage;
  return event;
}
