// How a run ends: RUN_FINISHED's outcome judged (its shape, its interrupts, its pending tool calls), and the
// outcome of each run of a stream read without judging it (aguiRunOutcomes).
import { isObject } from "../lib/json.js";
import { RUN_OUTCOMES, str } from "./rules.js";
import type { VerifierState } from "./state.js";

export function checkOutcome(v: VerifierState, outcome: unknown): void {
  if (outcome === undefined || outcome === null) return; // null is already reported by checkEnvelope
  if (!isObject(outcome) || typeof outcome.type !== "string" || !RUN_OUTCOMES.has(outcome.type)) {
    const type = isObject(outcome) ? String(outcome.type) : typeof outcome;
    v.report("run-outcome", `RUN_FINISHED outcome has unknown type ${type}`);
    return;
  }
  if (outcome.type === "success") checkPending(v, outcome.pendingToolCallIds);
  if (outcome.type !== "interrupt") {
    if (Object.hasOwn(outcome, "interrupts")) v.report("run-outcome", `interrupts in a ${outcome.type} outcome`);
    return;
  }
  const interrupts = outcome.interrupts;
  if (!Array.isArray(interrupts) || interrupts.length === 0) {
    v.report("run-outcome", "interrupt outcome without interrupts");
    return;
  }
  const ids = new Set<string>();
  interrupts.forEach((interrupt: unknown, position) => {
    const id = isObject(interrupt) ? interrupt.id : undefined;
    if (typeof id !== "string") {
      v.report("run-outcome", `interrupt ${position} without a string id`);
      return;
    }
    if (ids.has(id)) v.report("interrupt-ids-unique", `duplicate interrupt id ${id}`);
    ids.add(id);
    if (isObject(interrupt) && typeof interrupt.reason !== "string") v.report("run-outcome", `interrupt ${id} without a string reason`);
    if (isObject(interrupt) && interrupt.subagentRunId === null) v.report("no-null-optionals", `interrupt ${id} has subagentRunId null`);
  });
}

function checkPending(v: VerifierState, pending: unknown): void {
  if (!Array.isArray(pending) || pending.length === 0) return; // absent or empty: the consumer derives the list
  const unanswered = v.run.toolCallOrder.filter((id) => !v.run.toolResults.has(id));
  if (pending.join("\u0000") !== unanswered.join("\u0000")) {
    v.report(
      "pending-tool-calls-agree",
      `pendingToolCallIds [${pending.join(", ")}] differ from the calls this run left unanswered [${unanswered.join(", ")}]`,
    );
  }
}

export type AguiRunOutcome = "success" | "interrupt" | "cancelled" | "failed" | "truncated";

export interface AguiRunSummary {
  /** Index of the run's RUN_STARTED, or of the RUN_ERROR of a run that failed before it began. */
  index: number;
  threadId?: string;
  runId?: string;
  outcome: AguiRunOutcome;
}

/**
 * How each run of a stream ended, read as the lifecycle reads it: a RUN_ERROR after RUN_FINISHED makes that run
 * failed (the stream is still well formed), a run without a terminal event is truncated, an unrecognised outcome
 * counts as success (a consumer strips it). Judges nothing; `verifyAguiStream` does that.
 */
export function aguiRunOutcomes(events: readonly unknown[]): AguiRunSummary[] {
  const runs: AguiRunSummary[] = [];
  if (!Array.isArray(events)) return runs;
  let state: "none" | "open" | "finished" | "errored" = "none";
  try {
    events.forEach((event, index) => {
      if (!isObject(event)) return;
      const last = runs.at(-1);
      if (event.type === "RUN_STARTED" && state !== "open") {
        const threadId = str(event.threadId);
        const runId = str(event.runId);
        runs.push({ index, ...(threadId !== undefined && { threadId }), ...(runId !== undefined && { runId }), outcome: "truncated" });
        state = "open";
      } else if (event.type === "RUN_FINISHED" && state === "open" && last !== undefined) {
        const type = isObject(event.outcome) ? event.outcome.type : undefined;
        last.outcome = type === "interrupt" || type === "cancelled" ? type : "success";
        state = "finished";
      } else if (event.type === "RUN_ERROR") {
        if ((state === "open" || state === "finished") && last !== undefined) last.outcome = "failed";
        else if (state === "none") runs.push({ index, outcome: "failed" });
        state = "errored";
      }
    });
  } catch {
    // A hostile event (a throwing getter) ends the reading; the runs read before it stand, and
    // verifyAguiStream reports the event it could not read.
  }
  return runs;
}
