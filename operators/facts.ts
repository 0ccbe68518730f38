// What the projection learns about the execution while it reads the stream, carried downstream as items
// rather than reported through callbacks: whoever keeps state (the run service) folds them in its commit
// stage, in stream order; createAguiPipeline drops them before the wire. Each fact comes right before the
// event that depends on it (a task id before the session event that shows it, interrupts before their
// RUN_FINISHED), so a fold at commit time has it in place before that event is made durable.
import type { Interrupt } from "@ag-ui/core";
import type { RequiredInput } from "./lib/interrupts.js";

/** An interrupt about to be announced, with the required input it answers (what the state keeps). */
export interface PendingInterrupt {
  input: RequiredInput;
  interrupt: Interrupt;
}

export type ProjectionFact =
  /** The A2A task id, the first time a frame names it (never when it was given as `taskId`). */
  | { type: "IAC_CODE_FACT"; fact: "taskId"; taskId: string }
  /** The iac-code session id, the first time a frame names it. */
  | { type: "IAC_CODE_FACT"; fact: "sessionId"; sessionId: string }
  /** The highest pipeline sequence seen so far (the cursor a later run resumes after). */
  | { type: "IAC_CODE_FACT"; fact: "pipelineCursor"; sequence: number }
  /** The durable open pipeline steps after a change (step keys, sorted). */
  | { type: "IAC_CODE_FACT"; fact: "openSteps"; openSteps: string[] }
  /** The interrupts of the RUN_FINISHED that follows, each with its required input. */
  | { type: "IAC_CODE_FACT"; fact: "interrupts"; pending: PendingInterrupt[] }
  /**
   * How the run ends, right before its terminal event: `kernel` when the A2A stream said so (a final state,
   * an interrupt, the stream's end), `error` when an error ended it (the stream failed or a frame was refused).
   */
  | { type: "IAC_CODE_FACT"; fact: "outcome"; outcome: "success" | "interrupt" | "failed"; code?: string; endedBy: "kernel" | "error" };

export type ProjectionFactName = ProjectionFact["fact"];

/** True for a ProjectionFact: `items$.pipe(filter((i) => !isProjectionFact(i)))` leaves the AG-UI events. */
export function isProjectionFact(item: { type: string }): item is ProjectionFact {
  return item.type === "IAC_CODE_FACT";
}

/** Builds a fact item: `fact("taskId", { taskId })`. */
export function fact<N extends ProjectionFactName>(
  name: N,
  body: Omit<Extract<ProjectionFact, { fact: N }>, "type" | "fact">,
): Extract<ProjectionFact, { fact: N }> {
  return { type: "IAC_CODE_FACT", fact: name, ...body } as Extract<ProjectionFact, { fact: N }>;
}
