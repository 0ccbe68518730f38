// Strict shape of a stored thread document (reference-adapter §7.2–7.4). Reading fails closed: anything unexpected
// makes that one thread unavailable rather than being guessed at. Writing refuses anything that is not plain protocol
// state, so secrets or text that slipped into a record never reach the disk.
import { z } from "zod";
import { PERSISTED_INPUT_KEYS } from "../../operators/index.js";
import { StateUnavailableError, type RunDigest, type ThreadRecord } from "./thread-store.js";
import { TEXT_SEGMENT_WINDOW, idRecord, putOwn } from "./windows.js";

const DIGEST = /^[0-9a-f]{64}$/;

const nonEmptyString = z.string().min(1);
const digest = z.string().regex(DIGEST, "not a 64-character lowercase hex digest");

const inputValue = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const extra = disallowedInputKeys(value);
  if (extra.length > 0) ctx.addIssue({ code: "custom", message: `fields outside the input allowlist: ${extra.join(", ")}` });
  if (typeof value.inputId !== "string" || value.inputId === "") {
    ctx.addIssue({ code: "custom", path: ["inputId"], message: "must be a non-empty string" });
  }
});

const pendingEntry = z.strictObject({
  value: inputValue,
  sideband: z.boolean(),
  expiresAt: z.iso.datetime({ offset: true }).optional(),
});

const pending = z.record(z.string(), pendingEntry).superRefine((entries, ctx) => {
  for (const [key, entry] of Object.entries(entries)) {
    if (entry.value.inputId !== key) ctx.addIssue({ code: "custom", path: [key, "value", "inputId"], message: "does not match its key" });
  }
});

const appliedResumeDigest = z.strictObject({
  executionId: z.string(),
  interruptId: z.string(),
  digest,
});

/** Reading tolerates what the reference tolerates (absent text digests or lastTaskId, bad run-digest entries). */
const storedExecution = z.strictObject({
  executionId: nonEmptyString,
  rosInvocationId: nonEmptyString,
  taskId: z.string().nullable(),
  lastTaskId: z.string().nullable().optional(),
  pipelineSequence: z.int().nonnegative(),
  pipelineOpenSteps: z.array(nonEmptyString),
  pending,
  interruptedRunId: nonEmptyString.optional(),
  parkedBy: nonEmptyString.max(256).optional(),
  parkedSpan: z
    .strictObject({
      traceId: z.string().regex(/^[0-9a-f]{32}$/, "not a 32-digit lowercase hex trace id"),
      spanId: z.string().regex(/^[0-9a-f]{16}$/, "not a 16-digit lowercase hex span id"),
      parkedAt: z.iso.datetime({ offset: true }),
    })
    .optional(),
  textSnapshotDigests: z.array(digest).optional(),
});

const storedRecord = z.strictObject({
  schemaVersion: z.literal(1),
  threadId: nonEmptyString,
  contextId: nonEmptyString,
  cwd: nonEmptyString,
  userId: z.string().nullable(),
  owner: nonEmptyString.max(1024).optional(),
  createdAt: z.iso.datetime({ offset: true }).optional(),
  lastActiveAt: z.iso.datetime({ offset: true }).optional(),
  iacCodeSessionId: z.string().nullable(),
  execution: storedExecution,
  // A list of {runId, digest}, oldest first; files written before it was a list hold a runId → digest object.
  runDigests: z.union([z.array(z.unknown()), z.record(z.string(), z.unknown())]),
  appliedResumeDigests: z.array(appliedResumeDigest),
  terminalExecutionIds: z.array(z.string()),
});

/** Writing is exact: only the current schema, nothing the reader would have to drop or default. */
const writableRecord = storedRecord.extend({
  execution: storedExecution.extend({ lastTaskId: z.string().nullable() }),
  runDigests: z.array(z.strictObject({ runId: nonEmptyString, digest })),
});

/** Restores a parsed thread document or throws StateUnavailableError with a short reason. */
export function parseThreadRecord(json: unknown, threadId: string): ThreadRecord {
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw invalid("not a JSON object");
  const document = json as Record<string, unknown>;
  if (document.schemaVersion !== 1) throw invalid("unsupported schemaVersion");
  if (document.threadId !== threadId) throw invalid("threadId does not match the file");
  // A "__proto__" key would be silently lost by plain-object copies, so it cannot be restored faithfully —
  // except as an id (a run id, an interrupt id), which the id-keyed records below keep as own keys.
  if (hasProtoKey(json)) throw invalid("forbidden key __proto__");
  const parsed = storedRecord.safeParse(json);
  if (!parsed.success) throw invalid(describe(parsed.error));
  const stored = parsed.data;
  const rawExecution = (document.execution ?? {}) as Record<string, unknown>;
  const rawPending = rawExecution.pending as Record<string, unknown>;
  const rawDigests = document.runDigests as unknown[] | Record<string, unknown>;
  // zod's records skip a "__proto__" key: check that entry on its own, then rebuild both records from the document.
  if (Object.hasOwn(rawPending, "__proto__")) {
    const entry = pendingEntry.safeParse(rawPending["__proto__"]);
    if (!entry.success) throw invalid(`execution.pending.__proto__: ${describe(entry.error)}`);
    if (entry.data.value.inputId !== "__proto__") throw invalid("execution.pending.__proto__.value.inputId: does not match its key");
    putOwn(stored.execution.pending, "__proto__", entry.data);
  }
  const { textSnapshotDigests, lastTaskId, ...execution } = stored.execution;
  return {
    schemaVersion: 1,
    threadId: stored.threadId,
    contextId: stored.contextId,
    cwd: stored.cwd,
    userId: stored.userId,
    ...(stored.owner !== undefined && { owner: stored.owner }),
    ...(stored.createdAt !== undefined && { createdAt: stored.createdAt }),
    ...(stored.lastActiveAt !== undefined && { lastActiveAt: stored.lastActiveAt }),
    iacCodeSessionId: stored.iacCodeSessionId,
    execution: {
      ...execution,
      lastTaskId: lastTaskId ?? null,
      pending: idRecordOf(
        Object.keys(rawPending).map((key) => {
          const entry = stored.execution.pending[key]!;
          return [
            key,
            {
              value: entry.value as ThreadRecord["execution"]["pending"][string]["value"],
              sideband: entry.sideband,
              ...(entry.expiresAt === undefined ? {} : { expiresAt: entry.expiresAt }),
            },
          ];
        }),
      ),
      ...(textSnapshotDigests !== undefined && textSnapshotDigests.length > 0 && { textSnapshotDigests: [...new Set(textSnapshotDigests)].slice(-TEXT_SEGMENT_WINDOW) }),
    },
    runDigests: wellFormedRunDigests(rawDigests),
    appliedResumeDigests: stored.appliedResumeDigests,
    terminalExecutionIds: stored.terminalExecutionIds,
  };
}

/** Throws unless the record is exactly the schema, with pending inputs limited to the persisted allowlist. */
export function assertStorable(record: ThreadRecord): void {
  const pendingEntries = record.execution?.pending;
  if (typeof pendingEntries === "object" && pendingEntries !== null) {
    for (const [key, entry] of Object.entries(pendingEntries)) {
      const value: unknown = entry?.value;
      if (typeof value !== "object" || value === null) continue;
      const extra = disallowedInputKeys(value as Record<string, unknown>);
      if (extra.length > 0) throw new Error(`refusing to store pending input ${key}: fields outside the allowlist: ${extra.join(", ")}`);
    }
  }
  if (hasProtoKey(record)) throw new Error("refusing to store thread state: forbidden key __proto__");
  const parsed = writableRecord.safeParse(record);
  if (!parsed.success) throw new Error(`refusing to store thread state: ${describe(parsed.error)}`);
  // The "__proto__" entries zod's records skip.
  const protoPending = Object.hasOwn(record.execution.pending, "__proto__") ? record.execution.pending["__proto__"] : undefined;
  if (protoPending !== undefined && (!pendingEntry.safeParse(protoPending).success || protoPending.value.inputId !== "__proto__")) {
    throw new Error("refusing to store thread state: execution.pending.__proto__ is invalid");
  }
}

function disallowedInputKeys(value: Record<string, unknown>): string[] {
  return Object.keys(value).filter((key) => !PERSISTED_INPUT_KEYS.has(key));
}

/** Malformed entries are dropped (a lost digest only frees that run id); a repeated run id keeps its newest place. */
function wellFormedRunDigests(raw: unknown[] | Record<string, unknown>): RunDigest[] {
  const entries = Array.isArray(raw)
    ? raw.map((item) => (typeof item === "object" && item !== null ? [(item as RunDigest).runId, (item as RunDigest).digest] : [undefined, undefined]))
    : Object.entries(raw);
  const kept = new Map<string, string>();
  for (const [runId, digest] of entries) {
    if (typeof runId !== "string" || runId === "" || typeof digest !== "string" || !DIGEST.test(digest)) continue;
    kept.delete(runId);
    kept.set(runId, digest);
  }
  return [...kept].map(([runId, digest]) => ({ runId, digest }));
}

function idRecordOf<T>(entries: [string, T][]): Record<string, T> {
  const record = idRecord<T>();
  for (const [key, value] of entries) putOwn(record, key, value);
  return record;
}

/** A "__proto__" key anywhere, except as a key of the id-keyed records (run digests, pending interrupts). */
function hasProtoKey(root: unknown): boolean {
  const idKeyed = new Set<unknown>();
  if (typeof root === "object" && root !== null) {
    const document = root as { runDigests?: unknown; execution?: { pending?: unknown } };
    // Legacy files keep run digests as an object keyed by run id.
    if (!Array.isArray(document.runDigests)) idKeyed.add(document.runDigests);
    if (typeof document.execution === "object" && document.execution !== null) idKeyed.add(document.execution.pending);
  }
  const stack: unknown[] = [root];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item !== "object" || item === null || seen.has(item)) continue;
    seen.add(item);
    if (!Array.isArray(item) && !idKeyed.has(item) && Object.hasOwn(item, "__proto__")) return true;
    for (const child of Object.values(item)) stack.push(child);
  }
  return false;
}

function describe(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid";
  const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "document";
  return `${where}: ${issue.message}`;
}

function invalid(reason: string): StateUnavailableError {
  return new StateUnavailableError(`thread state is invalid: ${reason}`);
}
