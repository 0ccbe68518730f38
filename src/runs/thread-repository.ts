// The one place that reads and writes thread records: the per-thread lock, the cache of loaded threads
// (a live run or pending interrupts keep a thread loaded; others are read lazily) and the store behind it,
// with one queue of writes per thread.
import type { Logger } from "pino";
import { StateUnavailableError, type ThreadRecord, type ThreadStore } from "../state/thread-store.js";
import { timeResult, type GatewayMetrics } from "../ops/metrics.js";
import { admission } from "./errors.js";
import { KeyedLock } from "./keyed-lock.js";

export interface ThreadRepositoryOptions {
  store: ThreadStore;
  logger: Logger;
  metrics?: GatewayMetrics;
}

export class ThreadRepository {
  private readonly lock = new KeyedLock();
  private readonly loaded = new Map<string, ThreadRecord>();
  private readonly saves = new Map<string, Promise<void>>();

  constructor(private readonly options: ThreadRepositoryOptions) {}

  /** Runs `task` alone among the tasks of this thread. */
  locked<T>(threadId: string, task: () => Promise<T>): Promise<T> {
    return this.lock.run(threadId, task);
  }

  isLoaded(threadId: string): boolean {
    return this.loaded.has(threadId);
  }

  /** Keeps `record` loaded (a live run, pending interrupts). */
  keep(record: ThreadRecord): void {
    this.loaded.set(record.threadId, record);
  }

  forget(threadId: string): void {
    this.loaded.delete(threadId);
  }

  loadedRecords(): IterableIterator<ThreadRecord> {
    return this.loaded.values();
  }

  /**
   * The loaded record, else the stored one. `recover` (only under the thread's lock, where a recovery write
   * cannot race a run) is applied to a record read from the store.
   */
  async load(threadId: string, recover?: (record: ThreadRecord) => Promise<unknown>): Promise<ThreadRecord | undefined> {
    const cached = this.loaded.get(threadId);
    if (cached) return cached;
    try {
      const record = await this.options.store.load(threadId);
      if (record && recover) {
        await recover(record).catch((error: unknown) =>
          this.options.logger.warn({ err: error, threadId }, "recovery of an abandoned run could not be written"),
        );
      }
      return record;
    } catch (error) {
      if (error instanceof StateUnavailableError) {
        this.options.logger.warn({ err: error, threadId }, "thread state unavailable");
        throw admission.stateUnavailable();
      }
      throw error;
    }
  }

  /** The stored record, bypassing the cache (start-up recovery). */
  loadStored(threadId: string): Promise<ThreadRecord | undefined> {
    return this.options.store.load(threadId);
  }

  /** Every stored thread id, when the store can list them. */
  storedThreadIds(): Promise<string[]> | undefined {
    const list = this.options.store.threadIds;
    return list ? list.call(this.options.store) : undefined;
  }

  /** Writes of one thread are queued, each serializing the record as it is when its turn comes. */
  persist(record: ThreadRecord): Promise<void> {
    const previous = this.saves.get(record.threadId) ?? Promise.resolve();
    const metrics = this.options.metrics;
    const save = () => this.options.store.save(record);
    const next = previous.catch(() => undefined).then(() => (metrics ? timeResult(metrics.stateWriteLatency, save) : save()));
    this.saves.set(record.threadId, next);
    void next.catch(() => undefined).then(() => {
      if (this.saves.get(record.threadId) === next) this.saves.delete(record.threadId);
    });
    return next;
  }

  /**
   * Undoes a refused admission: `before` (or no record) is loaded and stored again. The write may have
   * landed before it failed (a directory fsync error), so the disk is put back too.
   */
  async restore(threadId: string, before: ThreadRecord | undefined): Promise<void> {
    if (before) this.loaded.set(threadId, before);
    else this.loaded.delete(threadId);
    await (before ? this.options.store.save(before) : this.options.store.remove?.(threadId))?.catch(() => undefined);
  }
}
