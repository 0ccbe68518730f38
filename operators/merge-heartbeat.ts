// Interleaves a HEARTBEAT marker after `intervalMs` without output (the seeds: 15 s), so proxies keep an
// idle SSE connection open while the kernel waits on a model or a tool. The timer restarts after every
// event and every heartbeat; time comes from the injected scheduler so marbles can drive it.
import { asyncScheduler, type OperatorFunction, type SchedulerAction, type SchedulerLike, type Subscription } from "rxjs";
import { operate, operatorObserver } from "./lib/operate.js";
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
    let lastOutput = scheduler.now();
    // One scheduled action per stream, rescheduled from inside itself: rxjs then keeps the same action
    // and, while the delay stays the same (an idle stream), the same timer — a heartbeat allocates nothing.
    const timer: Subscription = scheduler.schedule(function (this: SchedulerAction<unknown>) {
      const idle = scheduler.now() - lastOutput;
      if (idle >= intervalMs) {
        lastOutput = scheduler.now();
        subscriber.next(HEARTBEAT);
        this.schedule(undefined, intervalMs);
      } else {
        this.schedule(undefined, intervalMs - idle);
      }
    }, intervalMs);
    const upstream = source.subscribe(
      operatorObserver(subscriber, {
        next: (value) => {
          lastOutput = scheduler.now();
          subscriber.next(value);
        },
      }),
    );
    return () => {
      timer.unsubscribe();
      upstream.unsubscribe();
    };
  });
}
