// How rxjs builds its own operators (internal/util/lift.ts, operators/OperatorSubscriber.ts), for ours: a
// throw inside a hand-written next/complete/error becomes that subscription's error instead of escaping to
// rxjs's unhandled-error path, which re-throws it on a timer and ends the process with every stream in it.
import { Observable, Subscriber, type OperatorFunction, type TeardownLogic } from "rxjs";
import { atItsSize } from "./short-list.js";

/** `init` runs once per subscription: all mutable state created inside it is that subscription's own. */
export function operate<T, R>(init: (source: Observable<T>, subscriber: Subscriber<R>) => TeardownLogic): OperatorFunction<T, R> {
  return (source) => new Observable<R>((subscriber) => init(source, subscriber));
}

export interface OperatorHandlers<T> {
  next: (value: T) => void;
  /** Default: pass the error on. */
  error?: (error: unknown) => void;
  /** Default: complete. */
  complete?: () => void;
}

/** What a handler threw, passed on as it is. */
export const passThrown = (thrown: unknown): unknown => thrown;

/**
 * The observer an operator subscribes to its source with. `wrap` turns what a handler threw into the error
 * passed downstream (e.g. a protocol error for a frame that could not be processed).
 */
export function operatorObserver<T>(
  destination: Subscriber<unknown>,
  handlers: OperatorHandlers<T>,
  wrap: (thrown: unknown) => unknown = passThrown,
): Subscriber<T> {
  return new OperatorSubscriber(destination, handlers, wrap);
}

/**
 * A Subscriber, not a plain observer: `subscribe` uses it as is, where a plain observer gets wrapped in a
 * SafeSubscriber with a try/catch of its own — two more calls per item per operator on the hot path. Like
 * rxjs's OperatorSubscriber it is chained to `destination`: when that closes, the source is let go. Its
 * methods are on the prototype (rxjs's make three closures per subscriber): an idle stream holds several.
 */
class OperatorSubscriber<T> extends Subscriber<T> {
  constructor(
    destination: Subscriber<unknown>,
    private readonly handlers: OperatorHandlers<T>,
    private readonly wrap: (thrown: unknown) => unknown,
  ) {
    super(destination);
  }

  // rxjs grows a subscription's finalizer list with push; ours hold two or three for as long as a stream is open.
  // Kept at their size when one is added (once per subscription, not per item).
  override add(teardown: TeardownLogic): void {
    super.add(teardown);
    const self = this as unknown as { _finalizers: unknown[] | null };
    if (self._finalizers !== null) self._finalizers = atItsSize(self._finalizers);
  }

  protected override _next(value: T): void {
    try {
      this.handlers.next(value);
    } catch (thrown) {
      this.destination.error(this.wrap(thrown));
    }
  }

  protected override _error(error: unknown): void {
    try {
      if (this.handlers.error) this.handlers.error(error);
      else this.destination.error(error);
    } catch (thrown) {
      this.destination.error(this.wrap(thrown));
    } finally {
      this.unsubscribe();
    }
  }

  protected override _complete(): void {
    try {
      if (this.handlers.complete) this.handlers.complete();
      else this.destination.complete();
    } catch (thrown) {
      this.destination.error(this.wrap(thrown));
    } finally {
      this.unsubscribe();
    }
  }
}
