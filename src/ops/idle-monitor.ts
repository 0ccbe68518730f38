// --idle-shutdown (reference-adapter §8.4): the gateway exits once nothing has happened for a while and
// nothing is waiting on it — no active run and no pending interrupt, which a client could still answer.

export interface IdleMonitorOptions {
  idleMs: number;
  /** True when no run is active and no loaded thread holds pending interrupts. */
  isIdle(): boolean;
  /** Called at most once. */
  onIdle(): void;
  /** Default min(5000, max(100, idleMs / 4)). */
  checkEveryMs?: number;
}

export interface IdleMonitor {
  /** Activity (admission, run release): the idle period starts again from now. */
  touch(): void;
  stop(): void;
}

export function startIdleMonitor(o: IdleMonitorOptions): IdleMonitor {
  const checkEveryMs = o.checkEveryMs ?? Math.min(5_000, Math.max(100, o.idleMs / 4));
  // Start of the current quiet period: the last touch, or the last check that saw the gateway busy.
  let quietSince = Date.now();
  let stopped = false;
  const timer = setInterval(() => {
    if (stopped) return;
    const now = Date.now();
    if (!o.isIdle()) {
      quietSince = now;
      return;
    }
    if (now - quietSince < o.idleMs) return;
    stop();
    o.onIdle();
  }, checkEveryMs);
  // The monitor alone never keeps the process alive.
  timer.unref();
  function stop(): void {
    stopped = true;
    clearInterval(timer);
  }
  return {
    touch: () => {
      quietSince = Date.now();
    },
    stop,
  };
}
