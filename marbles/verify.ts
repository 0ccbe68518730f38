/**
 * AG-UI ordering verifier for ONE complete run, as the gateway must emit it.
 *
 * It applies every rule of @ag-ui/client's `verifyEvents` (ecosystem.md §2.2) that can apply to a single run,
 * and the gateway's stricter contract on top: exactly one terminal event and it is last, nothing left open on
 * any terminal path (RUN_ERROR included), interrupts only in `RUN_FINISHED.outcome`, integer timestamps, no
 * `null` optionals, non-empty text deltas, and tool results that name a tool call of this run.
 *
 * Unlike `verifyEvents` it does not stop at the first problem: it reports every one it can find, so a failing
 * marble shows the whole picture. Problems found at the end of the stream use `index === events.length`.
 */
export interface StreamProblem {
  index: number;
  type: string;
  problem: string;
}

type StreamEvent = { type: string; [k: string]: unknown };

/** The `type` reported for problems that belong to the end of the stream rather than to one event. */
export const END_OF_STREAM = "(end of stream)";

// Required fields whose schema is "any JSON", so null is a legitimate value there and not a stray optional.
const NULLABLE_REQUIRED: Readonly<Record<string, readonly string[]>> = {
  CUSTOM: ["value"],
  RAW: ["event"],
  STATE_SNAPSHOT: ["snapshot"],
};

const OUTCOME_TYPES = new Set(["success", "interrupt", "cancelled"]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An open/close pairing by id (text messages, tool calls, reasoning spans, reasoning messages). */
class Spans {
  private readonly open = new Set<string>();
  private readonly seen = new Set<string>();

  constructor(readonly noun: string) {}

  isOpen(id: string): boolean {
    return this.open.has(id);
  }

  wasSeen(id: string): boolean {
    return this.seen.has(id);
  }

  start(id: string): void {
    this.open.add(id);
    this.seen.add(id);
  }

  end(id: string): void {
    this.open.delete(id);
  }

  openIds(): string[] {
    return [...this.open];
  }

  /** "unknown message m9" for an id never opened, "closed message m1" for one that was opened and ended. */
  describeMissing(id: string): string {
    return `${this.seen.has(id) ? "closed" : "unknown"} ${this.noun} ${id}`;
  }
}

class RunVerifier {
  readonly problems: StreamProblem[] = [];
  private readonly text = new Spans("message");
  private readonly tools = new Spans("tool call");
  private readonly reasoningSpans = new Spans("reasoning span");
  private readonly reasoningMessages = new Spans("reasoning message");
  private readonly subagents = new Spans("subagent");
  private readonly toolResults = new Set<string>();
  // Step names are unique per owner (the parent agent, or a subagentRunId), as in verifyEvents.
  private readonly steps = new Map<string | undefined, Set<string>>();
  private run: { threadId: unknown; runId: unknown } | undefined;
  private terminal: { index: number; type: string } | undefined;
  private index = 0;
  private type = "";

  verify(events: readonly unknown[]): StreamProblem[] {
    if (events.length === 0) {
      this.report("the stream is empty; it must start with RUN_STARTED", 0, END_OF_STREAM);
      return this.problems;
    }
    events.forEach((event, index) => this.visit(event, index));
    if (this.terminal === undefined) {
      this.index = events.length;
      this.type = END_OF_STREAM;
      this.report("the stream ends without RUN_FINISHED or RUN_ERROR");
      this.reportOpen("the stream ends");
    }
    return this.problems;
  }

  private report(problem: string, index = this.index, type = this.type): void {
    this.problems.push({ index, type, problem });
  }

  private visit(raw: unknown, index: number): void {
    this.index = index;
    if (!isRecord(raw) || typeof raw.type !== "string") {
      this.type = isRecord(raw) ? String(raw.type) : typeof raw;
      this.report("not an event object with a string type");
      return;
    }
    const event = raw as StreamEvent;
    this.type = event.type;
    if (this.terminal !== undefined) {
      // Checking an event after the end against run state would only add noise; one problem says it all.
      this.report(`${event.type} after the terminal ${this.terminal.type} at index ${this.terminal.index}`);
      return;
    }
    this.checkEnvelope(event);
    if (index === 0 && event.type !== "RUN_STARTED" && event.type !== "RUN_ERROR") {
      this.report("the first event must be RUN_STARTED");
    }
    this.checkOrdering(event);
  }

  /** Fields every event shares: timestamp, no null optionals, no interrupts outside the outcome. */
  private checkEnvelope(event: StreamEvent): void {
    if (!Number.isSafeInteger(event.timestamp)) this.report("missing or non-integer timestamp");
    const nullable = NULLABLE_REQUIRED[event.type] ?? [];
    for (const [key, value] of Object.entries(event)) {
      if (value === null && key !== "timestamp" && !nullable.includes(key)) {
        this.report(`${key} is null; optional fields must be absent`);
      }
    }
    if (Object.hasOwn(event, "interrupts")) {
      this.report("top-level interrupts; interrupts belong in RUN_FINISHED.outcome");
    }
  }

  private idOf(event: StreamEvent, key: string): string | undefined {
    const id = event[key];
    if (typeof id === "string") return id;
    this.report(`${event.type} without a string ${key}`);
    return undefined;
  }

  private checkOrdering(event: StreamEvent): void {
    switch (event.type) {
      case "RUN_STARTED":
        if (this.index > 0) this.report("RUN_STARTED after the first event; a stream carries one run");
        else this.run = { threadId: this.idOf(event, "threadId"), runId: this.idOf(event, "runId") };
        return;
      case "RUN_FINISHED":
        this.checkRunIdentity(event);
        this.checkOutcome(event.outcome);
        this.finish("RUN_FINISHED");
        return;
      case "RUN_ERROR":
        if (typeof event.message !== "string") this.report("RUN_ERROR without a string message");
        this.finish("RUN_ERROR");
        return;

      case "TEXT_MESSAGE_START":
        return this.opening(this.text, this.idOf(event, "messageId"));
      case "TEXT_MESSAGE_CONTENT": {
        const id = this.idOf(event, "messageId");
        this.continuing(this.text, id);
        if (typeof event.delta !== "string" || event.delta === "") {
          this.report(`TEXT_MESSAGE_CONTENT with an empty or non-string delta for message ${id}`);
        }
        return;
      }
      case "TEXT_MESSAGE_END":
        return this.closing(this.text, this.idOf(event, "messageId"));

      case "TOOL_CALL_START":
        return this.opening(this.tools, this.idOf(event, "toolCallId"));
      case "TOOL_CALL_ARGS": {
        const id = this.idOf(event, "toolCallId");
        this.continuing(this.tools, id);
        if (typeof event.delta !== "string") this.report(`TOOL_CALL_ARGS with a non-string delta for tool call ${id}`);
        return;
      }
      case "TOOL_CALL_END":
        return this.closing(this.tools, this.idOf(event, "toolCallId"));
      case "TOOL_CALL_RESULT":
        return this.toolResult(this.idOf(event, "toolCallId"));

      case "REASONING_START":
        return this.opening(this.reasoningSpans, this.idOf(event, "messageId"));
      case "REASONING_END":
        return this.closing(this.reasoningSpans, this.idOf(event, "messageId"));
      case "REASONING_MESSAGE_START":
        return this.opening(this.reasoningMessages, this.idOf(event, "messageId"));
      case "REASONING_MESSAGE_CONTENT":
        return this.continuing(this.reasoningMessages, this.idOf(event, "messageId"));
      case "REASONING_MESSAGE_END":
        return this.closing(this.reasoningMessages, this.idOf(event, "messageId"));

      case "STEP_STARTED":
        return this.stepStarted(this.idOf(event, "stepName"), this.ownerOf(event));
      case "STEP_FINISHED":
        return this.stepFinished(this.idOf(event, "stepName"), this.ownerOf(event));

      case "SUBAGENT_STARTED": {
        const id = this.idOf(event, "subagentRunId");
        // verifyEvents forbids reusing a subagentRunId for the whole run, not only while it is open.
        if (id !== undefined && this.subagents.wasSeen(id) && !this.subagents.isOpen(id)) {
          this.report(`SUBAGENT_STARTED reuses finished subagent ${id}`);
          return;
        }
        return this.opening(this.subagents, id);
      }
      case "SUBAGENT_FINISHED":
      case "SUBAGENT_ERROR":
        return this.closing(this.subagents, this.idOf(event, "subagentRunId"));

      default:
        // CUSTOM, RAW, STATE_*, MESSAGES_SNAPSHOT, ACTIVITY_*, REASONING_ENCRYPTED_VALUE: no ordering rules.
        return;
    }
  }

  private opening(spans: Spans, id: string | undefined): void {
    if (id === undefined) return;
    if (spans.isOpen(id)) this.report(`${this.type} for already open ${spans.noun} ${id}`);
    else spans.start(id);
  }

  private continuing(spans: Spans, id: string | undefined): void {
    if (id !== undefined && !spans.isOpen(id)) this.report(`${this.type} for ${spans.describeMissing(id)}`);
  }

  private closing(spans: Spans, id: string | undefined): void {
    if (id === undefined) return;
    if (spans.isOpen(id)) spans.end(id);
    else this.report(`${this.type} for ${spans.describeMissing(id)}`);
  }

  private toolResult(toolCallId: string | undefined): void {
    if (toolCallId === undefined) return;
    // No "was started" rule: a resume run reports the result of a call started in the run it resumes
    // (a permission granted, then the tool ran), and AG-UI allows results of earlier calls.
    if (this.toolResults.has(toolCallId)) this.report(`second TOOL_CALL_RESULT for tool call ${toolCallId}`);
    this.toolResults.add(toolCallId);
  }

  private ownerOf(event: StreamEvent): string | undefined {
    return typeof event.subagentRunId === "string" ? event.subagentRunId : undefined;
  }

  private stepsOf(owner: string | undefined): Set<string> {
    let names = this.steps.get(owner);
    if (names === undefined) {
      names = new Set();
      this.steps.set(owner, names);
    }
    return names;
  }

  private stepStarted(name: string | undefined, owner: string | undefined): void {
    if (name === undefined) return;
    const names = this.stepsOf(owner);
    if (names.has(name)) this.report(`STEP_STARTED for already active step "${name}"${ownerSuffix(owner)}`);
    names.add(name);
  }

  private stepFinished(name: string | undefined, owner: string | undefined): void {
    if (name === undefined) return;
    const names = this.stepsOf(owner);
    if (names.has(name)) names.delete(name);
    else this.report(`STEP_FINISHED for step "${name}"${ownerSuffix(owner)} that was not started`);
  }

  private checkRunIdentity(event: StreamEvent): void {
    if (this.run === undefined) return;
    for (const key of ["threadId", "runId"] as const) {
      if (event[key] !== this.run[key]) {
        this.report(`RUN_FINISHED ${key} ${String(event[key])} differs from RUN_STARTED ${String(this.run[key])}`);
      }
    }
  }

  private checkOutcome(outcome: unknown): void {
    if (outcome === undefined || outcome === null) return; // null is already reported by checkEnvelope
    if (!isRecord(outcome) || typeof outcome.type !== "string" || !OUTCOME_TYPES.has(outcome.type)) {
      const type = isRecord(outcome) ? String(outcome.type) : typeof outcome;
      this.report(`RUN_FINISHED outcome has unknown type ${type}`);
      return;
    }
    if (outcome.type !== "interrupt") {
      if (Object.hasOwn(outcome, "interrupts")) this.report(`interrupts in a ${outcome.type} outcome`);
      return;
    }
    const interrupts = outcome.interrupts;
    if (!Array.isArray(interrupts) || interrupts.length === 0) {
      this.report("interrupt outcome without interrupts");
      return;
    }
    const ids = new Set<string>();
    interrupts.forEach((interrupt: unknown, position) => {
      const id = isRecord(interrupt) ? interrupt.id : undefined;
      if (typeof id !== "string" || id === "") {
        this.report(`interrupt ${position} without a string id`);
        return;
      }
      if (ids.has(id)) this.report(`duplicate interrupt id ${id}`);
      ids.add(id);
      if (isRecord(interrupt) && typeof interrupt.reason !== "string") {
        this.report(`interrupt ${id} without a string reason`);
      }
    });
  }

  private finish(type: string): void {
    this.reportOpen(type);
    this.terminal = { index: this.index, type };
  }

  /** Every span still open. We balance spans before RUN_ERROR too, so this applies to both terminals. */
  private reportOpen(when: string): void {
    for (const [owner, names] of this.steps) {
      for (const name of names) this.report(`${when} while step "${name}"${ownerSuffix(owner)} is active`);
    }
    for (const spans of [this.text, this.reasoningMessages, this.reasoningSpans, this.tools, this.subagents]) {
      for (const id of spans.openIds()) this.report(`${when} while ${spans.noun} ${id} is open`);
    }
  }
}

function ownerSuffix(owner: string | undefined): string {
  return owner === undefined ? "" : ` of subagent ${owner}`;
}

/** Ordering problems of ONE complete AG-UI run, [] when it is valid. Pure; never throws. */
export function verifyAguiStream(events: readonly { type: string; [k: string]: unknown }[]): StreamProblem[] {
  try {
    return new RunVerifier().verify(events);
  } catch (error) {
    // Only reachable through hostile inputs (throwing getters, proxies); a verifier must still answer.
    return [{ index: -1, type: END_OF_STREAM, problem: `verifier could not read the stream: ${String(error)}` }];
  }
}
