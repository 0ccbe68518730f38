/**
 * AG-UI stream verifier: judges a stream of events as the AG-UI 1.1 specification does (1.0 streams satisfy 1.1),
 * and, with `{ strict: true }`, by the gateway's own contract on top.
 *
 * Default mode is for anyone judging a producer: several runs per stream, RUN_ERROR after RUN_FINISHED (the run then
 * counts as failed, the stream is well formed), chunk events expanded as a consumer expands them, subagent attribution
 * and ownership, closed value sets. Strict mode adds what the gateway promises its clients: exactly one run, nothing
 * open before RUN_ERROR either, non-empty deltas, an integer timestamp on every event, one result per tool call and
 * interrupts only inside `RUN_FINISHED.outcome`.
 *
 * It never stops at the first problem: every problem it finds is reported, each naming its rule (`AGUI_RULES`) and
 * the index of the event. Problems that belong to the end of the stream use `index === events.length`.
 */
import { isObject } from "../operators/lib/json.js";

/** Every rule the verifier applies: where the spec states it, and whether it belongs to strict mode only. */
export const AGUI_RULES = Object.freeze({
  "event-shape": { strict: false, spec: "events: every event is an object with a string type" },
  "stream-begins-with-run": { strict: false, spec: "lifecycle#the-run: a stream begins with RUN_STARTED or RUN_ERROR" },
  "no-nested-run": { strict: false, spec: "lifecycle#several-runs-on-one-stream: RUN_STARTED while a run is active" },
  "nothing-after-run-finished": { strict: false, spec: "lifecycle#after-a-run-closes: only RUN_STARTED or RUN_ERROR" },
  "nothing-after-run-error": { strict: false, spec: "lifecycle#after-a-run-closes: only RUN_STARTED after RUN_ERROR" },
  "run-ids-agree": { strict: false, spec: "lifecycle: RUN_FINISHED closes the run RUN_STARTED opened (threadId, runId)" },
  "one-thread-per-stream": { strict: false, spec: "transports: a stream answers one RunAgentInput, one threadId" },
  "truncated-run": { strict: false, spec: "transports#truncation: a stream that ends with its run still open" },
  "required-fields": { strict: false, spec: "schema: required fields present with their type" },
  "no-null-optionals": { strict: false, spec: "schema / subagents#attribution: optional fields are absent, never null" },
  "timestamp-integer": { strict: false, spec: "schema#BaseEvent: timestamp, when present, is a safe integer" },
  "open-before-continue": { strict: false, spec: "patterns/streaming, reasoning, lifecycle#steps: continue or close only what is open" },
  "no-reopen-while-open": { strict: false, spec: "patterns/streaming, reasoning, lifecycle#steps: no opening an id that is open" },
  "reopen-agrees": { strict: false, spec: "text-messages, tool-calls: a reopening start agrees with the item it reopens" },
  "closed-before-run-finished": { strict: false, spec: "lifecycle, patterns/streaming, subagents#termination" },
  "role-closed-set": { strict: false, spec: "schema#TextMessageRole, #Role, ToolCallResultEvent.role: closed sets" },
  "reasoning-role": { strict: false, spec: "reasoning: REASONING_MESSAGE_START role is fixed, reasoning" },
  "chunk-first-fields": { strict: false, spec: "patterns/streaming#the-first-chunk: the id (and toolCallName)" },
  "chunk-conflicting-repeat": { strict: false, spec: "patterns/streaming#continuation-chunks: same value only" },
  "chunk-lane-closed": { strict: false, spec: "patterns/streaming#closing-a-chunk-stream: another event ends it" },
  "chunk-forms-do-not-mix": { strict: false, spec: "patterns/streaming#the-chunked-form: no explicit event for a chunk item" },
  "chunk-ambiguous-continuation": { strict: false, spec: "patterns/streaming#closing-a-chunk-stream: resolution" },
  "owner-agrees": { strict: false, spec: "subagents#ownership: a continuation's subagentRunId agrees with its opener" },
  "subagent-required-fields": { strict: false, spec: "schema#SubagentStartedEvent (name), #SubagentErrorEvent (message)" },
  "subagent-id-unique": { strict: false, spec: "subagents#lifecycle: not already active, not reused in the run" },
  "subagent-announced-first": { strict: false, spec: "subagents#lifecycle: announced before any event attributed to it" },
  "subagent-parent-announced": { strict: false, spec: "subagents#nesting-and-parallelism: parentSubagentRunId announced" },
  "subagent-closer-matches": { strict: false, spec: "subagents#lifecycle: SUBAGENT_FINISHED/ERROR close an active invocation" },
  "subagent-outcome": { strict: false, spec: "subagents#lifecycle: success or suspended; no interrupt ids on success" },
  "subagent-interrupts-raised": { strict: false, spec: "schema#SubagentFinishedSuspendedOutcome: ids of the run's interrupts" },
  "run-outcome": { strict: false, spec: "lifecycle#run_finished, interrupt-resume#interrupting: outcome shapes" },
  "interrupt-ids-unique": { strict: false, spec: "interrupt-resume#interrupting: unique within the run" },
  "pending-tool-calls-agree": { strict: false, spec: "tool-calls#frontend-tools: pendingToolCallIds are the unanswered calls" },
  "strict/one-run": { strict: true, spec: "gateway: exactly one run, one terminal event, and it is last" },
  "strict/closed-before-run-error": { strict: true, spec: "gateway: every span closed before RUN_ERROR too" },
  "strict/non-empty-delta": { strict: true, spec: "gateway: text and reasoning deltas are never empty" },
  "strict/timestamp-required": { strict: true, spec: "gateway: every event carries an integer timestamp" },
  "strict/one-result-per-tool-call": { strict: true, spec: "gateway: at most one TOOL_CALL_RESULT per tool call" },
  "strict/interrupts-in-outcome": { strict: true, spec: "gateway: no top-level interrupts (a consumer strips them)" },
} as const);

export type AguiRule = keyof typeof AGUI_RULES;

export interface StreamProblem {
  index: number;
  type: string;
  rule: AguiRule;
  problem: string;
}

export interface VerifyOptions {
  /** Add the gateway's contract: one run, spans closed before RUN_ERROR, non-empty deltas, integer timestamps. */
  strict?: boolean;
}

/** The `type` reported for problems that belong to the end of the stream rather than to one event. */
export const END_OF_STREAM = "(end of stream)";

type StreamEvent = { type: string; [k: string]: unknown };
type Owner = string | undefined;

// Required fields whose schema is "any JSON", so null is a legitimate value there and not a stray optional.
const NULLABLE_REQUIRED: Readonly<Record<string, readonly string[]>> = {
  CUSTOM: ["value"],
  RAW: ["event"],
  STATE_SNAPSHOT: ["snapshot"],
};
const TEXT_ROLES = new Set(["developer", "system", "assistant", "user"]);
const MESSAGE_ROLES = new Set([...TEXT_ROLES, "tool", "activity", "reasoning"]);
const RUN_OUTCOMES = new Set(["success", "interrupt", "cancelled"]);

// Closing a chunk stream (patterns/streaming): these close the lane of their own owner, these close every lane,
// the rest (RAW, ACTIVITY_*, REASONING_ENCRYPTED_VALUE, SUBAGENT_STARTED, unknown types) stand aside.
const CLOSES_OWN_LANE = new Set([
  "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
  "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
  "STATE_SNAPSHOT", "STATE_DELTA", "CUSTOM", "STEP_STARTED", "STEP_FINISHED",
  "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END",
]);
const CLOSES_EVERY_LANE = new Set(["RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT"]);


function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function ownerName(owner: Owner): string {
  return owner === undefined ? "the parent agent" : `subagent ${owner}`;
}

/** What an opener established about a streamed item; kept after it closes, for reopening and ownership. */
interface ItemRecord {
  owner: Owner;
  role?: string;
  name?: string;
  toolCallName?: string;
  parentMessageId?: string;
}

/** Streamed items of one family (text messages, tool calls, reasoning messages, reasoning spans), by id. */
class Items {
  readonly open = new Set<string>();
  readonly known = new Map<string, ItemRecord>();
  constructor(readonly noun: string) {}

  describeMissing(id: string): string {
    return `${this.known.has(id) ? "closed" : "unknown"} ${this.noun} ${id}`;
  }
}

type ChunkKind = "text" | "tool" | "reasoning";

/** An item a chunk opened: the lane of its owner holds it until something closes it. */
interface Lane {
  kind: ChunkKind;
  id: string;
  role?: string;
  name?: string;
  toolCallName?: string;
  parentMessageId?: string;
}

/** Everything a run tracks; a new RUN_STARTED starts from nothing (lifecycle: run-scoped tracking). */
class RunState {
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

type Phase = "before" | "active" | "finished" | "errored";

class StreamVerifier {
  readonly problems: StreamProblem[] = [];
  private phase: Phase = "before";
  private run = new RunState();
  private current: { threadId?: string; runId?: string } = {};
  private threadId: string | undefined;
  private runs = 0;
  private terminal: { index: number; type: string } | undefined;
  private index = 0;
  private type = "";
  // The chunk item the current event has just ended, to tell "mixed forms" from a plain sequence error.
  private endedByThisEvent: { kind: ChunkKind; id: string } | undefined;

  constructor(private readonly strict: boolean) {}

  verify(events: readonly unknown[]): StreamProblem[] {
    if (events.length === 0) {
      this.report("stream-begins-with-run", "the stream is empty; it must start with RUN_STARTED or RUN_ERROR", 0, END_OF_STREAM);
      return this.problems;
    }
    events.forEach((event, index) => this.visit(event, index));
    if (this.phase === "active") {
      this.index = events.length;
      this.type = END_OF_STREAM;
      const open = this.openItems();
      this.report(
        "truncated-run",
        `the stream ends without RUN_FINISHED or RUN_ERROR${open.length > 0 ? ` (open: ${open.join(", ")})` : ""}`,
      );
    }
    return this.problems;
  }

  private report(rule: AguiRule, problem: string, index = this.index, type = this.type): void {
    if (AGUI_RULES[rule].strict && !this.strict) return;
    this.problems.push({ index, type, rule, problem });
  }

  private visit(raw: unknown, index: number): void {
    this.index = index;
    this.endedByThisEvent = undefined;
    if (!isObject(raw) || typeof raw.type !== "string") {
      this.type = isObject(raw) ? String(raw.type) : typeof raw;
      this.report("event-shape", "not an event object with a string type");
      return;
    }
    const event = raw as StreamEvent;
    this.type = event.type;
    if (!this.admitted(event)) return;
    this.checkEnvelope(event);
    this.closeLanesFor(event);
    this.dispatch(event);
  }

  /** The run lifecycle: which event may come now. False when the event belongs to no run and is not checked further. */
  private admitted(event: StreamEvent): boolean {
    const type = event.type;
    if (this.phase === "before") {
      if (type !== "RUN_STARTED" && type !== "RUN_ERROR") {
        this.report("stream-begins-with-run", "the first event must be RUN_STARTED or RUN_ERROR");
        this.phase = "active"; // judge the rest as if a run had opened, so its own problems are reported too
      }
      return true;
    }
    if (this.phase === "errored" && type !== "RUN_STARTED") {
      this.report("nothing-after-run-error", `${type} after RUN_ERROR at index ${this.terminal?.index}; only RUN_STARTED may follow`);
      return false;
    }
    if (this.phase === "finished" && type !== "RUN_STARTED" && type !== "RUN_ERROR") {
      this.report(
        "nothing-after-run-finished",
        `${type} after RUN_FINISHED at index ${this.terminal?.index}; only RUN_STARTED or RUN_ERROR may follow`,
      );
      return false;
    }
    if (this.phase === "finished" && type === "RUN_ERROR") {
      this.report("strict/one-run", `RUN_ERROR after the terminal RUN_FINISHED at index ${this.terminal?.index}`);
    }
    if (this.phase === "active" && type === "RUN_STARTED") {
      this.report("no-nested-run", "RUN_STARTED while a run is active; close it with RUN_FINISHED or RUN_ERROR first");
      return false;
    }
    return true;
  }

  /** Fields every event shares: timestamp, no null optionals, interrupts only in the outcome. */
  private checkEnvelope(event: StreamEvent): void {
    if (event.timestamp === undefined) {
      this.report("strict/timestamp-required", "missing timestamp");
    } else if (!Number.isSafeInteger(event.timestamp)) {
      this.report("timestamp-integer", `timestamp ${String(event.timestamp)} is not a safe integer`);
    }
    const nullable = NULLABLE_REQUIRED[event.type] ?? [];
    for (const [key, value] of Object.entries(event)) {
      if (value === null && key !== "timestamp" && !nullable.includes(key)) {
        this.report("no-null-optionals", `${key} is null; optional fields must be absent`);
      }
    }
    if (Object.hasOwn(event, "interrupts")) {
      this.report("strict/interrupts-in-outcome", "top-level interrupts; interrupts belong in RUN_FINISHED.outcome");
    }
    const tag = str(event.subagentRunId);
    if (tag !== undefined && !event.type.startsWith("SUBAGENT_")) this.run.attributed.add(tag);
  }

  private requireString(event: StreamEvent, key: string): string | undefined {
    const value = event[key];
    if (typeof value === "string") return value;
    if (value !== null) this.report("required-fields", `${event.type} without a string ${key}`);
    return undefined;
  }

  // ── chunk lanes ──────────────────────────────────────────────────────────────────────────────

  private closeLanesFor(event: StreamEvent): void {
    if (CLOSES_EVERY_LANE.has(event.type)) {
      for (const owner of [...this.run.lanes.keys()]) this.closeLane(owner, event.type);
    } else if (CLOSES_OWN_LANE.has(event.type)) {
      this.closeLane(str(event.subagentRunId), event.type);
    } else if (event.type === "SUBAGENT_FINISHED" || event.type === "SUBAGENT_ERROR") {
      const id = str(event.subagentRunId);
      if (id !== undefined) this.closeLane(id, event.type);
    }
  }

  /** Synthesizes the `*_END` of the lane's chunk item, as a consumer's expansion does. */
  private closeLane(owner: Owner, by: string): void {
    const lane = this.run.lanes.get(owner);
    if (lane === undefined) return;
    this.run.lanes.delete(owner);
    this.run.laneClosedBy.set(laneKey(owner, lane.kind), { id: lane.id, index: this.index, type: by });
    this.endedByThisEvent = { kind: lane.kind, id: lane.id };
    this.close(this.itemsOf(lane.kind), lane.id, undefined);
  }

  private itemsOf(kind: ChunkKind): Items {
    return kind === "text" ? this.run.text : kind === "tool" ? this.run.tools : this.run.reasoningMessages;
  }

  private chunk(event: StreamEvent, kind: ChunkKind): void {
    const idKey = kind === "tool" ? "toolCallId" : "messageId";
    const noun = kind === "text" ? "text message" : kind === "tool" ? "tool call" : "reasoning message";
    const rawId = event[idKey];
    if (rawId !== undefined && rawId !== null && typeof rawId !== "string") {
      this.report("required-fields", `${event.type} ${idKey} is not a string`);
      return;
    }
    const id = str(rawId);
    const tag = str(event.subagentRunId);
    const owner = this.resolveLane(kind, id, tag, event.type, noun);
    if (owner === null) return;
    const lane = this.run.lanes.get(owner);
    if (lane?.kind === kind && (id === undefined || id === lane.id)) {
      this.checkRepeats(event, lane);
    } else {
      this.closeLane(owner, event.type);
      if (!this.openChunkItem(event, kind, id, owner, tag, idKey)) return;
    }
    const opened = this.run.lanes.get(owner);
    if (opened === undefined || event.delta === undefined) return;
    if (typeof event.delta !== "string") {
      this.report("required-fields", `${event.type} with a non-string delta`);
      return;
    }
    if (event.delta === "" && kind !== "tool") this.report("strict/non-empty-delta", `${event.type} with an empty delta for ${opened.id}`);
    this.continueItem(this.itemsOf(kind), opened.id, tag);
  }

  /** Which lane a chunk belongs to; null when it has no unique referent. */
  private resolveLane(kind: ChunkKind, id: string | undefined, tag: Owner, type: string, noun: string): Owner | null {
    if (id !== undefined) {
      for (const [owner, lane] of this.run.lanes) {
        if (lane.kind !== kind || lane.id !== id) continue;
        if (tag !== undefined && tag !== owner) {
          this.report("owner-agrees", `${type} for ${noun} ${id} tagged ${ownerName(tag)}, but ${ownerName(owner)} opened it`);
          return null;
        }
        return owner;
      }
      return tag;
    }
    if (tag !== undefined) return tag;
    if (this.run.lanes.get(undefined)?.kind === kind) return undefined;
    const candidates = [...this.run.lanes].filter(([, lane]) => lane.kind === kind);
    if (candidates.length === 1) return candidates[0]![0];
    if (candidates.length > 1) {
      this.report(
        "chunk-ambiguous-continuation",
        `${type} without ${kind === "tool" ? "toolCallId" : "messageId"} or subagentRunId while ${candidates.length} subagents have an open ${noun}`,
      );
      return null;
    }
    return undefined;
  }

  private checkRepeats(event: StreamEvent, lane: Lane): void {
    const keys = lane.kind === "text" ? (["role", "name"] as const) : lane.kind === "tool" ? (["toolCallName", "parentMessageId"] as const) : [];
    for (const key of keys) {
      const repeated = event[key];
      if (repeated !== undefined && repeated !== lane[key]) {
        this.report(
          "chunk-conflicting-repeat",
          `${event.type} repeats ${key} ${String(repeated)} for ${lane.id}, whose opener established ${lane[key] ?? "(absent)"}`,
        );
      }
    }
  }

  private openChunkItem(event: StreamEvent, kind: ChunkKind, id: string | undefined, owner: Owner, tag: Owner, idKey: string): boolean {
    if (id === undefined) {
      const closed = this.run.laneClosedBy.get(laneKey(owner, kind));
      if (closed !== undefined) {
        this.report(
          "chunk-lane-closed",
          `${event.type} without ${idKey} continues nothing: the chunk stream of ${closed.id} was closed by ${closed.type} at index ${closed.index}`,
        );
      } else {
        this.report("chunk-first-fields", `the first ${event.type} of an item must carry ${idKey}`);
      }
      return false;
    }
    if (this.itemsOf(kind).open.has(id)) {
      this.report("chunk-forms-do-not-mix", `${event.type} for ${id}, an item opened by an explicit start; it continues explicitly`);
      return false;
    }
    const lane: Lane = { kind, id };
    if (kind === "text") {
      const role = event.role === undefined ? "assistant" : event.role;
      if (typeof role !== "string" || !TEXT_ROLES.has(role)) {
        this.report("role-closed-set", `${event.type} role ${String(role)} is not one of ${[...TEXT_ROLES].join(", ")}`);
      }
      lane.role = String(role);
      if (event.name !== undefined) lane.name = String(event.name);
      this.open(this.run.text, id, { owner: tag, role: lane.role, ...(lane.name !== undefined && { name: lane.name }) });
    } else if (kind === "tool") {
      const toolCallName = str(event.toolCallName);
      if (toolCallName === undefined) {
        this.report("chunk-first-fields", `the first TOOL_CALL_CHUNK of ${id} must carry toolCallName`);
        return false;
      }
      lane.toolCallName = toolCallName;
      if (event.parentMessageId !== undefined) lane.parentMessageId = String(event.parentMessageId);
      this.openTool(id, tag, toolCallName, lane.parentMessageId);
    } else {
      this.open(this.run.reasoningMessages, id, { owner: tag });
    }
    this.run.lanes.set(owner, lane);
    return true;
  }

  // ── streamed items ───────────────────────────────────────────────────────────────────────────

  /** Mixing the two spellings within one item: the explicit event names the chunk item it has just ended. */
  private mixesForms(kind: ChunkKind, id: string): boolean {
    if (this.endedByThisEvent?.kind !== kind || this.endedByThisEvent.id !== id) return false;
    this.report("chunk-forms-do-not-mix", `${this.type} for ${id}, an item opened by a chunk; chunk items continue and close as chunks`);
    return true;
  }

  private open(items: Items, id: string, record: ItemRecord): void {
    if (items.open.has(id)) {
      this.report("no-reopen-while-open", `${this.type} for already open ${items.noun} ${id}`);
      return;
    }
    const established = items.known.get(id);
    if (established !== undefined) {
      if (record.owner !== undefined && record.owner !== established.owner) {
        this.report("owner-agrees", `${this.type} reopens ${items.noun} ${id} under ${ownerName(record.owner)}; ${ownerName(established.owner)} owns it`);
      }
      for (const key of ["role", "name", "toolCallName", "parentMessageId"] as const) {
        if (record[key] !== established[key]) {
          this.report("reopen-agrees", `${this.type} reopens ${items.noun} ${id} with ${key} ${record[key] ?? "(absent)"}; it was ${established[key] ?? "(absent)"}`);
        }
      }
    } else {
      items.known.set(id, record);
    }
    items.open.add(id);
  }

  private continueItem(items: Items, id: string, tag: Owner): void {
    if (!items.open.has(id)) {
      this.report("open-before-continue", `${this.type} for ${items.describeMissing(id)}`);
      return;
    }
    this.checkOwner(items, id, tag);
  }

  private close(items: Items, id: string, tag: Owner): void {
    if (!items.open.has(id)) {
      this.report("open-before-continue", `${this.type} for ${items.describeMissing(id)}`);
      return;
    }
    this.checkOwner(items, id, tag);
    items.open.delete(id);
  }

  private checkOwner(items: Items, id: string, tag: Owner): void {
    const owner = items.known.get(id)?.owner;
    if (tag !== undefined && tag !== owner) {
      this.report("owner-agrees", `${this.type} for ${items.noun} ${id} tagged ${ownerName(tag)}, but ${ownerName(owner)} opened it`);
    }
  }

  private openTool(id: string, tag: Owner, toolCallName: string | undefined, parentMessageId: string | undefined): void {
    const parent = parentMessageId === undefined ? undefined : this.run.text.known.get(parentMessageId);
    if (parent !== undefined && tag !== undefined && tag !== parent.owner) {
      this.report(
        "owner-agrees",
        `${this.type} ${id} tagged ${ownerName(tag)}, but its parent message ${parentMessageId} belongs to ${ownerName(parent.owner)}`,
      );
    }
    // A tool call inherits the attribution of the message that holds it (subagents#ownership).
    const owner = tag ?? parent?.owner;
    if (!this.run.tools.known.has(id)) this.run.toolCallOrder.push(id);
    this.open(this.run.tools, id, {
      owner,
      ...(toolCallName !== undefined && { toolCallName }),
      ...(parentMessageId !== undefined && { parentMessageId }),
    });
  }

  private dispatch(event: StreamEvent): void {
    const tag = str(event.subagentRunId);
    switch (event.type) {
      case "RUN_STARTED":
        return this.runStarted(event);
      case "RUN_FINISHED":
        return this.runFinished(event);
      case "RUN_ERROR":
        return this.runError(event);

      case "TEXT_MESSAGE_START": {
        const id = this.requireString(event, "messageId");
        if (id === undefined || this.mixesForms("text", id)) return;
        const role = event.role === undefined ? "assistant" : event.role;
        if (typeof role !== "string" || !TEXT_ROLES.has(role)) {
          this.report("role-closed-set", `TEXT_MESSAGE_START role ${String(role)} is not one of ${[...TEXT_ROLES].join(", ")}`);
        }
        const name = str(event.name);
        return this.open(this.run.text, id, { owner: tag, role: String(role), ...(name !== undefined && { name }) });
      }
      case "TEXT_MESSAGE_CONTENT":
      case "REASONING_MESSAGE_CONTENT": {
        const items = event.type === "TEXT_MESSAGE_CONTENT" ? this.run.text : this.run.reasoningMessages;
        const id = this.requireString(event, "messageId");
        const delta = this.requireString(event, "delta");
        if (delta === "") this.report("strict/non-empty-delta", `${event.type} with an empty delta for ${items.noun} ${id}`);
        if (id === undefined || this.mixesForms(event.type === "TEXT_MESSAGE_CONTENT" ? "text" : "reasoning", id)) return;
        return this.continueItem(items, id, tag);
      }
      case "TEXT_MESSAGE_END":
      case "REASONING_MESSAGE_END": {
        const id = this.requireString(event, "messageId");
        if (id === undefined || this.mixesForms(event.type === "TEXT_MESSAGE_END" ? "text" : "reasoning", id)) return;
        return this.close(event.type === "TEXT_MESSAGE_END" ? this.run.text : this.run.reasoningMessages, id, tag);
      }
      case "TEXT_MESSAGE_CHUNK":
        return this.chunk(event, "text");

      case "TOOL_CALL_START": {
        const id = this.requireString(event, "toolCallId");
        const name = this.requireString(event, "toolCallName");
        if (id === undefined || this.mixesForms("tool", id)) return;
        return this.openTool(id, tag, name, str(event.parentMessageId));
      }
      case "TOOL_CALL_ARGS": {
        const id = this.requireString(event, "toolCallId");
        this.requireString(event, "delta");
        if (id === undefined || this.mixesForms("tool", id)) return;
        return this.continueItem(this.run.tools, id, tag);
      }
      case "TOOL_CALL_END": {
        const id = this.requireString(event, "toolCallId");
        if (id === undefined || this.mixesForms("tool", id)) return;
        return this.close(this.run.tools, id, tag);
      }
      case "TOOL_CALL_CHUNK":
        return this.chunk(event, "tool");
      case "TOOL_CALL_RESULT":
        return this.toolResult(event);

      case "REASONING_START": {
        const id = this.requireString(event, "messageId");
        if (id !== undefined) this.open(this.run.reasoningSpans, id, { owner: tag });
        return;
      }
      case "REASONING_END": {
        const id = this.requireString(event, "messageId");
        if (id !== undefined) this.close(this.run.reasoningSpans, id, tag);
        return;
      }
      case "REASONING_MESSAGE_START": {
        const id = this.requireString(event, "messageId");
        if (event.role !== "reasoning") {
          this.report("reasoning-role", `REASONING_MESSAGE_START role ${String(event.role)}; it is always reasoning`);
        }
        if (id === undefined || this.mixesForms("reasoning", id)) return;
        return this.open(this.run.reasoningMessages, id, { owner: tag });
      }
      case "REASONING_MESSAGE_CHUNK":
        return this.chunk(event, "reasoning");
      case "REASONING_ENCRYPTED_VALUE":
        return this.encryptedValue(event, tag);

      case "STEP_STARTED": {
        const name = this.requireString(event, "stepName");
        if (name === undefined) return;
        const names = this.run.stepsOf(tag);
        if (names.has(name)) this.report("no-reopen-while-open", `STEP_STARTED for already active step "${name}"${ofOwner(tag)}`);
        names.add(name);
        return;
      }
      case "STEP_FINISHED":
        return this.stepFinished(event, tag);

      case "ACTIVITY_SNAPSHOT": {
        const id = this.requireString(event, "messageId");
        if (id === undefined) return;
        // A replacing snapshot re-mints the activity and its owner; replace: false leaves the established one.
        if (!this.run.activities.has(id) || event.replace !== false) this.run.activities.set(id, tag);
        return;
      }
      case "ACTIVITY_DELTA": {
        const id = this.requireString(event, "messageId");
        if (id === undefined || !this.run.activities.has(id)) return; // a consumer skips such a delta with a warning
        const owner = this.run.activities.get(id);
        if (tag !== undefined && tag !== owner) {
          this.report("owner-agrees", `ACTIVITY_DELTA for activity ${id} tagged ${ownerName(tag)}, but ${ownerName(owner)} owns it`);
        }
        return;
      }
      case "MESSAGES_SNAPSHOT":
        return this.messagesSnapshot(event);

      case "SUBAGENT_STARTED":
        return this.subagentStarted(event);
      case "SUBAGENT_FINISHED":
      case "SUBAGENT_ERROR":
        return this.subagentEnded(event);

      default:
        // CUSTOM, RAW, STATE_*: standalone, no ordering rules. An unknown type is unrecognised material a consumer
        // drops (processing model), not a sequence error.
        return;
    }
  }

  // ── lifecycle ────────────────────────────────────────────────────────────────────────────────

  private runStarted(event: StreamEvent): void {
    if (this.runs > 0) this.report("strict/one-run", `a second run in the stream (the previous one ended at index ${this.terminal?.index})`);
    this.runs += 1;
    const tag = str(event.subagentRunId);
    this.run = new RunState();
    if (tag !== undefined) this.run.attributed.add(tag);
    this.phase = "active";
    const threadId = this.requireString(event, "threadId");
    const runId = this.requireString(event, "runId");
    this.current = { ...(threadId !== undefined && { threadId }), ...(runId !== undefined && { runId }) };
    if (threadId !== undefined) {
      if (this.threadId === undefined) this.threadId = threadId;
      else if (threadId !== this.threadId) {
        this.report("one-thread-per-stream", `RUN_STARTED for thread ${threadId}; this stream belongs to thread ${this.threadId}`);
      }
    }
    if (isObject(event.input)) this.checkMessages(event.input.messages, "RUN_STARTED input");
  }

  private runFinished(event: StreamEvent): void {
    this.requireString(event, "threadId");
    this.requireString(event, "runId");
    for (const key of ["threadId", "runId"] as const) {
      const started = this.current[key];
      if (started !== undefined && typeof event[key] === "string" && event[key] !== started) {
        this.report("run-ids-agree", `RUN_FINISHED ${key} ${String(event[key])} differs from RUN_STARTED ${started}`);
      }
    }
    this.reportOpen("closed-before-run-finished", "RUN_FINISHED");
    this.checkOutcome(event.outcome);
    this.checkSuspendedInterrupts(event.outcome);
    this.end("finished");
  }

  private runError(event: StreamEvent): void {
    this.requireString(event, "message");
    if (this.phase !== "finished") this.reportOpen("strict/closed-before-run-error", "RUN_ERROR");
    this.end("errored");
  }

  private end(phase: "finished" | "errored"): void {
    this.phase = phase;
    this.terminal = { index: this.index, type: this.type };
  }

  private openItems(): string[] {
    const open: string[] = [];
    for (const [owner, names] of this.run.steps) for (const name of names) open.push(`step "${name}"${ofOwner(owner)}`);
    for (const items of [this.run.text, this.run.reasoningMessages, this.run.reasoningSpans, this.run.tools]) {
      for (const id of items.open) open.push(`${items.noun} ${id}`);
    }
    for (const id of this.run.activeSubagents) open.push(`subagent ${id}`);
    return open;
  }

  private reportOpen(rule: AguiRule, when: string): void {
    for (const item of this.openItems()) this.report(rule, `${when} while ${item} is open`);
  }

  private checkOutcome(outcome: unknown): void {
    if (outcome === undefined || outcome === null) return; // null is already reported by checkEnvelope
    if (!isObject(outcome) || typeof outcome.type !== "string" || !RUN_OUTCOMES.has(outcome.type)) {
      const type = isObject(outcome) ? String(outcome.type) : typeof outcome;
      this.report("run-outcome", `RUN_FINISHED outcome has unknown type ${type}`);
      return;
    }
    if (outcome.type === "success") this.checkPending(outcome.pendingToolCallIds);
    if (outcome.type !== "interrupt") {
      if (Object.hasOwn(outcome, "interrupts")) this.report("run-outcome", `interrupts in a ${outcome.type} outcome`);
      return;
    }
    const interrupts = outcome.interrupts;
    if (!Array.isArray(interrupts) || interrupts.length === 0) {
      this.report("run-outcome", "interrupt outcome without interrupts");
      return;
    }
    const ids = new Set<string>();
    interrupts.forEach((interrupt: unknown, position) => {
      const id = isObject(interrupt) ? interrupt.id : undefined;
      if (typeof id !== "string") {
        this.report("run-outcome", `interrupt ${position} without a string id`);
        return;
      }
      if (ids.has(id)) this.report("interrupt-ids-unique", `duplicate interrupt id ${id}`);
      ids.add(id);
      if (isObject(interrupt) && typeof interrupt.reason !== "string") this.report("run-outcome", `interrupt ${id} without a string reason`);
      if (isObject(interrupt) && interrupt.subagentRunId === null) this.report("no-null-optionals", `interrupt ${id} has subagentRunId null`);
    });
  }

  private checkPending(pending: unknown): void {
    if (!Array.isArray(pending) || pending.length === 0) return; // absent or empty: the consumer derives the list
    const unanswered = this.run.toolCallOrder.filter((id) => !this.run.toolResults.has(id));
    if (pending.join("\u0000") !== unanswered.join("\u0000")) {
      this.report(
        "pending-tool-calls-agree",
        `pendingToolCallIds [${pending.join(", ")}] differ from the calls this run left unanswered [${unanswered.join(", ")}]`,
      );
    }
  }

  // ── other families ───────────────────────────────────────────────────────────────────────────

  private toolResult(event: StreamEvent): void {
    this.requireString(event, "messageId");
    const id = this.requireString(event, "toolCallId");
    if (event.role !== undefined && event.role !== "tool") {
      this.report("role-closed-set", `TOOL_CALL_RESULT role ${String(event.role)}; it is always tool`);
    }
    if (id === undefined) return;
    // A result may answer a call made in an earlier run (a resume), so no "was started" rule.
    if (this.run.toolResults.has(id)) this.report("strict/one-result-per-tool-call", `second TOOL_CALL_RESULT for tool call ${id}`);
    this.run.toolResults.add(id);
  }

  private encryptedValue(event: StreamEvent, tag: Owner): void {
    this.requireString(event, "subtype");
    this.requireString(event, "encryptedValue");
    const id = this.requireString(event, "entityId");
    if (id === undefined || tag === undefined) return;
    const target =
      event.subtype === "tool-call"
        ? this.run.tools.known.get(id)
        : (this.run.text.known.get(id) ?? this.run.reasoningMessages.known.get(id));
    if (target !== undefined && target.owner !== tag) {
      this.report("owner-agrees", `REASONING_ENCRYPTED_VALUE for ${id} tagged ${ownerName(tag)}, but ${ownerName(target.owner)} owns it`);
    }
  }

  private stepFinished(event: StreamEvent, tag: Owner): void {
    const name = this.requireString(event, "stepName");
    if (name === undefined) return;
    const names = this.run.stepsOf(tag);
    if (names.delete(name)) return;
    const other = [...this.run.steps].find(([owner, open]) => owner !== tag && open.has(name));
    if (other !== undefined) {
      this.report("owner-agrees", `STEP_FINISHED for step "${name}"${ofOwner(tag)}, but it is open under ${ownerName(other[0])}`);
    } else {
      this.report("open-before-continue", `STEP_FINISHED for step "${name}"${ofOwner(tag)} that was not started`);
    }
  }

  private messagesSnapshot(event: StreamEvent): void {
    if (!Array.isArray(event.messages)) {
      this.report("required-fields", "MESSAGES_SNAPSHOT without a messages array");
      return;
    }
    this.checkMessages(event.messages, "MESSAGES_SNAPSHOT");
    // The snapshot establishes each message's owner (subagents#attribution, state#messages_snapshot).
    for (const message of event.messages) {
      if (!isObject(message) || typeof message.id !== "string") continue;
      const owner = str(message.subagentRunId);
      const items = message.role === "reasoning" ? this.run.reasoningMessages : this.run.text;
      if (message.role === "activity") {
        this.run.activities.set(message.id, owner);
        continue;
      }
      const role = message.role === "reasoning" ? undefined : str(message.role);
      const name = str(message.name);
      items.known.set(message.id, { owner, ...(role !== undefined && { role }), ...(name !== undefined && { name }) });
      if (!Array.isArray(message.toolCalls)) continue;
      for (const call of message.toolCalls) {
        if (!isObject(call) || typeof call.id !== "string") continue;
        const toolCallName = isObject(call.function) ? str(call.function.name) : undefined;
        this.run.tools.known.set(call.id, { owner, parentMessageId: message.id, ...(toolCallName !== undefined && { toolCallName }) });
      }
    }
  }

  private checkMessages(messages: unknown, where: string): void {
    if (!Array.isArray(messages)) return;
    messages.forEach((message: unknown, position) => {
      if (!isObject(message)) return;
      if (typeof message.role !== "string" || !MESSAGE_ROLES.has(message.role)) {
        this.report("role-closed-set", `${where} message ${position} has role ${String(message.role)}, not one of ${[...MESSAGE_ROLES].join(", ")}`);
      }
      if (message.subagentRunId === null) this.report("no-null-optionals", `${where} message ${position} has subagentRunId null`);
    });
  }

  private subagentStarted(event: StreamEvent): void {
    const id = this.requireString(event, "subagentRunId");
    if (typeof event.name !== "string") this.report("subagent-required-fields", "SUBAGENT_STARTED without a string name");
    if (id === undefined) return;
    const run = this.run;
    if (run.activeSubagents.has(id)) {
      this.report("subagent-id-unique", `SUBAGENT_STARTED for subagent ${id}, which is already active`);
      return;
    }
    if (run.finishedSubagents.has(id)) {
      this.report("subagent-id-unique", `SUBAGENT_STARTED reuses subagent ${id}, which already finished in this run`);
      return;
    }
    if (run.attributed.has(id)) {
      this.report("subagent-announced-first", `SUBAGENT_STARTED for subagent ${id} after events attributed to it`);
    }
    const parent = str(event.parentSubagentRunId);
    if (parent !== undefined && !run.activeSubagents.has(parent) && !run.finishedSubagents.has(parent)) {
      this.report("subagent-parent-announced", `SUBAGENT_STARTED names parentSubagentRunId ${parent}, which was not announced in this run`);
    }
    run.activeSubagents.add(id);
  }

  private subagentEnded(event: StreamEvent): void {
    const id = this.requireString(event, "subagentRunId");
    if (event.type === "SUBAGENT_ERROR" && typeof event.message !== "string") {
      this.report("subagent-required-fields", "SUBAGENT_ERROR without a string message");
    }
    if (event.type === "SUBAGENT_FINISHED") this.checkSubagentOutcome(event.outcome, id);
    if (id === undefined) return;
    if (!this.run.activeSubagents.delete(id)) {
      const state = this.run.finishedSubagents.has(id) ? "already finished" : "never announced";
      this.report("subagent-closer-matches", `${event.type} for subagent ${id}, which was ${state}`);
      return;
    }
    this.run.finishedSubagents.add(id);
  }

  private checkSubagentOutcome(outcome: unknown, subagentRunId: string | undefined): void {
    if (outcome === undefined || outcome === null) return;
    if (!isObject(outcome) || (outcome.type !== "success" && outcome.type !== "suspended")) {
      this.report("subagent-outcome", `SUBAGENT_FINISHED outcome type ${isObject(outcome) ? String(outcome.type) : typeof outcome}; success or suspended`);
      return;
    }
    const ids = outcome.interruptIds;
    if (outcome.type === "success" && ids !== undefined) {
      this.report("subagent-outcome", "SUBAGENT_FINISHED success outcome with interruptIds");
    } else if (ids === null) {
      this.report("no-null-optionals", "SUBAGENT_FINISHED outcome.interruptIds is null");
    } else if (ids !== undefined && (!Array.isArray(ids) || ids.some((v: unknown) => typeof v !== "string"))) {
      this.report("subagent-outcome", "SUBAGENT_FINISHED outcome.interruptIds is not a list of strings");
    } else if (Array.isArray(ids) && subagentRunId !== undefined) {
      for (const interruptId of ids as string[]) this.run.suspendedInterrupts.push({ subagentRunId, interruptId, index: this.index });
    }
  }

  /** A suspended subagent's interruptIds are interrupts the run ends with, raised inside that subagent. */
  private checkSuspendedInterrupts(outcome: unknown): void {
    const interrupts = isObject(outcome) && outcome.type === "interrupt" && Array.isArray(outcome.interrupts) ? outcome.interrupts : [];
    const byId = new Map<string, unknown>();
    for (const interrupt of interrupts) if (isObject(interrupt) && typeof interrupt.id === "string") byId.set(interrupt.id, interrupt.subagentRunId);
    for (const { subagentRunId, interruptId, index } of this.run.suspendedInterrupts) {
      if (!byId.has(interruptId)) {
        this.report("subagent-interrupts-raised", `subagent ${subagentRunId} (index ${index}) names interrupt ${interruptId}, which RUN_FINISHED does not carry`);
        continue;
      }
      const tag = byId.get(interruptId);
      if (tag !== undefined && tag !== subagentRunId) {
        this.report("subagent-interrupts-raised", `subagent ${subagentRunId} (index ${index}) names interrupt ${interruptId}, raised by ${ownerName(str(tag))}`);
      }
    }
  }
}

function laneKey(owner: Owner, kind: ChunkKind): string {
  return `${kind}\u0000${owner ?? ""}`;
}

function ofOwner(owner: Owner): string {
  return owner === undefined ? "" : ` of subagent ${owner}`;
}

/**
 * Problems of an AG-UI event stream, [] when it is valid. By the AG-UI spec; `{ strict: true }` adds the gateway's
 * contract. Pure; never throws.
 */
export function verifyAguiStream(events: readonly unknown[], options: VerifyOptions = {}): StreamProblem[] {
  try {
    return new StreamVerifier(options.strict === true).verify(events);
  } catch (error) {
    // Only reachable through hostile inputs (throwing getters, proxies); a verifier must still answer.
    return [{ index: -1, type: END_OF_STREAM, rule: "event-shape", problem: `verifier could not read the stream: ${String(error)}` }];
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
