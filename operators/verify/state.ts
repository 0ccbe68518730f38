// What the verifier tracks while it reads a stream: per run (RunState), per stream (VerifierState), and how a
// problem is reported. Each concern's checks (lifecycle, chunk lanes, subagents, outcomes …) read and change it.
import { AGUI_RULES, type AguiRule, type Owner, type StreamEvent, type StreamProblem } from "./rules.js";

/** What an opener established about a streamed item; kept after it closes, for reopening and ownership. */
export interface ItemRecord {
  owner: Owner;
  role?: string;
  name?: string;
  toolCallName?: string;
  parentMessageId?: string;
}

/** Streamed items of one family (text messages, tool calls, reasoning messages, reasoning spans), by id. */
export class Items {
  readonly open = new Set<string>();
  readonly known = new Map<string, ItemRecord>();
  constructor(readonly noun: string) {}

  describeMissing(id: string): string {
    return `${this.known.has(id) ? "closed" : "unknown"} ${this.noun} ${id}`;
  }
}

export type ChunkKind = "text" | "tool" | "reasoning";

/** An item a chunk opened: the lane of its owner holds it until something closes it. */
export interface Lane {
  kind: ChunkKind;
  id: string;
  role?: string;
  name?: string;
  toolCallName?: string;
  parentMessageId?: string;
}

/** Everything a run tracks; a new RUN_STARTED starts from nothing (lifecycle: run-scoped tracking). */
export class RunState {
  readonly text = new Items("message");
  readonly tools = new Items("tool call");
  readonly reasoningMessages = new Items("reasoning message");
  readonly reasoningSpans = new Items("reasoning span");
  readonly steps = new Map<Owner, Set<string>>();
  readonly activities = new Map<string, Owner>();
  readonly activeSubagents = new Set<string>();
  readonly finishedSubagents = new Set<string>();
  // interruptIds named by suspended SUBAGENT_FINISHED events, to be found among the run's interrupts.
  readonly suspendedInterrupts: { subagentRunId: string; interruptId: string; index: number }[] = [];
  readonly attributed = new Set<string>();
  readonly lanes = new Map<Owner, Lane>();
  readonly laneClosedBy = new Map<string, { id: string; index: number; type: string }>();
  readonly toolCallOrder: string[] = [];
  readonly toolResults = new Set<string>();

  stepsOf(owner: Owner): Set<string> {
    let names = this.steps.get(owner);
    if (names === undefined) {
      names = new Set();
      this.steps.set(owner, names);
    }
    return names;
  }
}

export type Phase = "before" | "active" | "finished" | "errored";

/** The verifier over one stream: where it is in the run lifecycle, the current run, the event being read. */
export class VerifierState {
  readonly problems: StreamProblem[] = [];
  phase: Phase = "before";
  run = new RunState();
  current: { threadId?: string; runId?: string } = {};
  threadId: string | undefined;
  runs = 0;
  terminal: { index: number; type: string } | undefined;
  index = 0;
  type = "";
  // The chunk item the current event has just ended, to tell "mixed forms" from a plain sequence error.
  endedByThisEvent: { kind: ChunkKind; id: string } | undefined;

  constructor(readonly strict: boolean) {}

  report(rule: AguiRule, problem: string, index = this.index, type = this.type): void {
    if (AGUI_RULES[rule].strict && !this.strict) return;
    this.problems.push({ index, type, rule, problem });
  }

  requireString(event: StreamEvent, key: string): string | undefined {
    const value = event[key];
    if (typeof value === "string") return value;
    if (value !== null) this.report("required-fields", `${event.type} without a string ${key}`);
    return undefined;
  }
}
