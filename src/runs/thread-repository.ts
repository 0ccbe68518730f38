// The one place that reads and writes thread records: the per-thread lock, the cache of loaded threads
// (a live run or pending interrupts keep a thread loaded; others are read lazily) and the store behind it.
// A record changes only by a named transition (transitions.ts) applied under the thread's lock, then one
// durable write; records are never edited in place. With a store shared by several replicas it also holds this
// replica's claims (leases) on threads: a claimed thread is ours to run and write, every write is a
// compare-and-set on the version we read and is fenced by the claim, and only a claimed thread is cached.
import type { Logger } from "pino";
import { StateUnavailableError, isSharedThreadStore, type OwnedPage, type SharedThreadStore, type ThreadRecord, type ThreadStore } from "../state/thread-store.js";
import { pageOfRecords } from "../state/owned-threads.js";
import { timeResult, type GatewayMetrics } from "../ops/metrics.js";
import { ATTR, NO_SPAN, inSpan, type TraceSpan } from "../ops/trace.js";
import { admission } from "./errors.js";
import { KeyedLock } from "./keyed-lock.js";
import { hasPending, isRefusal, type Transition } from "./transitions.js";

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
  /** Threads a run of this replica holds (kept loaded). */
  private readonly held = new Set<string>();
  /** The shared store, when there is one. */
  readonly shared: SharedThreadStore | undefined;
  readonly replicaId: string;
  private readonly leaseTtlMs: number;
  private readonly claims = new Map<string, Claim>();
  /** The stored version of each claimed thread as last read or written (compare-and-set). */
  private readonly versions = new Map<string, number>();

  constructor(private readonly options: ThreadRepositoryOptions) {
    this.shared = isSharedThreadStore(options.store) ? options.store : undefined;
    this.replicaId = options.replicaId ?? "local";
    this.leaseTtlMs = options.leaseTtlMs ?? 30_000;
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
    return "token" in result ? this.holdClaim(threadId, result.token) : { claimed: false, heldBy: result.heldBy };
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

  private holdClaim(threadId: string, token: string): ClaimResult {
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

  /**
   * Gives the thread back (a shared store only; the lease goes, the cached record with it). Resolves false when
   * Redis did not take the release (logged): the lease then lapses after its TTL.
   */
  async unclaim(threadId: string): Promise<boolean> {
    const claim = this.claims.get(threadId);
    if (!claim || !this.shared) return true;
    this.claims.delete(threadId);
    clearInterval(claim.timer);
    this.loaded.delete(threadId);
    this.versions.delete(threadId);
    try {
      await this.shared.releaseLease(threadId, claim.token);
      return true;
    } catch (error) {
      this.options.logger.warn({ err: error, threadId }, "thread lease could not be released; it lapses after its TTL");
      return false;
    }
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

  loadedRecords(): IterableIterator<ThreadRecord> {
    return this.loaded.values();
  }

  /** Keeps the thread loaded while a run of this replica holds it (and after, while interrupts are pending). */
  hold(threadId: string): void {
    this.held.add(threadId);
  }

  /** The run that held the thread has ended: it stays loaded only while interrupts are pending. */
  letGo(threadId: string): void {
    this.held.delete(threadId);
    const record = this.loaded.get(threadId);
    if (record && !hasPending(record)) this.loaded.delete(threadId);
  }

  /**
   * Runs `task` alone among the tasks of this thread in this process, with the thread's record at hand. Its durable
   * writes are child spans of `span`.
   */
  locked<T>(threadId: string, task: (thread: LockedThread) => Promise<T>, span: TraceSpan = NO_SPAN): Promise<T> {
    return this.lock.run(threadId, () => task(this.handle(threadId, span)));
  }

  /** Applies `transition` to the thread's current record under its lock, writes the result and resolves with it. */
  update(threadId: string, transition: Transition, span: TraceSpan = NO_SPAN): Promise<ThreadRecord> {
    return this.locked(threadId, (thread) => thread.update(transition), span);
  }

  /** The loaded record, else the stored one; outside the lock (a read-only look, e.g. the observer route). */
  read(threadId: string): Promise<ThreadRecord | undefined> {
    return this.load(threadId);
  }

  private handle(threadId: string, span: TraceSpan): LockedThread {
    const write = (record: ThreadRecord) =>
      span === NO_SPAN ? this.write(record) : inSpan(span, "agui.state.write", { attributes: { [ATTR.threadId]: threadId } }, () => this.write(record));
    return {
      read: (recover) => this.load(threadId, recover),
      update: async (transition) => {
        const current = await this.load(threadId);
        if (!current) throw new StateUnavailableError("the thread has no record to change");
        const next = transition(current);
        if (isRefusal(next)) throw next.refused;
        await write(next);
        return next;
      },
      write,
      restore: (before) => this.restore(threadId, before),
    };
  }

  private async load(threadId: string, recover?: (record: ThreadRecord) => Promise<unknown>): Promise<ThreadRecord | undefined> {
    const cached = this.loaded.get(threadId);
    if (cached) return cached;
    try {
      const record = await this.loadStored(threadId);
      if (record && recover) {
        await recover(record).catch((error: unknown) =>
          this.options.logger.warn({ err: error, threadId }, "recovery of an abandoned run could not be written"),
        );
        return this.loaded.get(threadId) ?? (await this.loadStored(threadId));
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

  /** The stored record, bypassing the cache and taking nothing (no version kept): a look before claiming. */
  peekStored(threadId: string): Promise<ThreadRecord | undefined> {
    return this.options.store.load(threadId);
  }

  /** The stored record, bypassing the cache (start-up recovery). */
  async loadStored(threadId: string): Promise<ThreadRecord | undefined> {
    if (!this.shared) return this.options.store.load(threadId);
    const stored = await this.shared.loadVersioned(threadId);
    if (!stored) return undefined;
    this.versions.set(threadId, stored.version);
    return stored.record;
  }

  /** A page of an owner's threads, most recently active first: the store's index, else a scan of its threads. */
  async ownedThreads(owner: string, page: OwnedPage): Promise<ThreadRecord[]> {
    const store = this.options.store;
    try {
      if (store.ownedThreads) return await store.ownedThreads(owner, page);
      const ids = (await store.threadIds?.()) ?? [];
      const records = await Promise.all(ids.map((id) => store.load(id).catch(() => undefined)));
      return pageOfRecords(records.filter((r) => r !== undefined), owner, page.after, page.limit);
    } catch (error) {
      if (error instanceof StateUnavailableError) throw admission.stateUnavailable();
      throw error;
    }
  }

  /**
   * Forgets the thread: its record, and with it its run ids, leaves the store. Under the thread's lock, with the
   * thread claimed (a shared store's removal is fenced by that claim).
   */
  async forget(threadId: string): Promise<void> {
    this.loaded.delete(threadId);
    this.versions.delete(threadId);
    try {
      if (this.shared) await this.shared.remove(threadId, this.claims.get(threadId)?.token);
      else await this.options.store.remove?.(threadId);
    } catch (error) {
      this.options.logger.warn({ err: error, threadId }, "a thread could not be forgotten");
      throw admission.stateUnavailable();
    }
  }

  /** Every stored thread id, when the store can list them. */
  storedThreadIds(): Promise<string[]> | undefined {
    const list = this.options.store.threadIds;
    return list ? list.call(this.options.store) : undefined;
  }

  /** One durable write; then the record is what this replica sees of the thread (while it keeps it loaded). */
  private async write(record: ThreadRecord): Promise<void> {
    const metrics = this.options.metrics;
    const save = () => this.save(record);
    await (metrics ? timeResult(metrics.stateWriteLatency, save) : save());
    const threadId = record.threadId;
    if ((this.held.has(threadId) || hasPending(record)) && (!this.shared || this.claims.has(threadId))) this.loaded.set(threadId, record);
    else this.loaded.delete(threadId);
  }

  private async save(record: ThreadRecord): Promise<void> {
    if (!this.shared) return this.options.store.save(record);
    // Fenced: a replica whose claim lapsed (or that never claimed the thread) cannot overwrite a newer record.
    const claim = this.claims.get(record.threadId);
    if (!claim || claim.lost) throw new StateUnavailableError("this replica does not hold the thread's lease");
    const version = await this.shared.saveVersioned(record, this.versions.get(record.threadId) ?? 0, claim.token);
    this.versions.set(record.threadId, version);
  }

  /**
   * Undoes a refused admission: `before` (or no record) is what the thread holds again. The cache never took the
   * failed write, but the write may have landed before it failed (a directory fsync error), so the disk is put
   * back. A shared store's compare-and-set write either landed whole or not at all (its version is read again).
   */
  private async restore(threadId: string, before: ThreadRecord | undefined): Promise<void> {
    if (this.shared) {
      this.loaded.delete(threadId);
      this.versions.delete(threadId);
      return;
    }
    await (before ? this.options.store.save(before) : this.options.store.remove?.(threadId))?.catch(() => undefined);
  }
}

/** A thread under its lock: what a job may do with its record. */
export interface LockedThread {
  /** The loaded record, else the stored one; `recover` is applied to a record read from the store. */
  read(recover?: (record: ThreadRecord) => Promise<unknown>): Promise<ThreadRecord | undefined>;
  /** Applies `transition` to the current record and writes the result; a refusal is thrown, nothing written. */
  update(transition: Transition): Promise<ThreadRecord>;
  /** Writes `record` as the thread's: only admission, whose `admit` transition made it from what `read` gave. */
  write(record: ThreadRecord): Promise<void>;
  /** Puts back what the thread held before a refused admission. */
  restore(before: ThreadRecord | undefined): Promise<void>;
}
