// A projection stage as a plain state machine, so the same code runs as its own rxjs operator (in its
// marble spec, or composed by hand) and fused with its neighbours in projectA2A: a chain of eight
// operators costs eight Subscriber hops per item, a fused chain one, and the projection's hot path is
// a few items per frame at 100k frames a second. The semantics are those of the chained operators: a
// throw in a stage is the error its downstream sees (wrapped by `wrap`), and once a stage has completed
// or failed its downstream, nothing more reaches that downstream.
import { Observable, type OperatorFunction } from "rxjs";

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
 * Stages run in order inside one operator: what stage k emits is stage k+1's input, by a direct call.
 *
 * @example
 * frames$.pipe(fuseStages([readFrames(options), guardIdentity(options)], unprocessableFrame))
 */
export function fuseStages<I, O>(stages: readonly Stage<unknown, unknown>[], wrap: (thrown: unknown) => unknown = (thrown) => thrown): OperatorFunction<I, O> {
  return (source) =>
    new Observable<O>((subscriber) => {
      // Built from the last stage back: each stage's output is the input of the one after it.
      let out: StageOutput<unknown> = subscriber as StageOutput<unknown>;
      for (let i = stages.length - 1; i >= 0; i--) out = link(stages[i]!, out, wrap);
      return source.subscribe(out as StageOutput<I>);
    });
}

/**
 * The input side of `stage`, writing straight into `downstream` (the next stage's input, or the subscriber).
 * `done`: this input saw a completion or an error; nothing after it is read (what a stage emits after it
 * completed its downstream is dropped there).
 */
function link(stage: Stage<unknown, unknown>, downstream: StageOutput<unknown>, wrap: (thrown: unknown) => unknown): StageOutput<unknown> {
  let done = false;
  const handlers = stage(downstream);
  const fail = (thrown: unknown) => downstream.error(wrap(thrown));
  return {
    next: (item) => {
      if (done) return;
      try {
        handlers.next(item);
      } catch (thrown) {
        fail(thrown);
      }
    },
    error: (error) => {
      if (done) return;
      done = true;
      if (!handlers.error) return downstream.error(error);
      try {
        handlers.error(error);
      } catch (thrown) {
        fail(thrown);
      }
    },
    complete: () => {
      if (done) return;
      done = true;
      if (!handlers.complete) return downstream.complete();
      try {
        handlers.complete();
      } catch (thrown) {
        fail(thrown);
      }
    },
  };
}
