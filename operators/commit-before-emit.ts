// Holds an item back until the edge has made what it reveals durable: an interrupt must be on disk
// before its RUN_FINISHED is written, a task id before the session event exposes it. `commit` returns
// nothing for items that need no write (the synchronous fast path) or an ObservableInput that completes
// once the write is durable; later items wait behind it, in order. A failed write replaces the item with
// `onFailure(error, item)` and nothing after it is passed on.
import { from, type ObservableInput, type OperatorFunction, type Subscriber, type Subscription, type Unsubscribable } from "rxjs";
import { operate, operatorObserver, type OperatorHandlers } from "./lib/operate.js";

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
  return operate<T, T | F>((source, subscriber) => {
    const queue = new CommitQueue(options, subscriber);
    queue.upstream = source.subscribe(operatorObserver(subscriber, queue));
    return queue;
  });
}

/**
 * One subscription's queue. A class rather than closures over its state: a run holds two of these for as long as
 * it streams (hours, for a parked interrupt), and its methods live on the prototype.
 */
class CommitQueue<T, F> implements OperatorHandlers<T>, Unsubscribable {
  // A queue read from `head` (shift() would make draining a long backlog quadratic).
  private queue: T[] = [];
  private head = 0;
  private writing: Subscription | undefined;
  private sourceDone = false;
  private failed = false;
  upstream: Subscription | undefined;

  constructor(
    private readonly options: CommitBeforeEmitOptions<T, F>,
    private readonly subscriber: Subscriber<T | F>,
  ) {}

  next(item: T): void {
    if (this.failed) return;
    if (!this.writing && this.queued() === 0) {
      // Fast path: no write in flight and nothing queued; most items need no write at all.
      let pending: ObservableInput<unknown> | undefined | void;
      try {
        pending = this.options.commit(item);
      } catch (error) {
        return this.fail(error, item);
      }
      if (pending === undefined) return this.pass(item);
      this.queue.push(item);
      this.drain(pending);
    } else {
      this.queue.push(item);
    }
  }

  error(error: unknown): void {
    if (!this.failed) this.subscriber.error(error);
  }

  complete(): void {
    this.sourceDone = true;
    this.drain();
  }

  unsubscribe(): void {
    this.writing?.unsubscribe();
    this.upstream?.unsubscribe();
  }

  private queued(): number {
    return this.queue.length - this.head;
  }

  private pass(item: T): void {
    const keep = this.options.keep;
    if (keep === undefined || keep(item)) this.subscriber.next(item);
  }

  /** `first`: the commit of the queue's head, already requested by the fast path. */
  private drain(first?: ObservableInput<unknown>): void {
    while (!this.writing && !this.failed && this.queued() > 0) {
      const item = this.queue[this.head++] as T;
      if (this.head === this.queue.length) {
        this.queue = [];
        this.head = 0;
      }
      let pending: ObservableInput<unknown> | undefined | void = first;
      first = undefined;
      if (pending === undefined) {
        try {
          pending = this.options.commit(item);
        } catch (error) {
          return this.fail(error, item);
        }
      }
      if (pending === undefined) {
        this.pass(item);
        continue;
      }
      let settled = false;
      const write = from(pending).subscribe({
        error: (error) => {
          settled = true;
          this.writing = undefined;
          this.fail(error, item);
        },
        complete: () => {
          settled = true;
          this.writing = undefined;
          this.pass(item);
          this.drain();
        },
      });
      if (!settled) this.writing = write;
    }
    if (!this.writing && !this.failed && this.sourceDone && this.queued() === 0) this.subscriber.complete();
  }

  private fail(error: unknown, item: T): void {
    this.failed = true;
    this.queue = [];
    this.head = 0;
    this.subscriber.next(this.options.onFailure(error, item));
    this.subscriber.complete();
  }
}
