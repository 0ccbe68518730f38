// A stage of projectA2A: each A2A frame becomes its parts (./parts.ts), in the order the frame's events
// come out: the frame's ids, the pipeline snapshot and envelopes, thinking, the tool, usage, the artifact,
// the status text, required inputs, a state that ends the turn. It reads, it decides nothing: what a part means is the
// business of the stage that owns it. Tool progress and artifacts have no AG-UI event of their own and
// leave as IAC_CODE_SIGNAL for namespaceCustom.
import { asyncScheduler, type OperatorFunction, type SchedulerLike } from "rxjs";
import { TERMINAL_STATES, iacCodeOf, onlySessionId, isAgentRole, normalizeState, resultOf, sessionIdOf, taskIdOf, textOfMessage, unprocessableFrame } from "../lib/a2a-read.js";
import { requiredInputs } from "../lib/interrupts.js";
import { canonicalJson, isObject } from "../lib/json.js";
import { stageOperator, type Stage, type StageHandlers, type StageOutput } from "../lib/stage.js";
import type { A2AMessage, A2AStreamResponse, IacCodeSignal } from "../types.js";
import type { FramePart, ProjectionPart } from "./parts.js";

const TURN_ENDING_STATES: ReadonlySet<string> = new Set([...TERMINAL_STATES, "input-required"]);

export interface ReadFramesOptions {
  /** Read the task history's last agent block when a task frame has no status text (default true). */
  historyFallback?: boolean;
  scheduler?: SchedulerLike;
  /**
   * Emit `A2A_FRAME` only when its ids differ from the last one emitted (default false: one per frame). For
   * consumers that read the ids only, as projectA2A's do: most frames of a turn repeat the ids before them.
   */
  skipRepeatedIds?: boolean;
}

/**
 * A2A stream results in, projection parts out (one clock read per frame, stamped on each part). A frame it
 * cannot read ends the stream with a RunError A2A_PROTOCOL_ERROR.
 *
 * @example
 * of({ statusUpdate: { taskId: "t1", status: { state: "TASK_STATE_COMPLETED" } } }).pipe(readFrames())
 * // → { type: "A2A_FRAME", time, taskId: "t1" }, { type: "A2A_STATE", time, state: "completed" }
 */
export function readFrames(options: ReadFramesOptions = {}): OperatorFunction<A2AStreamResponse, ProjectionPart | IacCodeSignal> {
  return stageOperator(readFramesStage(options), unprocessableFrame);
}

/** readFrames as a Stage, for fuseStages (projectA2A runs the eight stages fused). */
export function readFramesStage(options: ReadFramesOptions = {}): Stage<A2AStreamResponse, ProjectionPart | IacCodeSignal> {
  const scheduler = options.scheduler ?? asyncScheduler;
  const historyFallback = options.historyFallback ?? true;
  const skipRepeatedIds = options.skipRepeatedIds ?? false;
  return (out) => new FrameReader(out, scheduler, historyFallback, skipRepeatedIds);
}

/**
 * One subscription's reader. A class rather than closures over its state: a run holds it for as long as it streams
 * (hours, for a parked interrupt), and its methods live on the prototype. Whatever a frame makes it throw is that
 * frame's fault: a protocol error, never the process's.
 */
class FrameReader implements StageHandlers<A2AStreamResponse> {
  /**
   * Frames that arrive together (one upstream chunk, delivered in one turn of the event loop) were read at one
   * time: the clock is read once per turn, not once per frame (a tenth of the projection's cost at 100k frames a
   * second). Only on the wall clock: a scheduler of its own, or rxjs's in a TestScheduler run (virtual time, which
   * moves within a turn), is asked every time.
   */
  private readonly perTurn: boolean;
  private turnTime: number | undefined;
  private readonly turnEnded = (): void => {
    this.turnTime = undefined;
  };
  private last: FramePart | undefined;

  constructor(
    private readonly out: StageOutput<ProjectionPart | IacCodeSignal>,
    private readonly scheduler: SchedulerLike,
    private readonly historyFallback: boolean,
    private readonly skipRepeatedIds: boolean,
  ) {
    this.perTurn = scheduler === asyncScheduler && Math.abs(scheduler.now() - Date.now()) < 1_000;
  }

  private now(): number {
    if (!this.perTurn) return Math.floor(this.scheduler.now());
    if (this.turnTime === undefined) {
      this.turnTime = Math.floor(this.scheduler.now());
      queueMicrotask(this.turnEnded);
    }
    return this.turnTime;
  }

  next(frame: A2AStreamResponse): void {
    const out = this.out;
    const time = this.now();
    const result = resultOf(frame);
    const iac = iacCodeOf(result);
    const taskId = taskIdOf(frame, result);
    const contextId = typeof result.contextId === "string" && result.contextId !== "" ? result.contextId : undefined;
    const sessionId = sessionIdOf(iac);
    const last = this.last;
    if (!this.skipRepeatedIds || last === undefined || last.taskId !== taskId || last.contextId !== contextId || last.sessionId !== sessionId) {
      // One shape for every frame part (absent ids are undefined): the hot path stays monomorphic.
      const part: FramePart = { type: "A2A_FRAME", time, taskId, contextId, sessionId };
      if (this.skipRepeatedIds) this.last = part;
      out.next(part);
    }
    // Most frames of a turn (text deltas) carry only the session id: their iac_code is not read key by key.
    const rich = iac !== undefined && !onlySessionId(iac) ? iac : undefined;
    if (rich) {
      if (isObject(rich.pipelineSnapshot)) out.next({ type: "A2A_PIPELINE_SNAPSHOT", time, snapshot: rich.pipelineSnapshot });
      const batch = rich.pipelineBatch;
      if (isObject(batch) && Array.isArray(batch.events)) {
        for (const envelope of batch.events) if (isObject(envelope)) out.next({ type: "A2A_PIPELINE_ENVELOPE", time, envelope });
      }
      if (isObject(rich.pipeline)) out.next({ type: "A2A_PIPELINE_ENVELOPE", time, envelope: rich.pipeline });
      if (rich.thinking !== undefined) out.next({ type: "A2A_REASONING", time, thinking: rich.thinking });
      const tool = rich.tool;
      if (isObject(tool)) {
        const name = typeof tool.name === "string" && tool.name ? tool.name : "tool";
        const call = { type: "A2A_TOOL_CALL", time, toolUseId: tool.toolUseId, name, ofCurrentMessage: true } as const;
        switch (tool.status) {
          case "started":
            out.next(call);
            break;
          case "input_complete":
            out.next({ ...call, args: canonicalJson(tool.toolInput ?? { summary: tool.inputSummary ?? null }) });
            break;
          case "completed":
          case "failed":
            out.next({ type: "A2A_TOOL_RESULT", time, toolUseId: tool.toolUseId, result: tool.result });
            break;
          case "progress":
            out.next({ type: "IAC_CODE_SIGNAL", namespace: "tool-progress", value: { schemaVersion: 1, ...tool }, timestamp: time });
            break;
        }
      }
      if (rich.usage !== undefined) out.next({ type: "A2A_USAGE", time, usage: rich.usage });
    }
    if ("artifactUpdate" in frame && isObject(frame.artifactUpdate.artifact)) {
      out.next({ type: "IAC_CODE_SIGNAL", namespace: "artifact", value: { schemaVersion: 1, ...frame.artifactUpdate.artifact }, timestamp: time });
    }
    const message = result.status?.message;
    const delta = textOfMessage(message);
    const final = rich !== undefined && isObject(rich.assistantFinal) && rich.assistantFinal.complete === true;
    const history = delta === "" && this.historyFallback && "task" in frame ? lastAgentBlock(result.history) : undefined;
    if (delta !== "" || (history !== undefined && history.text !== "")) {
      out.next({ type: "A2A_STATUS_TEXT", time, delta, messageId: message?.messageId || undefined, final, history });
    }
    const inputs = requiredInputs(rich);
    if (inputs.length > 0) out.next({ type: "A2A_REQUIRED_INPUTS", time, inputs });
    // Only a state that ends the turn changes anything: a stream that ends on any other ends unfinished.
    const state = normalizeState(result.status?.state);
    if (state !== undefined && TURN_ENDING_STATES.has(state)) out.next({ type: "A2A_STATE", time, state });
  }
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
