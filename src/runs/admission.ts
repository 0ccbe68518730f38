// Admission (reference-adapter §8.1), under the thread's lock: replays and conflicts are refused, a turn
// rotates the execution, and the run id is written before the run may start.
import { createHash, randomUUID } from "node:crypto";
import { canonicalJson, type A2APart } from "../../operators/index.js";
import { type Language, localize, normalizeLanguage } from "../i18n/index.js";
import { rememberRunDigest, runDigestOf } from "../state/windows.js";
import { admission } from "./errors.js";
import type { RunRequest } from "./input.js";
import { declaresAgui1 } from "./protocol.js";
import { loadRecovered } from "./recovery.js";
import { interruptsOf } from "./resume.js";
import { cancelUpstream, type RunContext, type RunTicket } from "./run-context.js";
import { allExpired, hasPending, newThreadRecord, resumesUnderInterruptedRun, rotateExecution } from "./thread-record.js";

export function runDigest(body: unknown): string {
  return createHash("sha256").update(canonicalJson(body), "utf8").digest("hex");
}

/**
 * A follow-up turn can reach another replica before the run before it has given the thread back (its last
 * write and the lease release come right after its terminal event): admission waits this long for it.
 */
const ADMISSION_CLAIM_WAIT_MS = 250;

/** What a request brings to admission, checked and built before it (nothing invalid ever takes a run id). */
interface Candidate {
  request: RunRequest;
  /** sha256 of the raw request body. */
  digest: string;
  cwd: string;
  parts: A2APart[];
  messageId: string;
  language: Language;
}

export async function admitRun(
  context: RunContext,
  request: RunRequest,
  digest: string,
  cwd: string,
  parts: A2APart[],
  messageId: string,
  language: Language,
): Promise<RunTicket> {
  const candidate: Candidate = { request, digest, cwd, parts, messageId, language };
  await context.threads.awaitOthersRelease(request.threadId, ADMISSION_CLAIM_WAIT_MS);
  return context.threads.locked(request.threadId, async () => {
    if (!context.accepting) throw admission.shuttingDown();
    // With a shared store, a thread held by another replica (or by a run of ours) is only read: the run-id
    // checks still answer first, then THREAD_BUSY. Only a claimed thread is recovered and changed.
    const { claimed } = await context.threads.claim(request.threadId);
    try {
      return await admit(context, candidate, claimed);
    } catch (error) {
      if (claimed) await context.threads.unclaim(request.threadId);
      throw error;
    }
  });
}

async function admit(context: RunContext, candidate: Candidate, claimed: boolean): Promise<RunTicket> {
  const { request, digest, cwd, parts, messageId, language } = candidate;
  const { threadId, runId, iacCode } = request;
  const isResume = request.resume !== undefined;
  let kind: RunTicket["kind"] = isResume ? "resume" : "turn";
  let record = claimed ? await loadRecovered(context, threadId) : await context.threads.load(threadId);
  const before = record ? structuredClone(record) : undefined;
  if (!record) {
    if (isResume) throw admission.executionLost();
    if (!claimed) throw admission.threadBusy();
    record = newThreadRecord(threadId, cwd, iacCode.userId ?? null, iacCode.rosInvocationId, context.newExecutionId());
  } else {
    const seen = runDigestOf(record, runId);
    if (seen !== undefined && !(isResume && seen !== digest && resumesUnderInterruptedRun(record, runId))) {
      throw seen === digest ? admission.duplicateRunId() : admission.runIdConflict();
    }
    if (!claimed || context.activeRuns.has(threadId)) throw admission.threadBusy();
    if (record.cwd !== cwd || record.userId !== (iacCode.userId ?? null)) throw admission.bindingConflict();
    if (!isResume && allExpired(record, Date.now())) {
      // Nobody answered in time: the interrupt is gone and so is the parked A2A task.
      void cancelUpstream(context, structuredClone(record));
      record.execution.pending = {};
    }
    if (isResume) {
      if (record.execution.rosInvocationId !== iacCode.rosInvocationId) throw admission.resumeMismatch();
    } else if (hasPending(record)) {
      // AG-UI 1.0 lets a producer end a run with the interrupt outcome again: a client that lost its
      // interrupts (a reload, a restarted CopilotKit runtime) can show them. The text is not sent.
      if (!declaresAgui1(request.protocolVersion) || record.execution.taskId === null) {
        throw admission.resumeRequired(interruptsOf(record.execution.pending, (english, lang) => localize(normalizeLanguage(lang) ?? language, english)));
      }
      kind = "reshow";
    } else {
      rotateExecution(record, iacCode.rosInvocationId, context.newExecutionId(), context.window);
    }
  }
  rememberRunDigest(record, runId, digest, context.window);
  // Admitted once: the next interrupt names its own run.
  delete record.execution.interruptedRunId;
  const requestId = randomUUID();
  const logger = context.logger.child({ requestId, threadId, runId });
  const ticket: RunTicket = { request, record, language, kind, parts, messageId, startedAt: Date.now(), requestId, logger };
  context.threads.keep(record);
  context.activeRuns.set(threadId, ticket);
  context.options.onActivity?.();
  try {
    await context.threads.persist(record);
    logger.info({ executionId: record.execution.executionId, kind: ticket.kind, language }, "run admitted");
  } catch (error) {
    context.activeRuns.delete(threadId);
    // The refused request does not consume its run id.
    await context.threads.restore(threadId, before);
    logger.warn({ err: error }, "admission write failed");
    throw admission.stateUnavailable();
  }
  return ticket;
}
