// Subagents (subagents#lifecycle): announced once per run before anything is attributed to them, closed once,
// nested under an announced parent; a suspended one names interrupts the run ends with.
import { isObject } from "../lib/json.js";
import { ownerName, str, type StreamEvent } from "./rules.js";
import type { VerifierState } from "./state.js";

export function subagentStarted(v: VerifierState, event: StreamEvent): void {
  const id = v.requireString(event, "subagentRunId");
  if (typeof event.name !== "string") v.report("subagent-required-fields", "SUBAGENT_STARTED without a string name");
  if (id === undefined) return;
  const run = v.run;
  if (run.activeSubagents.has(id)) {
    v.report("subagent-id-unique", `SUBAGENT_STARTED for subagent ${id}, which is already active`);
    return;
  }
  if (run.finishedSubagents.has(id)) {
    v.report("subagent-id-unique", `SUBAGENT_STARTED reuses subagent ${id}, which already finished in this run`);
    return;
  }
  if (run.attributed.has(id)) {
    v.report("subagent-announced-first", `SUBAGENT_STARTED for subagent ${id} after events attributed to it`);
  }
  const parent = str(event.parentSubagentRunId);
  if (parent !== undefined && !run.activeSubagents.has(parent) && !run.finishedSubagents.has(parent)) {
    v.report("subagent-parent-announced", `SUBAGENT_STARTED names parentSubagentRunId ${parent}, which was not announced in this run`);
  }
  run.activeSubagents.add(id);
}

/** SUBAGENT_FINISHED or SUBAGENT_ERROR. */
export function subagentEnded(v: VerifierState, event: StreamEvent): void {
  const id = v.requireString(event, "subagentRunId");
  if (event.type === "SUBAGENT_ERROR" && typeof event.message !== "string") {
    v.report("subagent-required-fields", "SUBAGENT_ERROR without a string message");
  }
  if (event.type === "SUBAGENT_FINISHED") checkSubagentOutcome(v, event.outcome, id);
  if (id === undefined) return;
  if (!v.run.activeSubagents.delete(id)) {
    const state = v.run.finishedSubagents.has(id) ? "already finished" : "never announced";
    v.report("subagent-closer-matches", `${event.type} for subagent ${id}, which was ${state}`);
    return;
  }
  v.run.finishedSubagents.add(id);
}

function checkSubagentOutcome(v: VerifierState, outcome: unknown, subagentRunId: string | undefined): void {
  if (outcome === undefined || outcome === null) return;
  if (!isObject(outcome) || (outcome.type !== "success" && outcome.type !== "suspended")) {
    v.report("subagent-outcome", `SUBAGENT_FINISHED outcome type ${isObject(outcome) ? String(outcome.type) : typeof outcome}; success or suspended`);
    return;
  }
  const ids = outcome.interruptIds;
  if (outcome.type === "success" && ids !== undefined) {
    v.report("subagent-outcome", "SUBAGENT_FINISHED success outcome with interruptIds");
  } else if (ids === null) {
    v.report("no-null-optionals", "SUBAGENT_FINISHED outcome.interruptIds is null");
  } else if (ids !== undefined && (!Array.isArray(ids) || ids.some((id: unknown) => typeof id !== "string"))) {
    v.report("subagent-outcome", "SUBAGENT_FINISHED outcome.interruptIds is not a list of strings");
  } else if (Array.isArray(ids) && subagentRunId !== undefined) {
    for (const interruptId of ids as string[]) v.run.suspendedInterrupts.push({ subagentRunId, interruptId, index: v.index });
  }
}

/** A suspended subagent's interruptIds are interrupts the run ends with, raised inside that subagent. */
export function checkSuspendedInterrupts(v: VerifierState, outcome: unknown): void {
  const interrupts = isObject(outcome) && outcome.type === "interrupt" && Array.isArray(outcome.interrupts) ? outcome.interrupts : [];
  const byId = new Map<string, unknown>();
  for (const interrupt of interrupts) if (isObject(interrupt) && typeof interrupt.id === "string") byId.set(interrupt.id, interrupt.subagentRunId);
  for (const { subagentRunId, interruptId, index } of v.run.suspendedInterrupts) {
    if (!byId.has(interruptId)) {
      v.report("subagent-interrupts-raised", `subagent ${subagentRunId} (index ${index}) names interrupt ${interruptId}, which RUN_FINISHED does not carry`);
      continue;
    }
    const tag = byId.get(interruptId);
    if (tag !== undefined && tag !== subagentRunId) {
      v.report("subagent-interrupts-raised", `subagent ${subagentRunId} (index ${index}) names interrupt ${interruptId}, raised by ${ownerName(str(tag))}`);
    }
  }
}
