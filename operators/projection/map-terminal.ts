// A stage of projectA2A: the run's lifecycle. RUN_STARTED on subscribe; then exactly one terminal event,
// with the usage totals so far: RUN_FINISHED for a completed (or input-required) state or an interrupt,
// RUN_ERROR for a canceled or failed state, for a stream that ends before its turn did, and for an error
// (a RunError keeps its code; anything else is A2A_UNAVAILABLE). The `outcome` fact comes right before it.
// After the terminal event nothing more passes and the upstream is let go.
import { EventType, type TokenUsage } from "@ag-ui/core";
import { asyncScheduler, type OperatorFunction, type SchedulerLike } from "rxjs";
import { fact, type ProjectionFact } from "../facts.js";
import { FAILED_STATES, unprocessableFrame } from "../lib/a2a-read.js";
import type { Translate } from "../lib/interrupts.js";
import { runErrorEvent } from "../lib/run-error-event.js";
import { stageOperator, type Stage, type StageHandlers, type StageOutput } from "../lib/stage.js";
import { RunError, type AguiEvent, type RunErrorCode } from "../types.js";
import type { InterruptEndPart, StatePart, UsageTotalsPart } from "./parts.js";
import { OPERATOR_TEXTS } from "../messages.js";

export interface MapTerminalOptions {
  threadId: string;
  runId: string;
  parentRunId?: string;
  /** Emit RUN_STARTED first (default true). */
  runStarted?: boolean;
  /** Localizes RUN_ERROR messages (language = the run's). */
  translate?: Translate;
  language?: string;
  scheduler?: SchedulerLike;
}

// Once finished it reads nothing more: it has completed its output, and a fused chain drops what comes after.
const READS: ReadonlySet<string> = new Set(["A2A_STATE", "A2A_INTERRUPT_END", "A2A_USAGE_TOTALS"]);

type Consumed = StatePart | InterruptEndPart | UsageTotalsPart;

const ERROR_TEXT: Record<"CANCELLED" | "A2A_EXECUTION_FAILED" | "A2A_UNAVAILABLE", string> = {
  CANCELLED: OPERATOR_TEXTS["run.cancelled"],
  A2A_EXECUTION_FAILED: OPERATOR_TEXTS["a2a.executionFailed"],
  A2A_UNAVAILABLE: OPERATOR_TEXTS["a2a.unavailable"],
};

const identity: Translate = (english) => english;

/**
 * Consumes `A2A_STATE`, `A2A_INTERRUPT_END` and `A2A_USAGE_TOTALS` parts; passes everything else on until
 * the terminal event, then completes.
 *
 * @example
 * parts$.pipe(mapTerminal({ threadId: "t", runId: "r" }))
 * // on subscribe: RUN_STARTED; A2A_STATE "working" → nothing; A2A_STATE "completed"
 * // → fact outcome success, RUN_FINISHED {outcome: {type: "success"}}, complete
 */
export function mapTerminal<T extends { type: string }>(options: MapTerminalOptions): OperatorFunction<T, Exclude<T, Consumed> | AguiEvent | ProjectionFact> {
  return stageOperator(mapTerminalStage<T>(options));
}

/** mapTerminal as a Stage, for fuseStages (projectA2A runs the eight stages fused). */
export function mapTerminalStage<T extends { type: string }>(options: MapTerminalOptions): Stage<T, Exclude<T, Consumed> | AguiEvent | ProjectionFact> {
  return (out) => new TerminalMapper<T>(options, out);
}

/** One subscription's lifecycle: a class, since an idle run holds it (its methods on the prototype, not closures). */
class TerminalMapper<T extends { type: string }> implements StageHandlers<T> {
  readonly reads = READS;
  private usage: TokenUsage[] | undefined;
  private finished = false;
  private readonly scheduler: SchedulerLike;
  private readonly translate: Translate;

  constructor(
    private readonly options: MapTerminalOptions,
    private readonly out: StageOutput<Exclude<T, Consumed> | AguiEvent | ProjectionFact>,
  ) {
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.translate = options.translate ?? identity;
    if (options.runStarted ?? true) {
      out.next({
        type: EventType.RUN_STARTED,
        threadId: options.threadId,
        runId: options.runId,
        ...(options.parentRunId !== undefined && { parentRunId: options.parentRunId }),
        timestamp: this.now(),
      } as AguiEvent);
    }
  }

  next(item: T): void {
    try {
      this.read(item);
    } catch (thrown) {
      this.error(unprocessableFrame(thrown));
    }
  }

  error(error: unknown): void {
    if (error instanceof RunError) this.runError(error.code, error.message, this.now(), "error");
    else this.runError("A2A_UNAVAILABLE", ERROR_TEXT.A2A_UNAVAILABLE, this.now(), "error");
  }

  // A stream that ends before a state ended the turn (while WORKING, or stating nothing) did not finish it.
  complete(): void {
    this.runError("A2A_EXECUTION_FAILED", ERROR_TEXT.A2A_EXECUTION_FAILED, this.now(), "kernel");
  }

  private read(item: T): void {
    if (this.finished) return;
    const part = item as unknown as Consumed;
    switch (part.type) {
      case "A2A_USAGE_TOTALS":
        this.usage = part.usage;
        return;
      case "A2A_INTERRUPT_END":
        return this.finish(
          this.withUsage({
            type: EventType.RUN_FINISHED,
            threadId: this.options.threadId,
            runId: this.options.runId,
            outcome: { type: "interrupt", interrupts: part.interrupts },
            timestamp: part.time,
          }),
          fact("outcome", { outcome: "interrupt", endedBy: "kernel" }),
        );
      case "A2A_STATE":
        return this.fromState(part.state, part.time);
    }
    this.out.next(item as Exclude<T, Consumed>);
  }

  private now(): number {
    return Math.floor(this.scheduler.now());
  }

  private withUsage(event: Record<string, unknown>): AguiEvent {
    return (this.usage ? { ...event, usage: this.usage } : event) as AguiEvent;
  }

  private finish(terminal: AguiEvent, ended: ProjectionFact): void {
    if (this.finished) return;
    this.finished = true;
    this.out.next(ended);
    this.out.next(terminal);
    this.out.complete();
  }

  // AG-UI 1.0's RUN_ERROR has no thread or run id; @ag-ui/client strips them with a warning.
  private runError(code: RunErrorCode | string, english: string, timestamp: number, endedBy: "kernel" | "error"): void {
    this.finish(
      runErrorEvent(new RunError(code as RunErrorCode, english), {
        timestamp,
        translate: this.translate,
        ...(this.options.language !== undefined && { language: this.options.language }),
        ...(this.usage && { usage: this.usage }),
      }),
      fact("outcome", { outcome: "failed", code, endedBy }),
    );
  }

  private fromState(state: string, timestamp: number): void {
    if (state === "completed" || state === "input-required") this.success(timestamp);
    else if (state === "canceled") this.runError("CANCELLED", ERROR_TEXT.CANCELLED, timestamp, "kernel");
    else if (FAILED_STATES.has(state)) this.runError("A2A_EXECUTION_FAILED", ERROR_TEXT.A2A_EXECUTION_FAILED, timestamp, "kernel");
  }

  private success(timestamp: number): void {
    this.finish(
      this.withUsage({ type: EventType.RUN_FINISHED, threadId: this.options.threadId, runId: this.options.runId, outcome: { type: "success" }, timestamp }),
      fact("outcome", { outcome: "success", endedBy: "kernel" }),
    );
  }
}
