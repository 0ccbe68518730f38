// The verifier's rules table, the shapes of what it reports, and the closed value sets its rules name.
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

/** An event as the verifier reads it: an object with a string type, anything else unchecked until a rule reads it. */
export type StreamEvent = { type: string; [k: string]: unknown };
/** Who an item belongs to: a subagent's subagentRunId, or undefined for the parent agent. */
export type Owner = string | undefined;

// Required fields whose schema is "any JSON", so null is a legitimate value there and not a stray optional.
export const NULLABLE_REQUIRED: Readonly<Record<string, readonly string[]>> = {
  CUSTOM: ["value"],
  RAW: ["event"],
  STATE_SNAPSHOT: ["snapshot"],
};
export const TEXT_ROLES: ReadonlySet<string> = new Set(["developer", "system", "assistant", "user"]);
export const MESSAGE_ROLES: ReadonlySet<string> = new Set([...TEXT_ROLES, "tool", "activity", "reasoning"]);
export const RUN_OUTCOMES: ReadonlySet<string> = new Set(["success", "interrupt", "cancelled"]);

export function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

export function ownerName(owner: Owner): string {
  return owner === undefined ? "the parent agent" : `subagent ${owner}`;
}

export function ofOwner(owner: Owner): string {
  return owner === undefined ? "" : ` of subagent ${owner}`;
}
