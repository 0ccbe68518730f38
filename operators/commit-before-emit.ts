// Holds an item back until the edge has made what it reveals durable: an interrupt must be on disk
// before its RUN_FINISHED is written, a task id before the session event exposes it. `commit` returns
// nothing for items that need no write (the synchronous fast path) or an ObservableInput that completes
// once the write is durable; later items wait behind it, in order. A failed write replaces the item with
// `onFailure(error, item)` and nothing after it is passed on.
import { from, type ObservableInput, type OperatorFunction, type Subscription } from "rxjs";
import { operate, operatorObserver } from "./lib/operate.js";

export interface CommitBeforeEmitOptions<T, F> {
  commit: (item: T) => ObservableInput<unknown> | undefined | void;
  onFailure: (error: unknown, item: T) => F;
  /** After its commit, an item is passed on only when this says so (default: every item). */
  keep?: (item: T) => boolean;
}

/**
 * Passes each item once `commit(item)` made it durable; items that need no write pass at once, in order.
 *
 * @example
 * events$.pipe(commitBeforeEmit({
 *   commit: (e) => (e.type === "RUN_FINISHED" ? store.save(record) : undefined), // a Promise: RUN_FINISHED waits for it
 *   onFailure: () => ({ type: "RUN_ERROR", code: "STATE_PERSISTENCE_FAILED", message: "…" }),
 * }))
 */
export function commitBeforeEmit<T, F>(options: CommitBeforeEmitOptions<T, F>): OperatorFunction<T, T | F> {
  const keep = options.keep;
  return operate<T, T | F>((source, subscriber) => {
    const pass = (item: T) => {
      if (keep === undefined || keep(item)) subscriber.next(item);
    };
    // A queue read from `head` (shift() would make draining a long backlog quadratic).
    let queue: T[] = [];
    let head = 0;
    const queued = () => queue.length - head;
    let writing: Subscription | undefined;
    let sourceDone = false;
    let failed = false;

    /** `first`: the commit of the queue's head, already requested by the fast path. */
    const drain = (first?: ObservableInput<unknown>) => {
      while (!writing && !failed && queued() > 0) {
        const item = queue[head++] as T;
        if (head === queue.length) {
          queue = [];
          head = 0;
        }
        let pending: ObservableInput<unknown> | undefined | void = first;
        first = undefined;
        if (pending === undefined) {
          try {
            pending = options.commit(item);
          } catch (error) {
            return fail(error, item);
          }
        }
        if (pending === undefined) {
          pass(item);
          continue;
        }
        let settled = false;
        const write = from(pending).subscribe({
          error: (error) => {
            settled = true;
            writing = undefined;
            fail(error, item);
          },
          complete: () => {
            settled = true;
            writing = undefined;
            pass(item);
            drain();
          },
        });
        if (!settled) writing = write;
      }
      if (!writing && !failed && sourceDone && queued() === 0) subscriber.complete();
    };

    const fail = (error: unknown, item: T) => {
      failed = true;
      queue = [];
      head = 0;
      subscriber.next(options.onFailure(error, item));
      subscriber.complete();
    };

    const upstream = source.subscribe(operatorObserver(subscriber, {
      next: (item) => {
        if (failed) return;
        if (!writing && queued() === 0) {
          // Fast path: no write in flight and nothing queued; most items need no write at all.
          let pending: ObservableInput<unknown> | undefined | void;
          try {
            pending = options.commit(item);
          } catch (error) {
            return fail(error, item);
          }
          if (pending === undefined) return pass(item);
          queue.push(item);
          drain(pending);
        } else {
          queue.push(item);
        }
      },
      error: (error) => {
        if (!failed) subscriber.error(error);
      },
      complete: () => {
        sourceDone = true;
        drain();
      },
    }));
    return () => {
      writing?.unsubscribe();
      upstream.unsubscribe();
    };
  });
}
