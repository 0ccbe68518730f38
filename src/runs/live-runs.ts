// The runs this replica streams now, one per thread, and the endings still writing or cancelling (graceful
// shutdown waits for them).
import type { RunSession } from "./run-session.js";

export class LiveRuns {
  private readonly sessions = new Map<string, RunSession>();
  private readonly endings = new Set<Promise<unknown>>();

  get size(): number {
    return this.sessions.size;
  }

  /** A run of this replica streams on the thread. */
  has(threadId: string): boolean {
    return this.sessions.has(threadId);
  }

  /** The run of this replica streaming on the thread. */
  session(threadId: string): RunSession | undefined {
    return this.sessions.get(threadId);
  }

  add(session: RunSession): void {
    this.sessions.set(session.ticket.request.threadId, session);
  }

  /** Only the run that holds the thread removes it. */
  remove(session: RunSession): void {
    const threadId = session.ticket.request.threadId;
    if (this.sessions.get(threadId) === session) this.sessions.delete(threadId);
  }

  /** Keeps `work` in view until it settles. */
  track(work: Promise<unknown>): void {
    const settled: Promise<unknown> = work.then(
      () => this.endings.delete(settled),
      () => this.endings.delete(settled),
    );
    this.endings.add(settled);
  }

  /** Resolves true once no run of this replica streams on the thread, false after `timeoutMs`. */
  async ended(threadId: string, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.sessions.has(threadId) && Date.now() < deadline) await sleep(10);
    return !this.sessions.has(threadId);
  }

  /** Resolves once no run streams and every ending settled, or after `timeoutMs`. */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && (this.sessions.size > 0 || this.endings.size > 0)) {
      if (this.endings.size > 0) await Promise.race([Promise.allSettled([...this.endings]), sleep(50)]);
      else await sleep(10);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
