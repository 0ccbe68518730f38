// The order of an owner's thread list, shared by every store: most recently active first, ties by thread id
// (descending, as Redis's ZREVRANGEBYSCORE gives them), and the opaque cursor that says where a page starts.
import type { ActivityCursor, ThreadRecord } from "./thread-store.js";

export function activityOf(record: ThreadRecord): ActivityCursor {
  const at = record.lastActiveAt === undefined ? 0 : Date.parse(record.lastActiveAt);
  return { at: Number.isFinite(at) ? at : 0, threadId: record.threadId };
}

/** Negative when `a` comes first in the list. */
export function compareActivity(a: ActivityCursor, b: ActivityCursor): number {
  if (a.at !== b.at) return b.at - a.at;
  return a.threadId < b.threadId ? 1 : a.threadId > b.threadId ? -1 : 0;
}

export function isAfter(position: ActivityCursor, cursor: ActivityCursor | undefined): boolean {
  return cursor === undefined || compareActivity(position, cursor) > 0;
}

export function encodeCursor(cursor: ActivityCursor): string {
  return Buffer.from(JSON.stringify([cursor.at, cursor.threadId]), "utf8").toString("base64url");
}

/** undefined for anything that is not a cursor this gateway made. */
export function decodeCursor(text: string): ActivityCursor | undefined {
  if (text.length > 2048 || !/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
    if (!Array.isArray(value) || value.length !== 2) return undefined;
    const [at, threadId] = value as unknown[];
    if (!Number.isSafeInteger(at) || (at as number) < 0 || typeof threadId !== "string" || threadId === "") return undefined;
    return { at: at as number, threadId };
  } catch {
    return undefined;
  }
}

/** A page out of records already in hand (the stores without an index). */
export function pageOfRecords(records: readonly ThreadRecord[], owner: string, after: ActivityCursor | undefined, limit: number): ThreadRecord[] {
  return records
    .filter((r) => r.owner === owner && isAfter(activityOf(r), after))
    .sort((a, b) => compareActivity(activityOf(a), activityOf(b)))
    .slice(0, limit);
}
