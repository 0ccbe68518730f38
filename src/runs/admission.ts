// Admission under the thread's lock: the `admit` transition decides (refusals first, nothing changed by a
// refused request), the workspace is created only then, and the run id is written before the run may start.
import { createHash } from "node:crypto";
import { canonicalJson, type A2APart } from "../../operators/index.js";
import { flatRandomUUID } from "../flat-string.js";
import { HandOver } from "../hand-over.js";
import { type Language, localize, normalizeLanguage } from "../i18n/index.js";
import { prepareWorkspace, unprepareWorkspace, type CheckedWorkspace } from "./cwd.js";
import { type Caller, callerLogFields } from "./caller.js";
import { admission } from "./errors.js";
import { admittedRequest, type RunRequest } from "./input.js";
import { declaresAgui1 } from "./protocol.js";
import { abandonedRun, readRecovered, recoveredView } from "./recovery.js";
import { interruptsOf } from "./resume.js";
import { cancelTask, type RunDeps } from "./run-context.js";
import { RunLog } from "./run-log.js";
import { RunSession, type RunTicket } from "./run-session.js";
import type { LockedThread } from "./thread-repository.js";
import type { ThreadRecord } from "../state/thread-store.js";
import { admit, isRefusal } from "./transitions.js";
import { ATTR, NO_SPAN, inSpan, type TraceSpan } from "../ops/trace.js";

export function runDigest(body: unknown): string {
  return createHash("sha256").update(canonicalJson(body), "utf8").digest("hex");
}

/**
 * A follow-up turn can reach another replica before the run before it has given the thread back (a replica
 * that died between its last write and its release): admission waits this long for it.
 */
const ADMISSION_CLAIM_WAIT_MS = 250;

/** What a request brings to admission, checked and built before it (nothing invalid ever takes a run id). */
export interface RunCandidate {
  request: RunRequest;
  /** sha256 of the raw request body. */
  digest: string;
  workspace: CheckedWorkspace;
  parts: A2APart[];
  messageId: string;
  language: Language;
  /** Who asks (src/runs/caller.ts); the request's userId is already bound to it (withCallerUserId). */
  caller: Caller;
  /** The run's span (the request's), which the run keeps until its end. */
  span?: TraceSpan;
}

export async function admitRun(deps: RunDeps, candidate: RunCandidate, accepting: () => boolean): Promise<RunSession> {
  const { threadId } = candidate.request;
  return inSpan(candidate.span ?? NO_SPAN, "agui.admission", undefined, async (span) => {
    await deps.threads.awaitOthersRelease(threadId, ADMISSION_CLAIM_WAIT_MS);
    return deps.threads.locked(
      threadId,
      async (thread) => {
        if (!accepting()) throw admission.shuttingDown();
        // With a shared store, a thread held by another replica (or by a run of ours) is only read: the run-id
        // checks still answer first, then THREAD_BUSY. Only a claimed thread is recovered and changed.
        const { claimed } = await deps.threads.claim(threadId);
        try {
          return await admitLocked(deps, thread, candidate, claimed, span);
        } catch (error) {
          if (claimed) await deps.threads.unclaim(threadId);
          throw error;
        }
      },
      span,
    );
  });
}

async function admitLocked(deps: RunDeps, thread: LockedThread, candidate: RunCandidate, claimed: boolean, admissionSpan: TraceSpan): Promise<RunSession> {
  const { request, language } = candidate;
  const { threadId, runId, iacCode } = request;
  const stored = await thread.read();
  // A run left behind by a stopped process is recovered (its task cancelled, its execution ended) only for a request
  // that is admitted: admission decides on the record as recovery would leave it, and a refusal touches nothing.
  const abandoned = claimed && stored !== undefined && abandonedRun(deps, stored);
  const before = abandoned ? recoveredView(deps, stored) : stored;
  const admitted = admit(before, {
    threadId,
    runId,
    digest: candidate.digest,
    resume: request.resume !== undefined,
    rosInvocationId: iacCode.rosInvocationId,
    userId: iacCode.userId ?? null,
    caller: candidate.caller,
    cwd: candidate.workspace.path,
    agui1: declaresAgui1(request.protocolVersion),
    newExecutionId: deps.settings.newExecutionId(),
    window: deps.settings.window,
    now: Date.now(),
    claimed,
    busy: deps.live.has(threadId),
    interruptsOf: (pending) => interruptsOf(pending, (english, lang) => localize(normalizeLanguage(lang) ?? language, english)),
  });
  if (isRefusal(admitted)) throw admitted.refused;
  if (abandoned) await readRecovered(deps, thread, admissionSpan);
  if (admitted.expiredTaskId !== undefined) void cancelTask(deps, admitted.expiredTaskId, admissionSpan);
  // A resume's workspace is made once its answers are to be delivered (prepareResume): a refused answer leaves none.
  const workspace = admitted.kind === "turn" ? await prepareWorkspace(candidate.workspace) : undefined;
  const requestId = flatRandomUUID();
  const span = candidate.span ?? NO_SPAN;
  const { executionId } = admitted.record.execution;
  span.set({ [ATTR.runKind]: admitted.kind, [ATTR.executionId]: executionId, "agui.request_id": requestId });
  const parkedSpan = admitted.kind === "resume" ? before?.execution.parkedSpan : undefined;
  // The resume follows from the run that parked: an operator goes from one to the other, whatever process ran it.
  if (parkedSpan) span.link(parkedSpan);
  const log = new RunLog(deps.logger, { requestId, threadId, runId, ...callerLogFields(candidate.caller), ...span.logFields });
  const ticket: RunTicket = {
    request: admittedRequest(request),
    digest: candidate.digest,
    record: admitted.record,
    language,
    kind: admitted.kind,
    parts: new HandOver(candidate.parts),
    messageId: candidate.messageId,
    startedAt: Date.now(),
    requestId,
    log,
    interruptedRunId: before?.execution.interruptedRunId,
    workspace: candidate.workspace,
    span,
    parkedSpan,
  };
  try {
    const session = await startSession(deps, thread, ticket, before);
    log.info({ executionId: admitted.record.execution.executionId, kind: ticket.kind, language }, "run admitted");
    return session;
  } catch (error) {
    // The refused request does not leave a workspace behind either.
    if (workspace) await unprepareWorkspace(workspace);
    log.warn({ err: error }, "admission write failed");
    throw admission.stateUnavailable();
  }
}

/**
 * The admitted run, live from now on, and its record written (under the thread's lock). A write that fails puts
 * `before` back and gives the thread up: the run never was, its run id unused.
 */
export async function startSession(deps: RunDeps, thread: LockedThread, ticket: RunTicket, before: ThreadRecord | undefined): Promise<RunSession> {
  const { threadId } = ticket.request;
  const session = new RunSession(deps, ticket);
  deps.live.add(session);
  deps.threads.hold(threadId);
  deps.settings.onActivity?.();
  try {
    await thread.write(ticket.record);
  } catch (error) {
    deps.live.remove(session);
    deps.threads.letGo(threadId);
    await thread.restore(before);
    throw error;
  }
  return session;
}
