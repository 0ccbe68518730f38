// Interleaves a HEARTBEAT marker after `intervalMs` without output (the seeds: 15 s), so proxies keep an
// idle SSE connection open while the kernel waits on a model or a tool. The timer restarts after every
// event and every heartbeat; time comes from the injected scheduler so marbles can drive it.
import { Observable, asyncScheduler, type OperatorFunction, type SchedulerLike, type Subscription } from "rxjs";
import { HEARTBEAT, type Heartbeat } from "./types.js";

export interface MergeHeartbeatOptions {
  intervalMs?: number;
  scheduler?: SchedulerLike;
}

export function mergeHeartbeat<T>(options: MergeHeartbeatOptions = {}): OperatorFunction<T, T | Heartbeat> {
  const intervalMs = options.intervalMs ?? 15_000;
  const scheduler = options.scheduler ?? asyncScheduler;
  return (source) =>
    new Observable<T | Heartbeat>((subscriber) => {
      let timer: Subscription | undefined;
      let lastOutput = scheduler.now();
      // One timer per stream, re-armed lazily: per-event work stays a clock read, not a reschedule.
      const arm = (delay: number) => {
        timer = scheduler.schedule(() => {
          const idle = scheduler.now() - lastOutput;
          if (idle >= intervalMs) {
            lastOutput = scheduler.now();
            subscriber.next(HEARTBEAT);
            arm(intervalMs);
          } else {
            arm(intervalMs - idle);
          }
        }, delay);
      };
      arm(intervalMs);
      const upstream = source.subscribe({
        next: (value) => {
          lastOutput = scheduler.now();
          subscriber.next(value);
        },
        error: (e) => subscriber.error(e),
        complete: () => subscriber.complete(),
      });
      return () => {
        timer?.unsubscribe();
        upstream.unsubscribe();
      };
    });
}
