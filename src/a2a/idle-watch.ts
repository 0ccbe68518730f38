/** Stream silence timer. Paused while we wait on the consumer: that silence is ours, not the kernel's. */
export class IdleWatch {
  fired = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly timeoutMs: number,
    private readonly onIdle: () => void,
  ) {}

  start(): void {
    if (this.timeoutMs <= 0) return;
    this.timer = setTimeout(() => {
      this.fired = true;
      this.onIdle();
    }, this.timeoutMs);
  }

  touch(): void {
    this.timer?.refresh();
  }

  // A cleared Node timer cannot be re-armed with refresh(), hence stop + start.
  pause(): void {
    this.stop();
  }

  resume(): void {
    this.start();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
