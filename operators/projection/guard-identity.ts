// A stage of projectA2A: the identity guard. A run belongs to one A2A task, one context and one iac-code
// session; a frame naming another ends the run with A2A_PROTOCOL_ERROR before anything of it is shown.
// The first task and session ids a frame names are facts (taskId, sessionId), emitted before the frame.
import type { OperatorFunction } from "rxjs";
import { fact, type ProjectionFact } from "../facts.js";
import { unprocessableFrame } from "../lib/a2a-read.js";
import { stageOperator, type Stage, type StageHandlers, type StageOutput } from "../lib/stage.js";
import { RunError } from "../types.js";
import { OPERATOR_TEXTS } from "../messages.js";

const READS: ReadonlySet<string> = new Set(["A2A_FRAME"]);

export interface GuardIdentityOptions {
  /** The thread's A2A context; a frame naming another context ends the run. */
  contextId?: string;
  /** The task being resumed, if any; a frame naming another task ends the run. */
  taskId?: string;
  /** The session already known for the thread, if any. */
  sessionId?: string;
}

/**
 * Checks the ids of every `A2A_FRAME` part; passes everything on, preceded by a fact for each id seen first.
 *
 * @example
 * parts$.pipe(guardIdentity({ contextId: "ctx-1" }))
 * // A2A_FRAME {taskId: "t1"} → fact taskId "t1", A2A_FRAME; a later A2A_FRAME {taskId: "t2"} → error RunError A2A_PROTOCOL_ERROR
 */
export function guardIdentity<T extends { type: string }>(options: GuardIdentityOptions = {}): OperatorFunction<T, T | ProjectionFact> {
  return stageOperator(guardIdentityStage<T>(options), unprocessableFrame);
}

/** guardIdentity as a Stage, for fuseStages (projectA2A runs the eight stages fused). */
export function guardIdentityStage<T extends { type: string }>(options: GuardIdentityOptions = {}): Stage<T, T | ProjectionFact> {
  return (out) => new IdentityGuard<T>(out, options.taskId, options.sessionId, options.contextId);
}

/** One subscription's ids. A class rather than closures over its state: a run holds it for as long as it streams. */
class IdentityGuard<T extends { type: string }> implements StageHandlers<T> {
  readonly reads = READS;

  constructor(
    private readonly out: StageOutput<T | ProjectionFact>,
    private taskId: string | undefined,
    private sessionId: string | undefined,
    private readonly contextId: string | undefined,
  ) {}

  next(item: T): void {
    if (item.type !== "A2A_FRAME") return this.out.next(item);
    const frame = item as unknown as { taskId?: string; contextId?: string; sessionId?: string };
    if (frame.taskId !== undefined) {
      if (this.taskId === undefined) {
        this.taskId = frame.taskId;
        this.out.next(fact("taskId", { taskId: frame.taskId }));
      } else if (frame.taskId !== this.taskId) {
        throw new RunError("A2A_PROTOCOL_ERROR", OPERATOR_TEXTS["a2a.taskChanged"]);
      }
    }
    if (this.contextId !== undefined && frame.contextId !== undefined && frame.contextId !== this.contextId) {
      throw new RunError("A2A_PROTOCOL_ERROR", OPERATOR_TEXTS["a2a.contextChanged"]);
    }
    if (frame.sessionId !== undefined) {
      if (this.sessionId === undefined) {
        this.sessionId = frame.sessionId;
        this.out.next(fact("sessionId", { sessionId: frame.sessionId }));
      } else if (frame.sessionId !== this.sessionId) {
        throw new RunError("A2A_PROTOCOL_ERROR", OPERATOR_TEXTS["a2a.sessionChanged"]);
      }
    }
    this.out.next(item);
  }
}
