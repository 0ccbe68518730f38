// IAC_CODE_SIGNAL → CUSTOM `iac-code.<namespace>.v1`. Pipeline envelopes pass only for the event types
// the product documents (seeds §iac-code.pipeline.v1); everything with a standard AG-UI mapping
// (text_delta, thinking_delta, tool_*, usage, step lifecycle) is already projected and is not repeated.
import { EventType } from "@ag-ui/core";
import type { OperatorFunction } from "rxjs";
import { stageOperator, type Stage } from "./lib/stage.js";
import type { AguiEvent, IacCodeSignal } from "./types.js";

export const PIPELINE_CUSTOM_EVENT_TYPES: ReadonlySet<string> = new Set([
  "pipeline_started", "pipeline_resumed", "pipeline_completed", "pipeline_error", "pipeline_warning", "backup_blocked",
  "candidate_started", "candidate_completed", "candidate_failed", "candidate_interrupted", "candidate_restart_requested",
  "candidate_selected", "candidate_detail_shown", "candidate_step_failed",
  "sub_pipeline_started", "sub_pipeline_completed", "sub_step_failed", "step_failed",
  "stack_progress", "stack_instances_progress", "stack_current_changed",
  "cleanup_started", "cleanup_progress", "cleanup_completed", "cleanup_failed",
  "rollback_triggered", "rollback_completed",
  "context_compaction_started", "context_compacted", "context_compaction_failed", "fields_marked_stale",
  "diagram_shown", "mcp_status", "tool_progress",
]);

/**
 * Turns each IAC_CODE_SIGNAL into `CUSTOM iac-code.<namespace>.v1` (pipeline envelopes only of the
 * documented types); passes everything else on.
 *
 * @example
 * items$.pipe(namespaceCustom())
 * // {type: "IAC_CODE_SIGNAL", namespace: "artifact", value: {artifactId: "a1"}, timestamp: 5}
 * // → {type: "CUSTOM", name: "iac-code.artifact.v1", value: {artifactId: "a1"}, timestamp: 5}
 */
export function namespaceCustom<T extends { type: string }>(): OperatorFunction<T | IacCodeSignal, Exclude<T, IacCodeSignal> | AguiEvent> {
  return stageOperator(namespaceCustomStage<T>());
}

const READS: ReadonlySet<string> = new Set(["IAC_CODE_SIGNAL"]);

/** namespaceCustom as a Stage, for fuseStages (createAguiPipeline runs it fused with the projection). */
export function namespaceCustomStage<T extends { type: string }>(): Stage<T | IacCodeSignal, Exclude<T, IacCodeSignal> | AguiEvent> {
  return (out) => ({
    next: (item) => {
      if (item.type !== "IAC_CODE_SIGNAL") return out.next(item as Exclude<T, IacCodeSignal>);
      const signal = item as IacCodeSignal;
      if (signal.namespace === "pipeline" && !PIPELINE_CUSTOM_EVENT_TYPES.has(signal.value.eventType as string)) return;
      out.next({
        type: EventType.CUSTOM,
        name: `iac-code.${signal.namespace}.v1`,
        value: signal.value,
        timestamp: signal.timestamp,
      } as AguiEvent);
    },
    reads: READS,
  });
}
