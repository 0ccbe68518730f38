// Closes every open text, reasoning, tool and step span before the terminal event — RUN_FINISHED
// (success or interrupt) and RUN_ERROR alike (the reference leaves spans open on errors, which
// @ag-ui/client rejects). Passes exactly one terminal event and completes after it; a source error
// becomes a balanced RUN_ERROR.
import type { OperatorFunction } from "rxjs";
import { operate, operatorObserver } from "./lib/operate.js";
import type { Translate } from "./lib/interrupts.js";
import { runErrorEvent } from "./lib/run-error-event.js";
import { SpanLedger } from "./lib/span-ledger.js";
import type { AguiEvent } from "./types.js";

export interface BalanceSpansOptions {
  /** Localizes the RUN_ERROR a source error becomes (the run's language). */
  translate?: Translate;
  language?: string;
}

/**
 * Ends every open span before the run's one terminal event, then completes.
 *
 * @example
 * events$.pipe(balanceSpans())
 * // TEXT_MESSAGE_START m, TOOL_CALL_START c, RUN_ERROR
 * // → TEXT_MESSAGE_START m, TOOL_CALL_START c, TOOL_CALL_END c, TEXT_MESSAGE_END m, RUN_ERROR, complete
 */
export function balanceSpans<T extends { type: string }>(options: BalanceSpansOptions = {}): OperatorFunction<T, T | AguiEvent> {
  return operate<T, T | AguiEvent>((source, subscriber) => {
    const spans = new SpanLedger();
    let done = false;
    const closeAll = (timestamp: number | undefined) => {
      for (const end of spans.close(timestamp)) subscriber.next(end);
    };

    const upstream = source.subscribe(
      operatorObserver(subscriber, {
        next: (item) => {
          if (done) return;
          if (spans.track(item)) {
            done = true;
            closeAll((item as { timestamp?: number }).timestamp);
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
          subscriber.next(runErrorEvent(error, { timestamp, ...options }));
          subscriber.complete();
        },
        complete: () => {
          if (done) return;
          closeAll(undefined);
          subscriber.complete();
        },
      }),
    );
    return () => upstream.unsubscribe();
  });
}
