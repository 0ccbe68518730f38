// A stage of projectA2A: the interrupt outcome (reference-adapter §6). The first frame that requires an
// input not answered yet in this execution ends the run: its interrupts (a repeated sighting keeps the
// object it was announced with) leave as the `interrupts` fact, each with its required input, then as the
// part mapTerminal turns into RUN_FINISHED `outcome: interrupt`. An input of another task or context is a
// protocol error.
import type { Interrupt } from "@ag-ui/core";
import type { OperatorFunction } from "rxjs";
import { fact, type ProjectionFact } from "../facts.js";
import { unprocessableFrame } from "../lib/a2a-read.js";
import { buildInterrupt, type Translate } from "../lib/interrupts.js";
import { stageOperator, type Stage } from "../lib/stage.js";
import { RunError } from "../types.js";
import type { InterruptEndPart, RequiredInputsPart } from "./parts.js";
import { OPERATOR_TEXTS } from "../messages.js";

export interface MapInterruptsOptions {
  contextId?: string;
  /** The task being resumed, if any (later ones are learned from the taskId fact). */
  taskId?: string;
  /** Inputs already answered in this execution: seeing them again is not a new interrupt. */
  appliedInputIds?: Iterable<string>;
  /** Interrupts already announced, by id: a repeated sighting keeps its object (ids, schema, expiresAt). */
  knownInterrupts?: ReadonlyMap<string, Interrupt>;
  /** 0 or absent: interrupts never expire. */
  interruptTtlMs?: number;
  /** Localizes an interrupt's fallback texts (language = the input's). */
  translate?: Translate;
}

const READS: ReadonlySet<string> = new Set(["A2A_REQUIRED_INPUTS", "IAC_CODE_FACT"]);

const identity: Translate = (english) => english;

/**
 * Consumes `A2A_REQUIRED_INPUTS` parts; passes everything else on.
 *
 * @example
 * parts$.pipe(mapInterrupts({ appliedInputIds: ["permission-0"] }))
 * // A2A_REQUIRED_INPUTS [permission-0]             → nothing (already answered)
 * // A2A_REQUIRED_INPUTS [permission-1]             → fact interrupts [{input, interrupt}], A2A_INTERRUPT_END [interrupt]
 */
export function mapInterrupts<T extends { type: string }>(
  options: MapInterruptsOptions = {},
): OperatorFunction<T, Exclude<T, RequiredInputsPart> | InterruptEndPart | ProjectionFact> {
  return stageOperator(mapInterruptsStage<T>(options), unprocessableFrame);
}

/** mapInterrupts as a Stage, for fuseStages (projectA2A runs the eight stages fused). */
export function mapInterruptsStage<T extends { type: string }>(
  options: MapInterruptsOptions = {},
): Stage<T, Exclude<T, RequiredInputsPart> | InterruptEndPart | ProjectionFact> {
  const translate = options.translate ?? identity;
  return (out) => {
    // Made only for a non-empty seed: an idle stream holds none (each empty Set is ~150 B).
    let applied: Set<string> | undefined;
    for (const id of options.appliedInputIds ?? []) (applied ??= new Set()).add(id);
    const isApplied = (id: string) => applied?.has(id) ?? false;
    let taskId = options.taskId;
    const interrupt = ({ inputs, time }: RequiredInputsPart) => {
      const open = inputs.filter((input) => !isApplied(input.value.inputId));
      if (open.length === 0) return;
      for (const input of open) {
        const requestTask = input.value.requestTaskId;
        if (typeof requestTask === "string" && taskId !== undefined && requestTask !== taskId) {
          throw new RunError("A2A_PROTOCOL_ERROR", OPERATOR_TEXTS["a2a.interruptOtherTask"]);
        }
        const context = input.value.contextId;
        if (typeof context === "string" && options.contextId !== undefined && context !== options.contextId) {
          throw new RunError("A2A_PROTOCOL_ERROR", OPERATOR_TEXTS["a2a.interruptOtherContext"]);
        }
      }
      const ttl = options.interruptTtlMs ?? 0;
      const expiresAt = ttl > 0 ? new Date(time + ttl).toISOString() : undefined;
      const pending = open.map((input) => ({
        input,
        interrupt: options.knownInterrupts?.get(input.value.inputId) ?? buildInterrupt(input.value, translate, expiresAt),
      }));
      out.next(fact("interrupts", { pending }));
      out.next({ type: "A2A_INTERRUPT_END", time, interrupts: pending.map((p) => p.interrupt) });
    };
    const next = (item: T) => {
      if (item.type === "A2A_REQUIRED_INPUTS") return interrupt(item as unknown as RequiredInputsPart);
      if (item.type === "IAC_CODE_FACT" && (item as unknown as ProjectionFact).fact === "taskId") {
        taskId = (item as unknown as { taskId: string }).taskId;
      }
      out.next(item as Exclude<T, RequiredInputsPart>);
    };
    return { next, reads: READS };
  };
}
