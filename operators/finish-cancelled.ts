// AG-UI 1.0: a run stopped before it completed ends RUN_FINISHED with the cancelled outcome, not as an
// error (RunFinishedCancelledOutcome; a 1.0 consumer reads RUN_ERROR as a failure to show). Runs after
// balanceSpans, so every span is already closed when the terminal event is rewritten.
import { EventType } from "@ag-ui/core";
import { map, type OperatorFunction } from "rxjs";
import type { AguiEvent } from "./types.js";

export interface FinishCancelledOptions {
  threadId: string;
  runId: string;
}

/**
 * Rewrites RUN_ERROR CANCELLED as RUN_FINISHED `outcome: {type: "cancelled"}` (usage and timestamp kept).
 *
 * @example
 * events$.pipe(balanceSpans(), finishCancelled({ threadId: "t", runId: "r" }))
 * // RUN_ERROR {code: "CANCELLED", timestamp: 7} → RUN_FINISHED {threadId: "t", runId: "r", outcome: {type: "cancelled"}, timestamp: 7}
 */
export function finishCancelled<T extends { type: string }>(options: FinishCancelledOptions): OperatorFunction<T, T | AguiEvent> {
  return map((item) => {
    if (item.type !== EventType.RUN_ERROR || (item as { code?: unknown }).code !== "CANCELLED") return item;
    const { timestamp, usage } = item as { timestamp?: number; usage?: unknown };
    return {
      type: EventType.RUN_FINISHED,
      threadId: options.threadId,
      runId: options.runId,
      outcome: { type: "cancelled" },
      ...(usage !== undefined && { usage }),
      ...(timestamp !== undefined && { timestamp }),
    } as AguiEvent;
  });
}
