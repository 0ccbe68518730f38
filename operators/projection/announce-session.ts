// A stage of projectA2A: the session announcement. `iac-code.session.v1` tells the client which execution,
// task and iac-code session its run is: once, when the ids are known ("ids", a new turn) or on the first
// frame ("first-frame", a resume: its first frame means the kernel accepted the answer), and at the latest
// right before a terminal event the kernel caused. A run ended by an error announces nothing it did not
// already announce. It learns the ids from the taskId/sessionId facts in the stream.
import { EventType } from "@ag-ui/core";
import type { OperatorFunction } from "rxjs";
import type { ProjectionFact } from "../facts.js";
import { stageOperator, type Stage, type StageHandlers, type StageOutput } from "../lib/stage.js";
import type { IacCodeSignal } from "../types.js";
import type { FramePart } from "./parts.js";

const READS: ReadonlySet<string> = new Set(["A2A_FRAME", "IAC_CODE_FACT", EventType.RUN_FINISHED, EventType.RUN_ERROR]);

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

export interface AnnounceSessionOptions {
  threadId: string;
  runId: string;
  contextId?: string;
  taskId?: string;
  /** Without it nothing is announced (A2A_FRAME parts are still consumed). */
  session?: SessionInfo;
}

/**
 * Consumes `A2A_FRAME` parts; emits one session signal; passes everything else on.
 *
 * @example
 * parts$.pipe(announceSession({ threadId: "t", runId: "r", session: { executionId: "e", rosInvocationId: "i" } }))
 * // fact taskId, fact sessionId, A2A_FRAME → the facts, then IAC_CODE_SIGNAL {namespace: "session", value: {…, taskId, sessionId}}
 */
export function announceSession<T extends { type: string }>(options: AnnounceSessionOptions): OperatorFunction<T, Exclude<T, FramePart> | IacCodeSignal> {
  return stageOperator(announceSessionStage<T>(options));
}

/** announceSession as a Stage, for fuseStages (projectA2A runs the eight stages fused). */
export function announceSessionStage<T extends { type: string }>(options: AnnounceSessionOptions): Stage<T, Exclude<T, FramePart> | IacCodeSignal> {
  return (out) => new SessionAnnouncer<T>(options, out);
}

/** One subscription's announcement: a class, since an idle run holds it (its methods on the prototype, not closures). */
class SessionAnnouncer<T extends { type: string }> implements StageHandlers<T> {
  readonly reads = READS;
  private taskId: string | undefined;
  private sessionId: string | undefined;
  private announced: boolean;
  private announceAtEnd = false;

  constructor(
    private readonly options: AnnounceSessionOptions,
    private readonly out: StageOutput<Exclude<T, FramePart> | IacCodeSignal>,
  ) {
    this.taskId = options.taskId;
    this.sessionId = options.session?.sessionId;
    this.announced = options.session === undefined;
  }

  next(item: T): void {
    switch (item.type) {
      case "A2A_FRAME":
        if (this.options.session?.emitOn === "first-frame" || (this.taskId !== undefined && this.sessionId !== undefined)) {
          this.announce((item as unknown as FramePart).time);
        }
        return;
      case "IAC_CODE_FACT": {
        const known = item as unknown as ProjectionFact;
        if (known.fact === "taskId") this.taskId = known.taskId;
        else if (known.fact === "sessionId") this.sessionId = known.sessionId;
        else if (known.fact === "outcome") this.announceAtEnd = known.endedBy === "kernel";
        break;
      }
      case EventType.RUN_FINISHED:
      case EventType.RUN_ERROR:
        if (this.announceAtEnd) this.announce((item as unknown as { timestamp: number }).timestamp);
        break;
    }
    this.out.next(item as Exclude<T, FramePart>);
  }

  private announce(timestamp: number): void {
    const { session, threadId, runId, contextId } = this.options;
    if (this.announced || !session) return;
    this.announced = true;
    this.out.next({
      type: "IAC_CODE_SIGNAL",
      namespace: "session",
      value: {
        schemaVersion: 1,
        threadId,
        aguiRunId: runId,
        executionId: session.executionId,
        contextId: contextId ?? null,
        taskId: this.taskId ?? null,
        rosInvocationId: session.rosInvocationId,
        sessionId: this.sessionId ?? null,
      },
      timestamp,
    });
  }
}
