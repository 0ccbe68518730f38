// Closes every open text, reasoning, tool and step span before the terminal event — RUN_FINISHED
// (success or interrupt) and RUN_ERROR alike (the reference leaves spans open on errors, which
// @ag-ui/client rejects). Passes exactly one terminal event and completes after it; a source error
// becomes a balanced RUN_ERROR.
import type { OperatorFunction, Subscriber, Subscription, Unsubscribable } from "rxjs";
import { operate, operatorObserver, type OperatorHandlers } from "./lib/operate.js";
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
    const balancer = new SpanBalancer<T>(subscriber, options);
    balancer.upstream = source.subscribe(operatorObserver(subscriber, balancer));
    return balancer;
  });
}

/**
 * One subscription's spans. A class rather than closures over its state: a run holds it for as long as it streams
 * (hours, for a parked interrupt), and its methods live on the prototype.
 */
class SpanBalancer<T extends { type: string }> implements OperatorHandlers<T>, Unsubscribable {
  private readonly spans = new SpanLedger();
  private done = false;
  upstream: Subscription | undefined;

  constructor(
    private readonly subscriber: Subscriber<T | AguiEvent>,
    private readonly options: BalanceSpansOptions,
  ) {}

  next(item: T): void {
    if (this.done) return;
    if (this.spans.track(item)) {
      this.done = true;
      this.closeAll((item as { timestamp?: number }).timestamp);
      this.subscriber.next(item);
      this.subscriber.complete();
      return;
    }
    this.subscriber.next(item);
  }

  error(error: unknown): void {
    if (this.done) return;
    this.done = true;
    const timestamp = Date.now();
    this.closeAll(timestamp);
    this.subscriber.next(runErrorEvent(error, { timestamp, ...this.options }));
    this.subscriber.complete();
  }

  complete(): void {
    if (this.done) return;
    this.closeAll(undefined);
    this.subscriber.complete();
  }

  unsubscribe(): void {
    this.upstream?.unsubscribe();
  }

  private closeAll(timestamp: number | undefined): void {
    for (const end of this.spans.close(timestamp)) this.subscriber.next(end);
  }
}
