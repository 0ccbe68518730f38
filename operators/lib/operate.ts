// How rxjs builds its own operators (internal/util/lift.ts, operators/OperatorSubscriber.ts), for ours: a
// throw inside a hand-written next/complete/error becomes that subscription's error instead of escaping to
// rxjs's unhandled-error path, which re-throws it on a timer and ends the process with every stream in it.
import { Observable, Subscriber, type OperatorFunction, type TeardownLogic } from "rxjs";

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

/**
 * The observer an operator subscribes to its source with. `wrap` turns what a handler threw into the error
 * passed downstream (e.g. a protocol error for a frame that could not be processed).
 */
export function operatorObserver<T>(
  destination: Subscriber<unknown>,
  handlers: OperatorHandlers<T>,
  wrap: (thrown: unknown) => unknown = (thrown) => thrown,
): Subscriber<T> {
  return new OperatorSubscriber(destination, handlers, wrap);
}

/**
 * A Subscriber, not a plain observer: `subscribe` uses it as is, where a plain observer gets wrapped in a
 * SafeSubscriber with a try/catch of its own — two more calls per item per operator on the hot path. Like
 * rxjs's OperatorSubscriber it is chained to `destination`: when that closes, the source is let go.
 */
class OperatorSubscriber<T> extends Subscriber<T> {
  constructor(destination: Subscriber<unknown>, { next, error, complete }: OperatorHandlers<T>, wrap: (thrown: unknown) => unknown) {
    super(destination);
    this._next = (value: T) => {
      try {
        next(value);
      } catch (thrown) {
        destination.error(wrap(thrown));
      }
    };
    this._error = (e: unknown) => {
      try {
        if (error) error(e);
        else destination.error(e);
      } catch (thrown) {
        destination.error(wrap(thrown));
      } finally {
        this.unsubscribe();
      }
    };
    this._complete = () => {
      try {
        if (complete) complete();
        else destination.complete();
      } catch (thrown) {
        destination.error(wrap(thrown));
      } finally {
        this.unsubscribe();
      }
    };
  }
}
