// The cancel extension (reference-adapter §8.3): stop the execution's A2A task and end it in the thread's
// state. Upstream failures surface as A2A_UNAVAILABLE. With a shared store a cancel may reach a replica
// that does not run the execution: it is relayed to the replica holding the thread, which cancels and ends
// its own stream; when that replica is gone, its lease is taken over and the cancel is done here.
import { RunError } from "../../operators/index.js";
import { isTaskAlreadyTerminal, isTaskNotFound, toRunError } from "../a2a/error-mapping.js";
import { GatewayError } from "../errors.js";
import { messageText } from "../i18n/index.js";
import type { Caller } from "./caller.js";
import { admission } from "./errors.js";
import { ATTR, NO_SPAN, inSpan, type TraceSpan } from "../ops/trace.js";
import type { RunDeps } from "./run-context.js";
import { readRecovered } from "./recovery.js";
import type { LockedThread } from "./thread-repository.js";
import { endExecution, hasPending, mayUse } from "./transitions.js";

export type CancelOutcome = "cancelled" | "already_terminal" | "not_found";

export interface CancelRequest {
  executionId: string;
  threadId: string;
  /** The binding's proof; a trusted caller, or the user who owns the thread, cancels without it. */
  rosInvocationId?: string;
  /** Absent on a relayed cancel: the replica that relayed it checked the caller. */
  caller?: Caller;
  /** A relayed cancel: the relaying span's W3C traceparent, so the owner's work joins the same trace. */
  traceparent?: string;
}

/**
 * What a relayed cancel answers: the owner's outcome, the code its cancel failed with (logged there), or that it
 * no longer runs the thread (its run ended while the request travelled).
 */
export type CancelReply = { outcome: CancelOutcome } | { failed: string } | { notOwner: true };

/** How long a replica waits for the owner of a thread to answer a relayed cancel. */
export const RELAYED_CANCEL_TIMEOUT_MS = 10_000;
/** A thread can change hands while a cancel is relayed; after this many hand-overs the cancel gives up. */
const CANCEL_ATTEMPTS = 3;

/** `span`: the cancel request's; the kernel's CancelTask and the durable write are its children, the outcome its attribute. */
export async function cancelExecution(deps: RunDeps, request: CancelRequest, span: TraceSpan = NO_SPAN): Promise<CancelOutcome> {
  span.set({ [ATTR.threadId]: request.threadId, [ATTR.executionId]: request.executionId });
  const outcome = await cancelWhereRunning(deps, request, span);
  span.set({ "agui.cancel.outcome": outcome });
  return outcome;
}

async function cancelWhereRunning(deps: RunDeps, request: CancelRequest, span: TraceSpan): Promise<CancelOutcome> {
  // Relayed without the caller: the caller was checked here.
  const { caller, ...cancel } = request;
  const { threadId } = cancel;
  // Who the caller is may stand for the proof: the trusted server, or a user (who may only touch threads it owns).
  if (caller?.kind === "anonymous" && cancel.rosInvocationId === undefined) throw new GatewayError(400, "INVALID_INPUT", messageText("cancel.idsRequired"));
  // A stranger's thread answers as a thread that does not exist. An owner, once set, never changes: checked once.
  if (caller !== undefined) {
    const record = await deps.threads.read(threadId);
    if (record && !mayUse(caller, record)) return "not_found";
  }
  if (!deps.threads.shared || deps.live.has(threadId)) return deps.threads.locked(threadId, (thread) => cancelLocked(deps, thread, cancel, false, span), span);
  return deps.threads.locked(threadId, async (thread) => {
    for (let attempt = 0; attempt < CANCEL_ATTEMPTS; attempt++) {
      let claim = await deps.threads.claim(threadId);
      // A run of ours was admitted since the check above: it is cancelled here, under the lock we hold.
      if (!claim.claimed && claim.heldBy === deps.threads.replicaId) return cancelLocked(deps, thread, cancel, false, span);
      if (!claim.claimed) {
        const relayed = await relayCancel(deps, claim.heldBy, cancel, span);
        if (relayed !== "gone" && relayed !== "notOwner") return relayed;
        // The owner let the thread go meanwhile: claim it ourselves. The owner is gone: take its lease over.
        if (relayed === "notOwner") continue;
        claim = await deps.threads.claimFrom(threadId, claim.heldBy);
        if (!claim.claimed) continue;
      }
      try {
        return await cancelLocked(deps, thread, cancel, true, span);
      } finally {
        await deps.threads.unclaim(threadId);
      }
    }
    throw new RunError("A2A_UNAVAILABLE", messageText("a2a.unavailable"));
  }, span);
}

/** Asks the replica holding the thread to cancel: its outcome, "notOwner", or "gone" (nobody listens, or no answer). */
async function relayCancel(deps: RunDeps, owner: string, cancel: CancelRequest, parent: TraceSpan): Promise<CancelOutcome | "notOwner" | "gone"> {
  if (!deps.relay) return "gone";
  const relay = deps.relay;
  const relayed = await inSpan(parent, "agui.cancel.relay", { kind: "client", attributes: { "agui.replica.owner": owner } }, async (span) => {
    const headers: Record<string, string> = {};
    span.inject(headers);
    const payload: CancelRequest = { ...cancel, ...(headers.traceparent !== undefined && { traceparent: headers.traceparent }) };
    const answer = await relay.request(owner, "cancel", payload, RELAYED_CANCEL_TIMEOUT_MS);
    span.set({ "agui.relay.answered": answer.answered });
    return answer;
  });
  if (relayed.answered) return outcomeOf(relayed.reply);
  if (relayed.reason === "unavailable") throw admission.stateUnavailable();
  if (relayed.reason !== "no-subscriber" && relayed.reason !== "timeout") {
    deps.logger.warn({ threadId: cancel.threadId, owner, reason: relayed.reason }, "a cancel could not be relayed to the replica holding the thread");
    throw new RunError("A2A_UNAVAILABLE", messageText("a2a.unavailable"));
  }
  deps.logger.warn({ threadId: cancel.threadId, owner }, "the replica holding the thread did not answer a cancel: taking the thread over");
  return "gone";
}

/**
 * The owner's side of a relayed cancel: only a run of ours is ours to cancel (checked under the thread's lock,
 * where a run cannot end meanwhile). Anything else — the run ended, a forged request — answers notOwner.
 */
export async function answerRelayedCancel(deps: RunDeps, payload: unknown): Promise<CancelReply> {
  if (!isCancelRequest(payload)) return { failed: "INVALID_INPUT" };
  const { traceparent } = payload as { traceparent?: unknown };
  // Only a relay that was traced is: the owner's part is a span under the relaying replica's.
  const span =
    deps.tracer.enabled && typeof traceparent === "string"
      ? deps.tracer.fromRequest("agui.cancel.relayed", { traceparent }, { attributes: { [ATTR.threadId]: payload.threadId, [ATTR.executionId]: payload.executionId } })
      : NO_SPAN;
  try {
    const reply = await deps.threads.locked(
      payload.threadId,
      async (thread) => (deps.live.has(payload.threadId) ? { outcome: await cancelLocked(deps, thread, payload, false, span) } : { notOwner: true as const }),
      span,
    );
    span.set({ "agui.cancel.outcome": "outcome" in reply ? reply.outcome : "not_owner" });
    return reply;
  } catch (error) {
    const code = error instanceof RunError ? error.code : "A2A_UNAVAILABLE";
    span.fail(code);
    return { failed: code };
  } finally {
    span.end();
  }
}

/**
 * `claimedHere`: the thread was claimed for this cancel from a shared store (no replica held it, or its holder is
 * gone): its task may live in another replica's kernel, and its run is this cancel's to end — recovering it first
 * would cancel it and answer "already_terminal".
 */
async function cancelLocked(deps: RunDeps, thread: LockedThread, cancel: CancelRequest, claimedHere: boolean, span: TraceSpan = NO_SPAN): Promise<CancelOutcome> {
  const { executionId, threadId, rosInvocationId } = cancel;
  const record = claimedHere ? await thread.read() : await readRecovered(deps, thread, span);
  if (!record) return "not_found";
  const execution = record.execution;
  if (execution.executionId !== executionId) {
    return record.terminalExecutionIds.includes(executionId) ? "already_terminal" : "not_found";
  }
  if (rosInvocationId !== undefined && execution.rosInvocationId !== rosInvocationId) return "not_found";
  if (!deps.live.has(threadId) && !hasPending(record) && execution.taskId === null) return "already_terminal";
  if (execution.taskId !== null) {
    try {
      await deps.kernel.cancelTask(execution.taskId, span);
    } catch (error) {
      if (!isTaskAlreadyTerminal(error) && !(claimedHere && isTaskNotFound(error))) throw toRunError(error, "A2A_UNAVAILABLE");
    }
  }
  await thread.update(endExecution({ window: deps.settings.window, clearPending: true }));
  return "cancelled";
}

function isCancelRequest(value: unknown): value is CancelRequest {
  const v = value as Partial<Record<keyof CancelRequest, unknown>> | null;
  if (typeof v !== "object" || v === null) return false;
  const nonEmpty = (s: unknown) => typeof s === "string" && s !== "";
  return nonEmpty(v.executionId) && nonEmpty(v.threadId) && (v.rosInvocationId === undefined || nonEmpty(v.rosInvocationId));
}

/** The owner's outcome; a cancel that failed there fails here as the upstream failure it was. */
function outcomeOf(reply: unknown): CancelOutcome | "notOwner" {
  const r = reply as { outcome?: unknown; notOwner?: unknown } | null;
  if (r?.notOwner === true) return "notOwner";
  const outcome = r?.outcome;
  if (outcome === "cancelled" || outcome === "already_terminal" || outcome === "not_found") return outcome;
  throw new RunError("A2A_UNAVAILABLE", messageText("a2a.unavailable"));
}
