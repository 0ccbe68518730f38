// Interleaves a HEARTBEAT marker after `intervalMs` without output (the seeds: 15 s), so proxies keep an
// idle SSE connection open while the kernel waits on a model or a tool. The timer restarts after every
// event and every heartbeat; time comes from the injected scheduler so marbles can drive it.
import { asyncScheduler, type OperatorFunction, type SchedulerAction, type SchedulerLike, type Subscriber, type Subscription, type Unsubscribable } from "rxjs";
import { operate, operatorObserver, type OperatorHandlers } from "./lib/operate.js";
import { HEARTBEAT, type Heartbeat } from "./types.js";

export interface MergeHeartbeatOptions {
  intervalMs?: number;
  scheduler?: SchedulerLike;
}

/**
 * Adds a HEARTBEAT marker after every `intervalMs` of silence (default 15 s); completes with the source.
 *
 * @example
 * events$.pipe(mergeHeartbeat({ intervalMs: 15_000 }))
 * // a ─ 40 s of silence ─ b  →  a, HEARTBEAT (15 s), HEARTBEAT (30 s), b
 */
export function mergeHeartbeat<T>(options: MergeHeartbeatOptions = {}): OperatorFunction<T, T | Heartbeat> {
  const intervalMs = options.intervalMs ?? 15_000;
  const scheduler = options.scheduler ?? asyncScheduler;
  return operate<T, T | Heartbeat>((source, subscriber) => {
    const heartbeats = new Heartbeats<T>(subscriber, scheduler, intervalMs);
    heartbeats.upstream = source.subscribe(operatorObserver(subscriber, heartbeats));
    return heartbeats;
  });
}

/**
 * One subscription's clock. A class rather than closures over its state: an idle stream holds it for as long as it
 * is open, and its methods (and the timer's work) are shared.
 */
class Heartbeats<T> implements OperatorHandlers<T>, Unsubscribable {
  lastOutput: number;
  private readonly timer: Subscription;
  upstream: Subscription | undefined;

  constructor(
    readonly subscriber: Subscriber<T | Heartbeat>,
    readonly scheduler: SchedulerLike,
    readonly intervalMs: number,
  ) {
    this.lastOutput = scheduler.now();
    this.timer = scheduler.schedule(beat, intervalMs, this as Heartbeats<unknown>);
  }

  next(value: T): void {
    this.lastOutput = this.scheduler.now();
    this.subscriber.next(value);
  }

  unsubscribe(): void {
    this.timer.unsubscribe();
    this.upstream?.unsubscribe();
  }
}

// One scheduled action per stream, rescheduled from inside itself with the same state: rxjs then keeps the same
// action and, while the delay stays the same (an idle stream), the same timer — a heartbeat allocates nothing.
function beat(this: SchedulerAction<Heartbeats<unknown>>, state?: Heartbeats<unknown>): void {
  const heartbeats = state!;
  const { scheduler, intervalMs } = heartbeats;
  const idle = scheduler.now() - heartbeats.lastOutput;
  if (idle >= intervalMs) {
    heartbeats.lastOutput = scheduler.now();
    heartbeats.subscriber.next(HEARTBEAT);
    this.schedule(heartbeats, intervalMs);
  } else {
    this.schedule(heartbeats, intervalMs - idle);
  }
}
