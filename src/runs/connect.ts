// POST /connect: what a client that has nothing (a reloaded page, a restarted runtime) needs to be where a client
// that never left is. Who may connect, which run is live on the thread (its own events follow the snapshot), which
// interrupts wait, and the conversation from the kernel's task history. Nothing is written.
import { EventType, type Interrupt, type Message } from "@ag-ui/core";
import type { AguiEvent } from "../../operators/index.js";
import { GatewayError } from "../errors.js";
import { localize, messageText, normalizeLanguage, type Language } from "../i18n/index.js";
import type { ThreadRecord } from "../state/thread-store.js";
import type { Caller } from "./caller.js";
import { interruptsOf } from "./resume.js";
import type { RunDeps } from "./run-context.js";
import { hasPending, mayUse } from "./transitions.js";

export interface ConnectRequest {
  threadId: string;
  /** The binding's proof; a trusted caller, or the user who owns the thread, connects without it. */
  rosInvocationId?: string;
  caller: Caller;
  language: Language;
}

/** The thread as a connect finds it. */
export interface ConnectTarget {
  record: ThreadRecord;
  /**
   * The run streaming on the thread now, on this replica or another (its events may be kept for a reconnect), and its
   * request's digest; `takenUp`: a run this replica took up after a restart (src/runs/adopt.ts), whose events began
   * where the kernel was then.
   */
  liveRun?: { runId: string; digest: string; takenUp?: boolean };
  /** The interrupts waiting for an answer (none while a run streams). */
  interrupts: Interrupt[];
}

export const connectErrors = {
  /** A thread the caller may not see is answered as if it did not exist. */
  notFound: () => new GatewayError(404, "THREAD_NOT_FOUND", messageText("connect.notFound")),
  proofRequired: () => new GatewayError(400, "INVALID_INPUT", messageText("connect.proofRequired"), { field: "forwardedProps.iacCode.rosInvocationId" }),
};

export async function connectTarget(deps: RunDeps, request: ConnectRequest): Promise<ConnectTarget> {
  const { caller } = request;
  const record = await deps.threads.read(request.threadId);
  if (!record || !mayUse(caller, record)) throw connectErrors.notFound();
  // Who the caller is may stand for the proof: the trusted server, or the user who owns the thread.
  const known = caller.kind === "trusted" || (caller.kind === "user" && record.owner === caller.userId);
  if (!known) {
    if (request.rosInvocationId === undefined) throw connectErrors.proofRequired();
    if (request.rosInvocationId !== record.execution.rosInvocationId) throw connectErrors.notFound();
  }
  const translate = (english: string, lang?: string) => localize(normalizeLanguage(lang) ?? request.language, english);
  if (hasPending(record)) return { record, interrupts: interruptsOf(record.execution.pending, translate) };
  const liveRun = liveRunOf(deps, record);
  return { record, interrupts: [], ...(liveRun && { liveRun }) };
}

/** The run streaming on the thread: ours, or another replica's (the last admitted, while the execution still has a task). */
export function liveRunOf(deps: RunDeps, record: ThreadRecord): { runId: string; digest: string; takenUp?: boolean } | undefined {
  const local = deps.live.session(record.threadId)?.ticket;
  if (local) return { runId: local.request.runId, digest: local.digest, ...(local.kind === "adopt" && { takenUp: true }) };
  const last = record.execution.taskId !== null ? record.runDigests.at(-1) : undefined;
  return last && { runId: last.runId, digest: last.digest };
}

/**
 * The connect stream's own run: RUN_STARTED, the conversation as MESSAGES_SNAPSHOT, and RUN_FINISHED, carrying the
 * waiting interrupts when there are any (an answer to them is a resume like any other).
 */
export function connectRun(threadId: string, runId: string, messages: Message[], interrupts: readonly Interrupt[], now = Date.now()): AguiEvent[] {
  return [
    { type: EventType.RUN_STARTED, threadId, runId, timestamp: now },
    { type: EventType.MESSAGES_SNAPSHOT, messages, timestamp: now },
    {
      type: EventType.RUN_FINISHED,
      threadId,
      runId,
      timestamp: now,
      outcome: interrupts.length > 0 ? { type: "interrupt", interrupts: [...interrupts] } : { type: "success" },
    },
  ] as AguiEvent[];
}
