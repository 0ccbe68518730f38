// Drops pipeline envelopes the stream already delivered (a batch replayed after a reconnect, recovery
// events that overlap the live stream). Keyed on `eventId` first; `sequence` decides only for envelopes
// without an id. Sequences have gaps (coalesced deltas) and terminal acks arrive out of order, so an
// envelope with a new id is kept even below the highest sequence seen — the reference drops it and loses
// the late handoff frame.
import type { OperatorFunction } from "rxjs";
import { iacCodeOf as iacCodeOfResult, onlySessionId, payloadKeyOf, unprocessableFrame } from "./lib/a2a-read.js";
import { isObject, toCount } from "./lib/json.js";
import { stageOperator, type Stage } from "./lib/stage.js";
import type { A2AStreamResponse, JsonObject } from "./types.js";

export interface DedupePipelineOptions {
  /** Sequence already delivered by earlier runs (the persisted cursor); only id-less envelopes use it. */
  afterSequence?: number;
}

/**
 * Removes already-delivered envelopes from `iac_code.pipeline` and `iac_code.pipelineBatch.events`; frames
 * pass on (a frame whose only envelope was a duplicate still carries its state and text).
 *
 * @example
 * frames$.pipe(dedupePipeline({ afterSequence: 12 }))
 * // {pipeline: {eventId: "e1", sequence: 13}}, {pipeline: {eventId: "e1", sequence: 13}} → the second loses its envelope
 * // {pipeline: {sequence: 9}} (no id, at or below the cursor) → loses its envelope
 */
export function dedupePipeline(options: DedupePipelineOptions = {}): OperatorFunction<A2AStreamResponse, A2AStreamResponse> {
  return stageOperator(dedupePipelineStage(options), unprocessableFrame);
}

/** dedupePipeline as a Stage, for fuseStages (createAguiPipeline runs it fused with the projection). */
export function dedupePipelineStage(options: DedupePipelineOptions = {}): Stage<A2AStreamResponse, A2AStreamResponse> {
  return (out) => {
    // Made on first use: a stream without pipeline envelopes holds none.
    let seen: Set<string> | undefined;
    let last = options.afterSequence ?? 0;

    const fresh = (envelope: unknown): boolean => {
      if (!isObject(envelope)) return true;
      const id = envelope.eventId;
      const sequence = toCount(envelope.sequence);
      if (typeof id === "string" && id !== "") {
        if (seen?.has(id)) return false;
        (seen ??= new Set()).add(id);
      } else if (sequence !== undefined && sequence > 0 && sequence <= last) {
        return false;
      }
      if (sequence !== undefined && sequence > last) last = sequence;
      return true;
    };

    return {
      next: (frame) => {
        const iac = iacCodeOf(frame);
        if (!iac || onlySessionId(iac) || (iac.pipeline === undefined && iac.pipelineBatch === undefined)) return out.next(frame);
        let changed: JsonObject | undefined;
        if (iac.pipeline !== undefined && !fresh(iac.pipeline)) {
          changed = { ...iac };
          delete changed.pipeline;
        }
        const batch = iac.pipelineBatch;
        if (isObject(batch) && Array.isArray(batch.events)) {
          const kept = batch.events.filter(fresh);
          if (kept.length !== batch.events.length) {
            changed ??= { ...iac };
            changed.pipelineBatch = { ...batch, events: kept };
          }
        }
        out.next(changed ? withIacCode(frame, changed) : frame);
      },
    };
  };
}

function iacCodeOf(frame: A2AStreamResponse): JsonObject | undefined {
  const key = payloadKeyOf(frame);
  const payload = key === undefined ? undefined : (frame as Record<string, unknown>)[key];
  return isObject(payload) ? iacCodeOfResult(payload as { metadata?: JsonObject }) : undefined;
}

/** A copy of the frame with another iac_code object; the original frame is never mutated. */
function withIacCode(frame: A2AStreamResponse, iac: JsonObject): A2AStreamResponse {
  // Only called on a frame whose iac_code was read, so it has a payload key.
  const key = payloadKeyOf(frame)!;
  const payload = (frame as Record<string, { metadata?: JsonObject }>)[key]!;
  return { [key]: { ...payload, metadata: { ...payload.metadata, iac_code: iac } } } as unknown as A2AStreamResponse;
}
