// A2A 1.0 stream → one AG-UI run (reference-adapter §5). Emits RUN_STARTED on subscribe, the projected
// events of every frame, and exactly one terminal event; iac-code signals without a standard event leave
// as IAC_CODE_SIGNAL for namespaceCustom. Open spans at the end are balanceSpans' job, not this stage's.
// Besides the kernel's keys, `metadata.iac_code.pipelineSnapshot` (the body of the kernel's
// /iac-code/pipeline/state, put there by the edge before a resume) becomes an ACTIVITY_SNAPSHOT.
import { EventType, type Interrupt, type TokenUsage } from "@ag-ui/core";
import { asyncScheduler, type OperatorFunction, type SchedulerLike } from "rxjs";
import {
  FAILED_STATES,
  iacCodeOf,
  isAgentRole,
  normalizeState,
  resultOf,
  sessionIdOf,
  taskIdOf,
  textOfMessage,
  unprocessableFrame,
} from "./lib/a2a-read.js";
import { fact, type ProjectionFact } from "./facts.js";
import { buildInterrupt, requiredInputs, type RequiredInput, type Translate } from "./lib/interrupts.js";
import { addCounts, canonicalJson, isObject, toCount } from "./lib/json.js";
import { operate, operatorObserver } from "./lib/operate.js";
import {
  RunError,
  type A2AMessage,
  type A2AStreamResponse,
  type AguiEvent,
  type IacCodeNamespace,
  type IacCodeSignal,
  type JsonObject,
  type RunErrorCode,
} from "./types.js";

export interface SessionInfo {
  executionId: string;
  rosInvocationId: string;
  sessionId?: string;
  /**
   * When `iac-code.session.v1` is emitted: "ids" once task and session ids are known (a new turn),
   * "first-frame" on the first frame (a resume, whose first frame means the answer was accepted).
   */
  emitOn?: "ids" | "first-frame";
}

export interface ProjectA2AOptions {
  threadId: string;
  runId: string;
  parentRunId?: string;
  /** The thread's A2A context; a frame naming another context ends the run with A2A_PROTOCOL_ERROR. */
  contextId?: string;
  /** The task being resumed, if any; a frame naming another task ends the run with A2A_PROTOCOL_ERROR. */
  taskId?: string;
  /** Without it no session event is emitted. */
  session?: SessionInfo;
  /** Inputs already answered in this execution: seeing them again is not a new interrupt. */
  appliedInputIds?: Iterable<string>;
  /** Live form of appliedInputIds, for answers accepted while the run streams (a resume). */
  isInputApplied?: (inputId: string) => boolean;
  /** Interrupts already announced, by id: a repeated sighting keeps its object (ids, schema, expiresAt). */
  knownInterrupts?: ReadonlyMap<string, Interrupt>;
  /** 0 or absent: interrupts never expire. */
  interruptTtlMs?: number;
  /** Durable pipeline steps still open from the previous run; reopened right after RUN_STARTED. */
  openSteps?: Iterable<string>;
  pipelineRunId?: string;
  /** Use the agent messages of a task's history when a run has produced no text (off for resumes). */
  historyFallback?: boolean;
  /** Emit RUN_STARTED first (default true). */
  runStarted?: boolean;
  scheduler?: SchedulerLike;
  /** Suffix source for generated ids (`assistant-<id>`, `tool-<id>`). */
  newId?: () => string;
  /** Localizes English texts: RUN_ERROR messages (language = the run's) and interrupt fallbacks (the input's). */
  translate?: Translate;
  language?: string;
}

/** What the projection emits: AG-UI events, iac-code signals for namespaceCustom, and what it learned (facts). */
export type ProjectedItem = AguiEvent | IacCodeSignal | ProjectionFact;

const ERROR_TEXT: Record<"CANCELLED" | "A2A_EXECUTION_FAILED" | "A2A_UNAVAILABLE", string> = {
  CANCELLED: "The execution was cancelled.",
  A2A_EXECUTION_FAILED: "The A2A execution failed.",
  A2A_UNAVAILABLE: "The local A2A execution service is unavailable.",
};

const STEP_START_TYPES = new Set(["step_started", "candidate_step_started", "input_received"]);
const STEP_FINISH_TYPES = new Set(["step_completed", "step_failed", "candidate_step_completed", "candidate_step_failed"]);

let idCounter = 0;
const defaultNewId = () => `${Date.now().toString(16)}${(++idCounter).toString(16).padStart(8, "0")}`;
const identity: Translate = (english) => english;

export function projectA2A(options: ProjectA2AOptions): OperatorFunction<A2AStreamResponse, ProjectedItem> {
  const scheduler = options.scheduler ?? asyncScheduler;
  const newId = options.newId ?? defaultNewId;
  const translate = options.translate ?? identity;
  const historyFallback = options.historyFallback ?? true;

  return operate<A2AStreamResponse, ProjectedItem>((source, subscriber) => {
      const { threadId, runId } = options;
      const session = options.session;
      const appliedIds = new Set(options.appliedInputIds ?? []);
      const isApplied = options.isInputApplied ?? ((id: string) => appliedIds.has(id));
      const durableSteps = new Set(options.openSteps ?? []);
      const runSteps = new Set<string>();
      const openMessages = new Set<string>();
      const openReasoning = new Set<string>();
      const openTools = new Set<string>();
      const endedTools = new Set<string>();
      const toolResults = new Set<string>();
      const usage = new Map<string, Required<Pick<TokenUsage, "inputTokens" | "outputTokens" | "totalTokens" | "cachedInputTokens">> & TokenUsage>();
      let pipelineRunId = options.pipelineRunId ?? `pipeline-${threadId}`;
      let taskId = options.taskId;
      let sessionId = session?.sessionId;
      let sessionEmitted = false;
      let currentMessage: string | undefined;
      let textEmitted = false;
      let lastState: string | undefined;
      let pipelineCursor = 0;
      let finished = false;

      // One clock read per frame: every event a frame produces carries the frame's time.
      let frameTime: number | undefined;
      const now = () => frameTime ?? Math.floor(scheduler.now());
      const emit = (event: ProjectedItem) => subscriber.next(event);
      const signal = (namespace: IacCodeNamespace, value: JsonObject) =>
        emit({ type: "IAC_CODE_SIGNAL", namespace, value, timestamp: now() });

      const usageList = (): TokenUsage[] | undefined => (usage.size === 0 ? undefined : [...usage.values()]);

      const finish = (terminal: AguiEvent, endedBy: "kernel" | "error" = "kernel") => {
        if (finished) return;
        finished = true;
        emit(outcomeOf(terminal, endedBy));
        emit(terminal);
        subscriber.complete();
      };

      const runError = (code: RunErrorCode | string, english: string) => {
        // AG-UI 1.0's RUN_ERROR has no thread or run id; @ag-ui/client strips them with a warning.
        const event: AguiEvent = {
          type: EventType.RUN_ERROR,
          code,
          message: translate(english, options.language),
          timestamp: now(),
        } as AguiEvent;
        const u = usageList();
        if (u) (event as { usage?: TokenUsage[] }).usage = u;
        return event;
      };

      const fail = (error: unknown) => {
        if (finished) return;
        if (error instanceof RunError) finish(runError(error.code, error.message), "error");
        else finish(runError("A2A_UNAVAILABLE", ERROR_TEXT.A2A_UNAVAILABLE), "error");
      };

      const emitSession = () => {
        if (!session || sessionEmitted) return;
        sessionEmitted = true;
        signal("session", {
          schemaVersion: 1,
          threadId,
          aguiRunId: runId,
          executionId: session.executionId,
          contextId: options.contextId ?? null,
          taskId: taskId ?? null,
          rosInvocationId: session.rosInvocationId,
          sessionId: sessionId ?? null,
        });
      };

      // --- spans -------------------------------------------------------------------------------
      const closeReasoning = () => {
        if (openReasoning.size === 0) return;
        for (const id of [...openReasoning].sort()) {
          emit({ type: EventType.REASONING_MESSAGE_END, messageId: id, timestamp: now() } as AguiEvent);
          emit({ type: EventType.REASONING_END, messageId: id, timestamp: now() } as AguiEvent);
        }
        openReasoning.clear();
      };

      const endMessage = (id: string) => {
        if (!openMessages.delete(id)) return;
        emit({ type: EventType.TEXT_MESSAGE_END, messageId: id, timestamp: now() } as AguiEvent);
      };

      const text = (delta: string, messageId: string | undefined, parallel: boolean) => {
        if (delta === "") return;
        closeReasoning();
        let id: string;
        if (parallel) {
          id = messageId ?? `assistant-${newId()}`;
        } else {
          id = messageId ?? currentMessage ?? `assistant-${newId()}`;
          if (currentMessage !== undefined && currentMessage !== id) endMessage(currentMessage);
          currentMessage = id;
        }
        if (!openMessages.has(id)) {
          openMessages.add(id);
          emit({ type: EventType.TEXT_MESSAGE_START, messageId: id, role: "assistant", timestamp: now() } as AguiEvent);
        }
        emit({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: id, delta, timestamp: now() } as AguiEvent);
        textEmitted = true;
      };

      const reasoning = (thinking: unknown, ownerMessageId: string | undefined) => {
        if (!isObject(thinking) || thinking.type !== "raw_thinking") return;
        if (typeof thinking.text !== "string" || thinking.text === "") return;
        const id = `reasoning-${ownerMessageId ?? currentMessage ?? runId}`;
        if (!openReasoning.has(id)) {
          openReasoning.add(id);
          emit({ type: EventType.REASONING_START, messageId: id, timestamp: now() } as AguiEvent);
          emit({ type: EventType.REASONING_MESSAGE_START, messageId: id, role: "reasoning", timestamp: now() } as AguiEvent);
        }
        emit({ type: EventType.REASONING_MESSAGE_CONTENT, messageId: id, delta: thinking.text, timestamp: now() } as AguiEvent);
      };

      const toolStart = (id: string, name: string, parentMessageId: string | undefined) => {
        if (openTools.has(id) || endedTools.has(id)) return;
        openTools.add(id);
        const event = { type: EventType.TOOL_CALL_START, toolCallId: id, toolCallName: name, timestamp: now() } as AguiEvent;
        if (parentMessageId !== undefined && openMessages.has(parentMessageId)) {
          (event as { parentMessageId?: string }).parentMessageId = parentMessageId;
        }
        emit(event);
      };

      const toolArgs = (id: string, args: string) => {
        if (!openTools.has(id)) return;
        emit({ type: EventType.TOOL_CALL_ARGS, toolCallId: id, delta: args, timestamp: now() } as AguiEvent);
        toolEnd(id);
      };

      const toolEnd = (id: string) => {
        if (!openTools.delete(id)) return;
        endedTools.add(id);
        emit({ type: EventType.TOOL_CALL_END, toolCallId: id, timestamp: now() } as AguiEvent);
      };

      const toolResult = (id: string, result: unknown) => {
        if (toolResults.has(id)) return;
        toolResults.add(id);
        toolEnd(id); // a result closes the call even when its input never completed
        emit({
          type: EventType.TOOL_CALL_RESULT,
          messageId: `tool-result-${id}`,
          toolCallId: id,
          content: typeof result === "string" ? result : canonicalJson(result ?? null),
          role: "tool",
          timestamp: now(),
        } as AguiEvent);
      };

      const recordUsage = (u: unknown) => {
        if (!isObject(u)) return;
        const provider = typeof u.provider === "string" ? u.provider : undefined;
        const model = typeof u.model === "string" ? u.model : undefined;
        const key = `${provider ?? ""}\u0000${model ?? ""}`;
        let entry = usage.get(key);
        if (!entry) {
          entry = { inputTokens: 0, outputTokens: 0, totalTokens: 0, cachedInputTokens: 0 };
          if (provider !== undefined) entry.provider = provider;
          if (model !== undefined) entry.model = model;
          usage.set(key, entry);
        }
        // Saturating sums: a kernel reporting 1e308 tokens twice must not turn usage into Infinity (null on the wire).
        entry.inputTokens = addCounts(entry.inputTokens, toCount(u.inputTokens));
        entry.outputTokens = addCounts(entry.outputTokens, toCount(u.outputTokens));
        entry.totalTokens = addCounts(entry.totalTokens, toCount(u.totalTokens));
        entry.cachedInputTokens = addCounts(entry.cachedInputTokens, toCount(u.cachedInputTokens));
      };

      // --- pipeline ------------------------------------------------------------------------------
      const stepEvent = (type: EventType.STEP_STARTED | EventType.STEP_FINISHED, key: string, timestamp = now()) =>
        emit({ type, stepName: stepName(key), timestamp } as AguiEvent);

      const reportSteps = () => emit(fact("openSteps", { openSteps: [...durableSteps].sort() }));

      const pipelineEnvelope = (envelope: unknown) => {
        if (!isObject(envelope)) return;
        const eventType = typeof envelope.eventType === "string" ? envelope.eventType : "";
        const data = isObject(envelope.data) ? envelope.data : {};
        const messageId = pipelineMessageId(pipelineRunId, envelope);
        const sequence = toCount(envelope.sequence);
        if (sequence !== undefined && sequence > pipelineCursor) {
          pipelineCursor = sequence;
          emit(fact("pipelineCursor", { sequence }));
        }
        switch (eventType) {
          case "text_delta":
            if (typeof data.text === "string") text(data.text, messageId, true);
            break;
          case "thinking_delta":
            reasoning(data, messageId);
            break;
          case "tool_started": {
            const id = toolIdOf(data.toolUseId, newId);
            toolStart(id, typeof data.toolName === "string" && data.toolName ? data.toolName : "tool", messageId);
            toolArgs(id, canonicalJson(data.input ?? {}));
            break;
          }
          case "tool_result":
            toolResult(toolIdOf(data.toolUseId, newId), data.result);
            break;
          case "usage":
            recordUsage(data);
            break;
        }
        const key = stepKeyOf(envelope);
        if (key !== undefined) {
          if (STEP_START_TYPES.has(eventType)) {
            durableSteps.add(key);
            if (!runSteps.has(key)) {
              runSteps.add(key);
              stepEvent(EventType.STEP_STARTED, key);
            }
            reportSteps();
          } else if (STEP_FINISH_TYPES.has(eventType)) {
            const wasDurable = durableSteps.delete(key);
            if (runSteps.delete(key)) {
              stepEvent(EventType.STEP_FINISHED, key);
            } else {
              // The completion of a step this run never opened (its start was missed): a zero-length pair.
              const t = now();
              stepEvent(EventType.STEP_STARTED, key, t);
              stepEvent(EventType.STEP_FINISHED, key, t);
            }
            if (wasDurable) reportSteps();
          }
        }
        signal("pipeline", envelope);
      };

      /** The kernel's pipeline state fetched before a resume: one ACTIVITY_SNAPSHOT, replacing the client's view. */
      const recoverySnapshot = (snapshot: Record<string, unknown>) => {
        if (typeof snapshot.pipelineRunId === "string" && snapshot.pipelineRunId !== "") pipelineRunId = snapshot.pipelineRunId;
        emit({
          type: EventType.ACTIVITY_SNAPSHOT,
          messageId: `pipeline:${pipelineRunId}`,
          activityType: "iac-code.pipeline.v1",
          content: { schemaVersion: 1, pipelineRunId, snapshot },
          replace: true,
          timestamp: now(),
        } as AguiEvent);
        const lastSequence = toCount(snapshot.lastSequence);
        if (lastSequence !== undefined && lastSequence > pipelineCursor) {
          pipelineCursor = lastSequence;
          emit(fact("pipelineCursor", { sequence: lastSequence }));
        }
      };

      // --- frames --------------------------------------------------------------------------------
      const checkIdentity = (frame: A2AStreamResponse, result: ReturnType<typeof resultOf>) => {
        const frameTask = taskIdOf(frame, result);
        if (frameTask !== undefined) {
          if (taskId === undefined) {
            taskId = frameTask;
            emit(fact("taskId", { taskId: frameTask }));
          } else if (frameTask !== taskId) {
            throw new RunError("A2A_PROTOCOL_ERROR", "The A2A task identity changed unexpectedly.");
          }
        }
        const context = result.contextId;
        if (options.contextId !== undefined && typeof context === "string" && context !== "" && context !== options.contextId) {
          throw new RunError("A2A_PROTOCOL_ERROR", "The A2A context identity changed unexpectedly.");
        }
      };

      const checkSession = (iac: JsonObject | undefined) => {
        const seen = sessionIdOf(iac);
        if (seen === undefined) return;
        if (sessionId === undefined) {
          sessionId = seen;
          emit(fact("sessionId", { sessionId: seen }));
        } else if (seen !== sessionId) {
          throw new RunError("A2A_PROTOCOL_ERROR", "The iac-code session identity changed unexpectedly.");
        }
      };

      const statusText = (frame: A2AStreamResponse, result: ReturnType<typeof resultOf>, iac: JsonObject | undefined) => {
        const message = result.status?.message;
        let delta = textOfMessage(message);
        let messageId = message?.messageId || undefined;
        if (delta === "" && !textEmitted && historyFallback && "task" in frame) {
          const block = lastAgentBlock(result.history);
          delta = block.text;
          messageId = block.messageId;
        }
        if (delta === "") return;
        const final = iac && isObject(iac.assistantFinal) && iac.assistantFinal.complete === true;
        if (final && textEmitted) return; // the kernel repeats the whole answer after streaming it
        text(delta, messageId, false);
      };

      const onInterrupt = (inputs: RequiredInput[]) => {
        for (const input of inputs) {
          const requestTask = input.value.requestTaskId;
          if (typeof requestTask === "string" && taskId !== undefined && requestTask !== taskId) {
            throw new RunError("A2A_PROTOCOL_ERROR", "An interrupt belongs to another A2A task.");
          }
          const context = input.value.contextId;
          if (typeof context === "string" && options.contextId !== undefined && context !== options.contextId) {
            throw new RunError("A2A_PROTOCOL_ERROR", "An interrupt belongs to another A2A context.");
          }
        }
        const ttl = options.interruptTtlMs ?? 0;
        const expiresAt = ttl > 0 ? new Date(now() + ttl).toISOString() : undefined;
        const pending = inputs.map((input) => ({
          input,
          interrupt: options.knownInterrupts?.get(input.value.inputId) ?? buildInterrupt(input.value, translate, expiresAt),
        }));
        const interrupts = pending.map((p) => p.interrupt);
        emitSession();
        emit(fact("interrupts", { pending }));
        finish({
          type: EventType.RUN_FINISHED,
          threadId,
          runId,
          outcome: { type: "interrupt", interrupts },
          ...(usage.size > 0 ? { usage: usageList() } : {}),
          timestamp: now(),
        } as AguiEvent);
      };

      const finishFromState = () => {
        if (finished) return;
        emitSession();
        if (lastState === "completed" || lastState === "input-required") {
          const event = { type: EventType.RUN_FINISHED, threadId, runId, outcome: { type: "success" }, timestamp: now() } as AguiEvent;
          const u = usageList();
          if (u) (event as { usage?: TokenUsage[] }).usage = u;
          finish(event);
        } else if (lastState === "canceled") {
          finish(runError("CANCELLED", ERROR_TEXT.CANCELLED));
        } else {
          // A stream that ends while WORKING (or never states anything) did not finish its turn.
          finish(runError("A2A_EXECUTION_FAILED", ERROR_TEXT.A2A_EXECUTION_FAILED));
        }
      };

      const onFrame = (frame: A2AStreamResponse) => {
        const result = resultOf(frame);
        const iac = iacCodeOf(result);
        checkIdentity(frame, result);
        checkSession(iac);
        if (session && !sessionEmitted) {
          if (session.emitOn === "first-frame" || (taskId !== undefined && sessionId !== undefined)) emitSession();
        }
        if (iac) {
          if (isObject(iac.pipelineSnapshot)) recoverySnapshot(iac.pipelineSnapshot);
          const batch = iac.pipelineBatch;
          if (isObject(batch) && Array.isArray(batch.events)) for (const e of batch.events) pipelineEnvelope(e);
          if (iac.pipeline !== undefined) pipelineEnvelope(iac.pipeline);
          if (iac.thinking !== undefined) reasoning(iac.thinking, undefined);
          const tool = iac.tool;
          if (isObject(tool)) {
            const id = toolIdOf(tool.toolUseId, newId);
            const name = typeof tool.name === "string" && tool.name ? tool.name : "tool";
            switch (tool.status) {
              case "started":
                toolStart(id, name, currentMessage);
                break;
              case "input_complete":
                toolStart(id, name, currentMessage);
                toolArgs(id, canonicalJson(tool.toolInput ?? { summary: tool.inputSummary ?? null }));
                break;
              case "completed":
              case "failed":
                toolResult(id, tool.result);
                break;
              case "progress":
                signal("tool-progress", { schemaVersion: 1, ...tool });
                break;
            }
          }
          if (iac.usage !== undefined) recordUsage(iac.usage);
        }
        if ("artifactUpdate" in frame && isObject(frame.artifactUpdate.artifact)) {
          signal("artifact", { schemaVersion: 1, ...frame.artifactUpdate.artifact });
        }
        statusText(frame, result, iac);

        const pending = requiredInputs(iac).filter((input) => !isApplied(input.value.inputId));
        if (pending.length > 0) return onInterrupt(pending);

        const state = normalizeState(result.status?.state);
        if (state !== undefined) lastState = state;
        if (state !== undefined && (FAILED_STATES.has(state) || state === "canceled" || state === "completed" || state === "input-required")) {
          finishFromState();
        }
      };

      if (options.runStarted ?? true) {
        const started = { type: EventType.RUN_STARTED, threadId, runId, timestamp: now() } as AguiEvent;
        if (options.parentRunId !== undefined) (started as { parentRunId?: string }).parentRunId = options.parentRunId;
        emit(started);
      }
      for (const key of [...durableSteps].sort()) {
        runSteps.add(key);
        stepEvent(EventType.STEP_STARTED, key);
      }

      const upstream = source.subscribe(
        operatorObserver(subscriber, {
          next: (frame) => {
            if (finished) return;
            frameTime = Math.floor(scheduler.now());
            try {
              onFrame(frame);
            } catch (error) {
              // Whatever a frame makes us throw is that frame's fault: a protocol error, never the process's.
              fail(unprocessableFrame(error));
            } finally {
              frameTime = undefined;
            }
          },
          error: fail,
          complete: finishFromState,
        }),
      );
      return () => upstream.unsubscribe();
    });
}

function outcomeOf(terminal: AguiEvent, endedBy: "kernel" | "error"): ProjectionFact {
  if (terminal.type === EventType.RUN_ERROR) return fact("outcome", { outcome: "failed", code: (terminal as { code?: string }).code ?? "", endedBy });
  const type = (terminal as { outcome?: { type?: string } }).outcome?.type;
  return fact("outcome", { outcome: type === "interrupt" ? "interrupt" : "success", endedBy });
}

function toolIdOf(value: unknown, newId: () => string): string {
  return typeof value === "string" && value !== "" ? value : `tool-${newId()}`;
}

/** Last contiguous block of agent messages in a task history (trailing user messages skipped). */
function lastAgentBlock(history: A2AMessage[] | undefined): { text: string; messageId?: string } {
  if (!Array.isArray(history)) return { text: "" };
  let end = history.length - 1;
  while (end >= 0 && !isAgentRole(history[end]?.role)) end--;
  let start = end;
  while (start > 0 && isAgentRole(history[start - 1]?.role)) start--;
  if (end < 0) return { text: "" };
  let text = "";
  for (let i = start; i <= end; i++) text += textOfMessage(history[i]);
  const messageId = history[end]?.messageId;
  return messageId ? { text, messageId } : { text };
}

/**
 * `step:<id>`, or `candidate:<candidate>:<id>` inside a candidate. The candidate part prefers the
 * candidate's runId: parallel candidates of one sub-pipeline share their `id`, and their steps must not
 * collide in STEP_* names.
 */
export function stepKeyOf(envelope: Record<string, unknown>): string | undefined {
  const step = isObject(envelope.candidateStep) ? envelope.candidateStep : isObject(envelope.step) ? envelope.step : undefined;
  const stepId = step && typeof step.id === "string" && step.id !== "" ? step.id : undefined;
  if (stepId === undefined) return undefined;
  const candidate = isObject(envelope.candidate) ? envelope.candidate : undefined;
  const candidateId = candidate ? firstString(candidate.runId, candidate.id, candidate.subPipelineId) : undefined;
  return candidateId !== undefined ? `candidate:${candidateId}:${stepId}` : `step:${stepId}`;
}

export function stepName(key: string): string {
  return key.startsWith("step:") ? key.slice(5) : key;
}

function pipelineMessageId(pipelineRunId: string, envelope: Record<string, unknown>): string {
  const scope = typeof envelope.scope === "string" && envelope.scope !== "" ? envelope.scope : "pipeline";
  const coords: string[] = [];
  for (const key of ["candidate", "candidateStep", "step"] as const) {
    const c = envelope[key];
    if (!isObject(c)) continue;
    const coord = firstString(c.runId, c.id);
    if (coord !== undefined && !coords.includes(coord)) coords.push(coord);
  }
  return [`pipeline-message:${pipelineRunId}:${scope}`, ...coords].join(":");
}

function firstString(...values: unknown[]): string | undefined {
  for (const v of values) if (typeof v === "string" && v !== "") return v;
  return undefined;
}
