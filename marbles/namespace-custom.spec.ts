// IAC_CODE_SIGNAL items in, CUSTOM `iac-code.<ns>.v1` out; pipeline envelopes only for the documented event types.
import { from, lastValueFrom, toArray } from "rxjs";
import { describe, expect, it } from "vitest";
import { namespaceCustom, PIPELINE_CUSTOM_EVENT_TYPES } from "../operators/namespace-custom.js";
import type { IacCodeSignal } from "../operators/types.js";

const signal = (namespace: IacCodeSignal["namespace"], value: Record<string, unknown>): IacCodeSignal => ({
  type: "IAC_CODE_SIGNAL",
  namespace,
  value,
  timestamp: 5,
});

describe("namespaceCustom", () => {
  it("names each namespace and passes other events untouched", async () => {
    const other = { type: "TEXT_MESSAGE_END", messageId: "m" };
    const out = await lastValueFrom(
      from([signal("session", { a: 1 }), other, signal("artifact", { b: 2 }), signal("tool-progress", { c: 3 })]).pipe(namespaceCustom(), toArray()),
    );
    expect(out).toEqual([
      { type: "CUSTOM", name: "iac-code.session.v1", value: { a: 1 }, timestamp: 5 },
      other,
      { type: "CUSTOM", name: "iac-code.artifact.v1", value: { b: 2 }, timestamp: 5 },
      { type: "CUSTOM", name: "iac-code.tool-progress.v1", value: { c: 3 }, timestamp: 5 },
    ]);
  });

  it("keeps exactly the 34 documented pipeline event types, with the whole envelope as value", async () => {
    expect(PIPELINE_CUSTOM_EVENT_TYPES.size).toBe(34);
    const types = ["pipeline_started", "text_delta", "thinking_delta", "tool_started", "tool_result", "usage", "step_started",
      "step_completed", "step_failed", "candidate_step_failed", "message_started", "permission_requested", "backup_committed", "stack_progress"];
    const out = await lastValueFrom(from(types.map((eventType) => signal("pipeline", { eventType, eventId: eventType }))).pipe(namespaceCustom(), toArray()));
    expect(out.map((e) => (e as { value: { eventType: string } }).value.eventType)).toEqual(["pipeline_started", "step_failed", "candidate_step_failed", "stack_progress"]);
    expect(out[0]).toEqual({ type: "CUSTOM", name: "iac-code.pipeline.v1", value: { eventType: "pipeline_started", eventId: "pipeline_started" }, timestamp: 5 });
  });
});
