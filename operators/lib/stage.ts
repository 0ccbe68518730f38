// A projection stage as a plain state machine, so the same code runs as its own rxjs operator (in its
// marble spec, or composed by hand) and fused with its neighbours in projectA2A: a chain of eight
// operators costs eight Subscriber hops per item, a fused chain one, and the projection's hot path is
// a few items per frame at 100k frames a second. The semantics are those of the chained operators: a
// throw in a stage is the error its downstream sees (wrapped by `wrap`), and once a stage has completed
// or failed its downstream, nothing more reaches that downstream.
import { Observable, type OperatorFunction, type Subscriber } from "rxjs";
import { operatorObserver, passThrown, type OperatorHandlers } from "./operate.js";

/** Where a stage sends its output: the next stage, or the subscriber. Call its methods on it (they are not bound). */
export interface StageOutput<O> {
  next(item: O): void;
  error(error: unknown): void;
  complete(): void;
}

/** One subscription's worth of a stage (an object literal or a class instance); error and complete default to passing the signal on. */
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
export function stageOperator<I, O>(stage: Stage<I, O>, wrap?: Wrap): OperatorFunction<I, O> {
  return fuseStages<I, O>([stage as Stage<unknown, unknown>], wrap);
}

/** Turns what a stage threw into the error its downstream sees. */
export type Wrap = (thrown: unknown) => unknown;

/**
 * Stages run in order inside one operator: what stage k emits is the input of the next stage that reads
 * it, by a direct call. `wrap`: one for every stage, or one per stage (stage k's is `wrap[k]`).
 *
 * @example
 * frames$.pipe(fuseStages([readFrames(options), guardIdentity(options)], unprocessableFrame))
 */
export function fuseStages<I, O>(stages: readonly Stage<unknown, unknown>[], wrap: Wrap | readonly Wrap[] = passThrown): OperatorFunction<I, O> {
  return (source) =>
    new Observable<O>((subscriber) => {
      const chain = new FusedChain(subscriber as Subscriber<unknown>, stages.length, wrap);
      // Built from the last stage back: a stage may emit when it is set up, into the stages after it.
      for (let k = stages.length - 1; k >= 0; k--) chain.handlers[k] = stages[k]!(new StageOut(chain, k));
      chain.routes = routeTable(chain.handlers);
      return source.subscribe(operatorObserver<I>(subscriber, chain));
    });
}

/**
 * One subscription of a fused chain. Classes rather than closures: an idle stream holds one of these and
 * one small StageOut per stage, not three closures per stage.
 */
class FusedChain implements OperatorHandlers<unknown> {
  readonly handlers: StageHandlers<unknown>[];
  /**
   * done[k]: stage k's input saw a completion or an error; nothing after it is read (what a stage emits
   * after it completed its downstream is dropped there). done[n] is the subscriber's.
   */
  readonly done: boolean[];
  anyDone = false;
  routes: RouteTable = new Map();

  constructor(
    readonly subscriber: Subscriber<unknown>,
    readonly n: number,
    readonly wrap: Wrap | readonly Wrap[],
  ) {
    this.handlers = new Array<StageHandlers<unknown>>(n);
    this.done = new Array<boolean>(n + 1).fill(false);
  }

  // The source's items and signals: the chain is its own source observer's handlers.
  next(item: unknown): void {
    this.deliver(-1, 0, item);
  }

  error(error: unknown): void {
    this.signal(0, "error", error);
  }

  complete(): void {
    this.signal(0, "complete");
  }

  /** Where an item of stage `from` goes when the next stage reads some types only: the first later stage that reads it (n: the subscriber). */
  route(from: number, item: unknown): number {
    const to = from + 1;
    const type = (item as { type?: unknown } | null)?.type;
    let row = this.routes.get(type);
    if (row === undefined) this.routes.set(type, (row = new Int32Array(this.n).fill(-1)));
    // Filled in as needed: while the chain is set up, only the stages after `from` exist.
    if (row[from]! < 0) {
      let next = to;
      while (next < this.n && this.handlers[next]!.reads !== undefined && !this.handlers[next]!.reads!.has(type)) next++;
      row[from] = next;
    }
    return row[from]!;
  }

  /** Into stage `to` (n: the subscriber) from stage `from` (-1: the source), unless an input on the way is done. */
  deliver(from: number, to: number, item: unknown): void {
    if (this.anyDone) for (let k = from + 1; k <= to; k++) if (this.done[k]) return;
    if (to === this.n) return this.subscriber.next(item);
    try {
      this.handlers[to]!.next(item);
    } catch (thrown) {
      this.signal(to + 1, "error", this.wrapOf(to)(thrown));
    }
  }

  /** An error or a completion, into stage `k` (n: the subscriber); a stage without a handler passes it on. */
  signal(k: number, kind: "error" | "complete", error?: unknown): void {
    if (this.done[k]) return;
    this.done[k] = this.anyDone = true;
    if (k === this.n) return kind === "error" ? this.subscriber.error(error) : this.subscriber.complete();
    const handlers = this.handlers[k]!;
    if (!handlers[kind]) return this.signal(k + 1, kind, error);
    // Called on the handlers, not detached: a stage may be a class instance with its methods on the prototype.
    try {
      if (kind === "error") handlers.error!(error);
      else handlers.complete!();
    } catch (thrown) {
      this.signal(k + 1, "error", this.wrapOf(k)(thrown));
    }
  }

  private wrapOf(k: number): Wrap {
    return typeof this.wrap === "function" ? this.wrap : this.wrap[k]!;
  }
}

/** Stage k's output. */
class StageOut implements StageOutput<unknown> {
  /** The next stage when it reads everything (or the subscriber after the last): no lookup per item. -1: route by type. */
  private readonly to: number;

  constructor(
    private readonly chain: FusedChain,
    private readonly k: number,
  ) {
    // The stages after k are already set up (the chain is built from the last back).
    this.to = k + 1 === chain.n || chain.handlers[k + 1]!.reads === undefined ? k + 1 : -1;
  }

  /** The last item type routed and where it went: a run of deltas routes once, not once per item. */
  private lastType: unknown = undefined;
  private lastTo = -1;

  next(item: unknown): void {
    if (this.to >= 0) return this.chain.deliver(this.k, this.to, item);
    const type = (item as { type?: unknown } | null)?.type;
    if (type !== this.lastType || this.lastTo < 0) {
      this.lastTo = this.chain.route(this.k, item);
      this.lastType = type;
    }
    this.chain.deliver(this.k, this.lastTo, item);
  }

  error(error: unknown): void {
    this.chain.signal(this.k + 1, "error", error);
  }

  complete(): void {
    this.chain.signal(this.k + 1, "complete");
  }
}

/** Per item type, the stage each stage's output of that type goes to. */
type RouteTable = Map<unknown, Int32Array>;

// Route tables depend only on the stages' `reads` sets (constants of their modules), so chains with the
// same stages share one: an idle stream holds none of its own. A bounded memo, like normalizeState's.
const READS_IDS = new WeakMap<ReadonlySet<unknown>, number>();
const ROUTE_TABLES = new Map<string, RouteTable>();
let nextReadsId = 0;

function routeTable(handlers: readonly StageHandlers<unknown>[]): RouteTable {
  let key = "";
  for (const { reads } of handlers) {
    if (reads === undefined) {
      key += "*,";
      continue;
    }
    let id = READS_IDS.get(reads);
    if (id === undefined) READS_IDS.set(reads, (id = nextReadsId++));
    key += `${id},`;
  }
  let table = ROUTE_TABLES.get(key);
  if (table === undefined) {
    if (ROUTE_TABLES.size >= 64) ROUTE_TABLES.clear();
    ROUTE_TABLES.set(key, (table = new Map()));
  }
  return table;
}
