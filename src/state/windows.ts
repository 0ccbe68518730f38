// Thread state that would otherwise grow with every turn, kept for a bounded window (docs/configuration.md "Limits"): the
// digests of recent run ids (a replay within the window is still refused), the executions that ended (for
// the cancel route's "already_terminal") and the answers applied (for RESUME_ALREADY_APPLIED). Older entries
// are dropped oldest first; each function returns a new list. Id-keyed entries are written as own properties, so "__proto__" is an id like
// any other instead of a prototype assignment that silently records nothing.
import type { AppliedResumeDigest, RunDigest, ThreadRecord } from "./thread-store.js";

export const DEFAULT_RUN_ID_WINDOW = 256;

/** Sets `record[key]` as an own property, whatever the key (plain `obj[key] = v` on "__proto__" sets the prototype). */
export function putOwn<T>(record: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(record, key, { value, writable: true, enumerable: true, configurable: true });
}

/** An empty id-keyed record without a prototype: no inherited key can be mistaken for an id. */
export function idRecord<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/** A copy of an id-keyed record (without a prototype) with `changes` applied: a value sets its key, undefined removes it. */
export function withEntries<T>(entries: Readonly<Record<string, T>>, changes: Iterable<readonly [string, T | undefined]>): Record<string, T> {
  const copy = idRecord<T>();
  for (const key of Object.keys(entries)) putOwn(copy, key, entries[key]!);
  for (const [key, value] of changes) {
    if (value === undefined) delete copy[key];
    else putOwn(copy, key, value);
  }
  return copy;
}

/** The digest of the request that used `runId` on this thread, while it is in the window. */
export function runDigestOf(record: ThreadRecord, runId: string): string | undefined {
  return record.runDigests.find((entry) => entry.runId === runId)?.digest;
}

/** `digests` with `runId`'s digest newest, the oldest beyond `window` dropped. */
export function withRunDigest(digests: readonly RunDigest[], runId: string, digest: string, window: number): RunDigest[] {
  // concat, not push: a list grown by push reserves 17 slots, and every live run holds its record's list.
  const kept = digests.filter((entry) => entry.runId !== runId).concat([{ runId, digest }]);
  return kept.length > window ? kept.slice(kept.length - window) : kept;
}

/** `ids` with `executionId` remembered, the oldest beyond `window` dropped. */
export function withTerminalExecution(ids: readonly string[], executionId: string, window: number): string[] {
  if (ids.includes(executionId)) return [...ids];
  const kept = [...ids, executionId];
  return kept.length > window ? kept.slice(kept.length - window) : kept;
}

/** Answers kept for the current execution: a chain of interrupts longer than this forgets its oldest answers. */
export const CURRENT_EXECUTION_ANSWERS = 1024;

/**
 * `applied` with `entry` replacing the entry of the same execution and interrupt, newest last. Answers of the
 * current execution are kept up to CURRENT_EXECUTION_ANSWERS (a replay of any of them stays RESUME_ALREADY_APPLIED);
 * older executions' fill the rest of the window.
 */
export function withAppliedDigest(applied: readonly AppliedResumeDigest[], entry: AppliedResumeDigest, window: number): AppliedResumeDigest[] {
  const kept = applied.filter((d) => !(d.executionId === entry.executionId && d.interruptId === entry.interruptId));
  kept.push(entry);
  let current = kept.filter((d) => d.executionId === entry.executionId).length - CURRENT_EXECUTION_ANSWERS;
  if (current > 0) {
    for (let i = 0; i < kept.length && current > 0; i++) {
      if (kept[i]!.executionId === entry.executionId) {
        kept.splice(i--, 1);
        current--;
      }
    }
  }
  let excess = kept.length - window;
  return excess <= 0 ? kept : kept.filter((d) => d.executionId === entry.executionId || excess-- <= 0);
}

/** Text-segment digests kept per execution (the resume-text rule); a long chain of resumes drops the oldest. */
export const TEXT_SEGMENT_WINDOW = 1024;

/** `digests` (oldest first) with `digest` added; a rotated execution starts without any. */
export function withTextSegment(digests: readonly string[] | undefined, digest: string): string[] {
  const known = digests ?? [];
  if (known.includes(digest)) return [...known];
  return [...known, digest].slice(-TEXT_SEGMENT_WINDOW);
}
