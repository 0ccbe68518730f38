// The run lifecycle (lifecycle#the-run): which event may come when, RUN_STARTED/RUN_FINISHED/RUN_ERROR themselves,
// and a stream that ends with its run still open.
import { isObject } from "../lib/json.js";
import { checkMessages } from "./families.js";
import { openItems } from "./items.js";
import { checkOutcome } from "./outcomes.js";
import { END_OF_STREAM, str, type AguiRule, type StreamEvent } from "./rules.js";
import { RunState, type VerifierState } from "./state.js";
import { checkSuspendedInterrupts } from "./subagents.js";

/** Which event may come now. False when the event belongs to no run and is not checked further. */
export function admitted(v: VerifierState, event: StreamEvent): boolean {
  const type = event.type;
  if (v.phase === "before") {
    if (type !== "RUN_STARTED" && type !== "RUN_ERROR") {
      v.report("stream-begins-with-run", "the first event must be RUN_STARTED or RUN_ERROR");
      v.phase = "active"; // judge the rest as if a run had opened, so its own problems are reported too
    }
    return true;
  }
  if (v.phase === "errored" && type !== "RUN_STARTED") {
    v.report("nothing-after-run-error", `${type} after RUN_ERROR at index ${v.terminal?.index}; only RUN_STARTED may follow`);
    return false;
  }
  if (v.phase === "finished" && type !== "RUN_STARTED" && type !== "RUN_ERROR") {
    v.report("nothing-after-run-finished", `${type} after RUN_FINISHED at index ${v.terminal?.index}; only RUN_STARTED or RUN_ERROR may follow`);
    return false;
  }
  if (v.phase === "finished" && type === "RUN_ERROR") {
    v.report("strict/one-run", `RUN_ERROR after the terminal RUN_FINISHED at index ${v.terminal?.index}`);
  }
  if (v.phase === "active" && type === "RUN_STARTED") {
    v.report("no-nested-run", "RUN_STARTED while a run is active; close it with RUN_FINISHED or RUN_ERROR first");
    return false;
  }
  return true;
}

export function runStarted(v: VerifierState, event: StreamEvent): void {
  if (v.runs > 0) v.report("strict/one-run", `a second run in the stream (the previous one ended at index ${v.terminal?.index})`);
  v.runs += 1;
  const tag = str(event.subagentRunId);
  v.run = new RunState();
  if (tag !== undefined) v.run.attributed.add(tag);
  v.phase = "active";
  const threadId = v.requireString(event, "threadId");
  const runId = v.requireString(event, "runId");
  v.current = { ...(threadId !== undefined && { threadId }), ...(runId !== undefined && { runId }) };
  if (threadId !== undefined) {
    if (v.threadId === undefined) v.threadId = threadId;
    else if (threadId !== v.threadId) {
      v.report("one-thread-per-stream", `RUN_STARTED for thread ${threadId}; this stream belongs to thread ${v.threadId}`);
    }
  }
  if (isObject(event.input)) checkMessages(v, event.input.messages, "RUN_STARTED input");
}

export function runFinished(v: VerifierState, event: StreamEvent): void {
  v.requireString(event, "threadId");
  v.requireString(event, "runId");
  for (const key of ["threadId", "runId"] as const) {
    const started = v.current[key];
    if (started !== undefined && typeof event[key] === "string" && event[key] !== started) {
      v.report("run-ids-agree", `RUN_FINISHED ${key} ${String(event[key])} differs from RUN_STARTED ${started}`);
    }
  }
  reportOpen(v, "closed-before-run-finished", "RUN_FINISHED");
  checkOutcome(v, event.outcome);
  checkSuspendedInterrupts(v, event.outcome);
  end(v, "finished");
}

export function runError(v: VerifierState, event: StreamEvent): void {
  v.requireString(event, "message");
  if (v.phase !== "finished") reportOpen(v, "strict/closed-before-run-error", "RUN_ERROR");
  end(v, "errored");
}

/** After the last event: a run still active is truncated. */
export function endOfStream(v: VerifierState, length: number): void {
  if (v.phase !== "active") return;
  v.index = length;
  v.type = END_OF_STREAM;
  const open = openItems(v);
  v.report("truncated-run", `the stream ends without RUN_FINISHED or RUN_ERROR${open.length > 0 ? ` (open: ${open.join(", ")})` : ""}`);
}

function end(v: VerifierState, phase: "finished" | "errored"): void {
  v.phase = phase;
  v.terminal = { index: v.index, type: v.type };
}

function reportOpen(v: VerifierState, rule: AguiRule, when: string): void {
  for (const item of openItems(v)) v.report(rule, `${when} while ${item} is open`);
}
