import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startIdleMonitor } from "../src/ops/idle-monitor.js";

describe("idle monitor (fake clock)", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("fires once after idleMs of idleness, checking every idle/4", () => {
    const onIdle = vi.fn();
    const isIdle = vi.fn(() => true);
    const monitor = startIdleMonitor({ idleMs: 200, isIdle, onIdle });
    vi.advanceTimersByTime(100);
    expect(isIdle).toHaveBeenCalledTimes(1); // checkEvery = max(100, 200/4) = 100
    expect(onIdle).not.toHaveBeenCalled();
    vi.advanceTimersByTime(100);
    expect(onIdle).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(2_000);
    expect(onIdle).toHaveBeenCalledTimes(1);
    monitor.stop();
  });

  it("waits while a run is active or an interrupt is pending, then a full idle period more", () => {
    const onIdle = vi.fn();
    let busy = true;
    startIdleMonitor({ idleMs: 200, isIdle: () => !busy, onIdle, checkEveryMs: 50 });
    vi.advanceTimersByTime(1_000);
    expect(onIdle).not.toHaveBeenCalled();
    busy = false;
    vi.advanceTimersByTime(150);
    expect(onIdle).not.toHaveBeenCalled();
    vi.advanceTimersByTime(100);
    expect(onIdle).toHaveBeenCalledTimes(1);
  });

  it("restarts the idle period on touch()", () => {
    const onIdle = vi.fn();
    const monitor = startIdleMonitor({ idleMs: 200, isIdle: () => true, onIdle, checkEveryMs: 50 });
    for (let i = 0; i < 10; i++) {
      vi.advanceTimersByTime(150);
      monitor.touch();
    }
    expect(onIdle).not.toHaveBeenCalled();
    vi.advanceTimersByTime(250);
    expect(onIdle).toHaveBeenCalledTimes(1);
  });

  it("never fires after stop()", () => {
    const onIdle = vi.fn();
    const monitor = startIdleMonitor({ idleMs: 200, isIdle: () => true, onIdle });
    monitor.stop();
    vi.advanceTimersByTime(5_000);
    expect(onIdle).not.toHaveBeenCalled();
  });

  it("caps the check interval at 5 s for long idle periods", () => {
    const isIdle = vi.fn(() => false);
    const monitor = startIdleMonitor({ idleMs: 600_000, isIdle, onIdle: () => undefined });
    vi.advanceTimersByTime(20_000);
    expect(isIdle).toHaveBeenCalledTimes(4);
    monitor.stop();
  });
});

describe("idle monitor (real timers)", () => {
  it("fires with real, unref'd timers", async () => {
    const started = Date.now();
    const fired = await new Promise<number>((resolve, reject) => {
      const guard = setTimeout(() => reject(new Error("onIdle was not called within 2 s")), 2_000);
      startIdleMonitor({
        idleMs: 200,
        isIdle: () => true,
        onIdle: () => {
          clearTimeout(guard);
          resolve(Date.now());
        },
      });
    });
    expect(fired - started).toBeGreaterThanOrEqual(195);
    expect(fired - started).toBeLessThan(1_000);
  });
});
