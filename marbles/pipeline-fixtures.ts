// Pipeline envelopes shaped like `iac-code a2a` in pipeline mode (a2a-upstream.md §8c): steps, two
// parallel candidates of one sub-pipeline that share their `id`, a selection interrupt.
import type { JsonObject } from "../operators/types.js";

export const ST = (id: string, index: number): JsonObject => ({ id, runId: `step-${id}-1`, attempt: 1.0, index, total: 5.0 });
export const CA = (k: number): JsonObject => ({ id: "evaluate", runId: `candidate-evaluate-${k}-1`, index: k, attempt: 1.0 });
export const CS = (k: number): JsonObject => ({ id: "template_generating", runId: `candidate-evaluate-${k}-1-template_generating-1`, attempt: 1.0 });

let sequence = 0;
export function envelope(eventType: string, fields: JsonObject = {}, eventId?: string | null): JsonObject {
  sequence += 1;
  const e: JsonObject = {
    schemaVersion: "1.0",
    sequence,
    eventType,
    scope: "step",
    status: "working",
    pipelineRunId: "ctx-p1",
    taskId: "task-a1",
    contextId: "ctx-a1",
    iacCodeSessionId: "sess-a1",
    data: {},
    ...fields,
  };
  if (eventId !== null) e.eventId = eventId ?? `evt-${sequence}`;
  return e;
}

export function resetSequence(to = 0): void {
  sequence = to;
}
