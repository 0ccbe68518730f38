// A projection stage as a plain state machine, so the same code runs as its own rxjs operator (in its
// marble spec, or composed by hand) and fused with its neighbours in projectA2A: a chain of eight
// operators costs eight Subscriber hops per item, a fused chain one, and the projection's hot path is
// a few items per frame at 100k frames a second. The semantics are those of the chained operators: a
// throw in a stage is the error its downstream sees (wrapped by `wrap`), and once a stage has completed
// or failed its downstream, nothing more reaches that downstream.
import { Observable, type OperatorFunction } from "rxjs";
import { operatorObserver } from "./operate.js";

/** Where a stage sends its output: the next stage, or the subscriber. */
export interface StageOutput<O> {
  next(item: O): void;
  error(error: unknown): void;
  complete(): void;
}

/** One subscription's worth of a stage; error and complete default to passing the signal on. */
export interface StageHandlers<I> {
  next(item: I): void;
  error?(error: unknown): void;
  complete?(): void;
  /**
   * The item types (`item.type`) this stage looks at. A stage that says so promises that `next` passes an
   * item of any other type on at once, unchanged and unseen; a fused chain then hands such items straight
   * to the next stage that reads them (most items concern one or two of eight stages).
   */
  reads?: ReadonlySet<unknown>;
}

/** Called once per subscription (all mutable state made inside it is that subscription's own); may emit at once. */
export type Stage<I, O> = (out: StageOutput<O>) => StageHandlers<I>;

/**
 * A stage as an operator.
 *
 * @example
 * const upper: Stage<string, string> = (out) => ({ next: (s) => out.next(s.toUpperCase()) });
 * of("a", "b").pipe(stageOperator(upper)) // "A", "B"
 */
export function stageOperator<I, O>(stage: Stage<I, O>, wrap?: (thrown: unknown) => unknown): OperatorFunction<I, O> {
  return fuseStages<I, O>([stage as Stage<unknown, unknown>], wrap);
}

/**
 * Stages run in order inside one operator: what stage k emits is the input of the next stage that reads
 * it, by a direct call.
 *
 * @example
 * frames$.pipe(fuseStages([readFrames(options), guardIdentity(options)], unprocessableFrame))
 */
export function fuseStages<I, O>(stages: readonly Stage<unknown, unknown>[], wrap: (thrown: unknown) => unknown = (thrown) => thrown): OperatorFunction<I, O> {
  return (source) =>
    new Observable<O>((subscriber) => {
      const n = stages.length;
      const handlers: StageHandlers<unknown>[] = new Array<StageHandlers<unknown>>(n);
      // done[k]: stage k's input saw a completion or an error; nothing after it is read (what a stage
      // emits after it completed its downstream is dropped there). done[n] is the subscriber's.
      const done: boolean[] = new Array<boolean>(n + 1).fill(false);
      let anyDone = false;

      /** Into stage `to` (n: the subscriber) from stage `from` (-1: the source), unless an input on the way is done. */
      const deliver = (from: number, to: number, item: unknown) => {
        if (anyDone) for (let k = from + 1; k <= to; k++) if (done[k]) return;
        if (to === n) return subscriber.next(item as O);
        try {
          handlers[to]!.next(item);
        } catch (thrown) {
          signal(to + 1, "error", wrap(thrown));
        }
      };

      /** An error or a completion, into stage `k` (n: the subscriber); a stage without a handler passes it on. */
      const signal = (k: number, kind: "error" | "complete", error?: unknown): void => {
        if (done[k]) return;
        done[k] = anyDone = true;
        if (k === n) return kind === "error" ? subscriber.error(error) : subscriber.complete();
        const handle = handlers[k]![kind];
        if (!handle) return signal(k + 1, kind, error);
        try {
          if (kind === "error") handle(error);
          else (handle as () => void)();
        } catch (thrown) {
          signal(k + 1, "error", wrap(thrown));
        }
      };

      /** Stage k's output: each item to the first later stage that reads its type. */
      const output = (k: number): StageOutput<unknown> => {
        const routes = new Map<unknown, number>();
        const route = (type: unknown): number => {
          let to = k + 1;
          while (to < n && handlers[to]!.reads !== undefined && !handlers[to]!.reads!.has(type)) to++;
          routes.set(type, to);
          return to;
        };
        // The next stage reads everything (or there is none): no lookup per item.
        const direct = k + 1 === n || handlers[k + 1]!.reads === undefined;
        return {
          next: direct
            ? (item) => deliver(k, k + 1, item)
            : (item) => {
                const type = (item as { type?: unknown } | null)?.type;
                deliver(k, routes.get(type) ?? route(type), item);
              },
          error: (error) => signal(k + 1, "error", error),
          complete: () => signal(k + 1, "complete"),
        };
      };

      // Built from the last stage back: a stage may emit when it is set up, into the stages after it.
      for (let k = n - 1; k >= 0; k--) handlers[k] = stages[k]!(output(k));
      return source.subscribe(
        operatorObserver<I>(subscriber, {
          next: (item) => deliver(-1, 0, item),
          error: (error) => signal(0, "error", error),
          complete: () => signal(0, "complete"),
        }),
      );
    });
}
