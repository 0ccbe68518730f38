// The one place that reads and writes thread records: the per-thread lock, the cache of loaded threads
// (a live run or pending interrupts keep a thread loaded; others are read lazily) and the store behind it,
// with one queue of writes per thread. With a store shared by several replicas it also holds this
// replica's claims (leases) on threads: a claimed thread is ours to run and write, every write is a
// compare-and-set on the version we read and is fenced by the claim, and only a claimed thread is cached.
import type { Logger } from "pino";
import { StateUnavailableError, isSharedThreadStore, type SharedThreadStore, type ThreadRecord, type ThreadStore } from "../state/thread-store.js";
import { timeResult, type GatewayMetrics } from "../ops/metrics.js";
import { admission } from "./errors.js";
import { KeyedLock } from "./keyed-lock.js";

export interface ThreadRepositoryOptions {
  store: ThreadStore;
  logger: Logger;
  metrics?: GatewayMetrics;
  /** This replica's id in a shared store's leases. */
  replicaId?: string;
  /** How long a claim outlives its replica; renewed every third of it. Default 30 s. */
  leaseTtlMs?: number;
}

/** This replica's lease on a thread of a shared store. */
interface Claim {
  token: string;
  renewedAt: number;
  timer: NodeJS.Timeout;
  /** Set once the lease could not be renewed within its TTL: another replica may own the thread now. */
  lost: boolean;
  /** Resolves when `lost` is set. */
  lapsed: Promise<void>;
  markLapsed: () => void;
}

export type ClaimResult = { claimed: true } | { claimed: false; heldBy: string };

export class ThreadRepository {
  private readonly lock = new KeyedLock();
  private readonly loaded = new Map<string, ThreadRecord>();
  private readonly saves = new Map<string, Promise<void>>();
  /** The shared store, when there is one. */
  readonly shared: SharedThreadStore | undefined;
  readonly replicaId: string;
  private readonly leaseTtlMs: number;
  private readonly claims = new Map<string, Claim>();
  /** The stored version each record object was read or last written at (compare-and-set). */
  private readonly versions = new WeakMap<ThreadRecord, number>();

  constructor(private readonly options: ThreadRepositoryOptions) {
    this.shared = isSharedThreadStore(options.store) ? options.store : undefined;
    this.replicaId = options.replicaId ?? "local";
    this.leaseTtlMs = options.leaseTtlMs ?? 30_000;
  }

  /** Runs `task` alone among the tasks of this thread in this process. */
  locked<T>(threadId: string, task: () => Promise<T>): Promise<T> {
    return this.lock.run(threadId, task);
  }

  /**
   * Takes the thread for this replica until `unclaim`: always granted with a store of our own; with a shared
   * store, granted unless a lease is held (by another replica, or by a run of ours). Throws STATE_UNAVAILABLE.
   */
  async claim(threadId: string): Promise<ClaimResult> {
    const shared = this.shared;
    if (!shared) return { claimed: true };
    let result = await this.acquire(shared, threadId);
    if ("heldBy" in result && result.heldBy === this.replicaId && !this.claims.has(threadId)) {
      // Ours, but no claim of ours: an acquire whose reply was lost (Redis stalled past the call's timeout) and
      // that Redis carried out later. Nobody runs the thread under it: give it back and ask again.
      const lease = await shared.readLease(threadId).catch(() => undefined);
      if (lease?.ownerId === this.replicaId) await shared.breakLease(threadId, lease.token).catch(() => undefined);
      result = await this.acquire(shared, threadId);
    }
    return "token" in result ? this.hold(threadId, result.token) : { claimed: false, heldBy: result.heldBy };
  }

  /**
   * With a shared store, waits up to `waitMs` while another replica holds the thread: its run may have sent its
   * last event and be about to give the thread back. Read-only, outside the thread's lock; errors are left to claim.
   */
  async awaitOthersRelease(threadId: string, waitMs: number): Promise<void> {
    const shared = this.shared;
    if (!shared) return;
    const deadline = Date.now() + waitMs;
    for (let pause = 10; ; pause = Math.min(pause * 2, 80)) {
      const holder = await shared.leaseHolder(threadId).catch(() => undefined);
      if (holder === undefined || holder === this.replicaId || Date.now() + pause > deadline) return;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  private async acquire(shared: SharedThreadStore, threadId: string): Promise<{ token: string } | { heldBy: string }> {
    try {
      return await shared.acquireLease(threadId, this.replicaId, this.leaseTtlMs);
    } catch (error) {
      this.options.logger.warn({ err: error, threadId }, "thread lease unavailable");
      throw admission.stateUnavailable();
    }
  }

  private hold(threadId: string, token: string): ClaimResult {
    let markLapsed!: () => void;
    const lapsed = new Promise<void>((resolve) => (markLapsed = resolve));
    const claim: Claim = { token, renewedAt: Date.now(), lost: false, lapsed, markLapsed, timer: undefined as unknown as NodeJS.Timeout };
    claim.timer = setInterval(() => void this.renew(threadId, claim), Math.max(50, Math.floor(this.leaseTtlMs / 3)));
    claim.timer.unref();
    this.claims.set(threadId, claim);
    return { claimed: true };
  }

  /** Resolves if this replica's claim on the thread lapses; undefined without a claim (or a shared store). */
  claimLapsed(threadId: string): Promise<void> | undefined {
    return this.claims.get(threadId)?.lapsed;
  }

  /** Gives the thread back (a shared store only; the lease goes, the cached record with it). */
  async unclaim(threadId: string): Promise<void> {
    const claim = this.claims.get(threadId);
    if (!claim || !this.shared) return;
    this.claims.delete(threadId);
    clearInterval(claim.timer);
    this.loaded.delete(threadId);
    await this.shared.releaseLease(threadId, claim.token).catch((error: unknown) =>
      this.options.logger.warn({ err: error, threadId }, "thread lease could not be released; it lapses after its TTL"),
    );
  }

  /** Takes over the lease of a replica known to be gone (if it still holds the thread), then claims the thread. */
  async claimFrom(threadId: string, goneOwner: string): Promise<ClaimResult> {
    const shared = this.shared;
    if (!shared) return { claimed: true };
    try {
      const lease = await shared.readLease(threadId);
      if (lease?.ownerId === goneOwner) await shared.breakLease(threadId, lease.token);
    } catch (error) {
      this.options.logger.warn({ err: error, threadId }, "thread lease unavailable");
      throw admission.stateUnavailable();
    }
    return this.claim(threadId);
  }

  private async renew(threadId: string, claim: Claim): Promise<void> {
    if (claim.lost || this.claims.get(threadId) !== claim) return;
    const renewed = await this.shared!.renewLease(threadId, claim.token, this.leaseTtlMs).catch(() => undefined);
    if (renewed === true) {
      claim.renewedAt = Date.now();
      return;
    }
    // Refused: someone else holds it. Unanswered: it lapses once its TTL has passed since the last renewal.
    if (renewed === false || Date.now() - claim.renewedAt >= this.leaseTtlMs) {
      claim.lost = true;
      clearInterval(claim.timer);
      claim.markLapsed();
      this.options.logger.error({ threadId }, "this replica lost its lease on the thread; its writes are refused from now on");
    }
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
      const record = await this.loadStored(threadId);
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
  async loadStored(threadId: string): Promise<ThreadRecord | undefined> {
    if (!this.shared) return this.options.store.load(threadId);
    const stored = await this.shared.loadVersioned(threadId);
    if (!stored) return undefined;
    this.versions.set(stored.record, stored.version);
    return stored.record;
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
    const save = () => this.save(record);
    const next = previous.catch(() => undefined).then(() => (metrics ? timeResult(metrics.stateWriteLatency, save) : save()));
    this.saves.set(record.threadId, next);
    void next.catch(() => undefined).then(() => {
      if (this.saves.get(record.threadId) === next) this.saves.delete(record.threadId);
    });
    return next;
  }

  private async save(record: ThreadRecord): Promise<void> {
    if (!this.shared) return this.options.store.save(record);
    // Fenced: a replica whose claim lapsed (or that never claimed the thread) cannot overwrite a newer record.
    const claim = this.claims.get(record.threadId);
    if (!claim || claim.lost) throw new StateUnavailableError("this replica does not hold the thread's lease");
    const version = await this.shared.saveVersioned(record, this.versions.get(record) ?? 0, claim.token);
    this.versions.set(record, version);
  }

  /**
   * Undoes a refused admission: `before` (or no record) is loaded and stored again. The write may have
   * landed before it failed (a directory fsync error), so the disk is put back too. A shared store's
   * compare-and-set write either landed whole or not at all, so there only the cache is put back.
   */
  async restore(threadId: string, before: ThreadRecord | undefined): Promise<void> {
    if (this.shared) {
      this.loaded.delete(threadId);
      return;
    }
    if (before) this.loaded.set(threadId, before);
    else this.loaded.delete(threadId);
    await (before ? this.options.store.save(before) : this.options.store.remove?.(threadId))?.catch(() => undefined);
  }
}
