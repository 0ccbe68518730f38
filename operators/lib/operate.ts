// How rxjs builds its own operators (internal/util/lift.ts, operators/OperatorSubscriber.ts), for ours: a
// throw inside a hand-written next/complete/error becomes that subscription's error instead of escaping to
// rxjs's unhandled-error path, which re-throws it on a timer and ends the process with every stream in it.
import { Observable, type Observer, type OperatorFunction, type Subscriber, type TeardownLogic } from "rxjs";

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
): Observer<T> {
  const { next, error, complete } = handlers;
  return {
    next: (value) => {
      try {
        next(value);
      } catch (thrown) {
        destination.error(wrap(thrown));
      }
    },
    error: error
      ? (e) => {
          try {
            error(e);
          } catch (thrown) {
            destination.error(wrap(thrown));
          }
        }
      : (e) => destination.error(e),
    complete: complete
      ? () => {
          try {
            complete();
          } catch (thrown) {
            destination.error(wrap(thrown));
          }
        }
      : () => destination.complete(),
  };
}
