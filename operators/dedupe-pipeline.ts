// Drops pipeline envelopes the stream already delivered (a batch replayed after a reconnect, recovery
// events that overlap the live stream). Keyed on `eventId` first; `sequence` decides only for envelopes
// without an id. Sequences have gaps (coalesced deltas) and terminal acks arrive out of order, so an
// envelope with a new id is kept even below the highest sequence seen — the reference drops it and loses
// the late handoff frame.
import type { OperatorFunction } from "rxjs";
import { iacCodeOf as iacCodeOfResult, onlySessionId, payloadKeyOf, unprocessableFrame } from "./lib/a2a-read.js";
import { isObject, toCount } from "./lib/json.js";
import { stageOperator, type Stage, type StageHandlers, type StageOutput } from "./lib/stage.js";
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
  return (out) => new EnvelopeDeduper(out, options.afterSequence ?? 0);
}

/**
 * One subscription's memory of envelopes. A class rather than closures over its state: a run holds it for as long as
 * it streams, and its methods live on the prototype.
 */
class EnvelopeDeduper implements StageHandlers<A2AStreamResponse> {
  // Made on first use: a stream without pipeline envelopes holds none.
  private seen: Set<string> | undefined;

  constructor(
    private readonly out: StageOutput<A2AStreamResponse>,
    private last: number,
  ) {}

  next(frame: A2AStreamResponse): void {
    const iac = iacCodeOf(frame);
    if (!iac || onlySessionId(iac) || (iac.pipeline === undefined && iac.pipelineBatch === undefined)) return this.out.next(frame);
    let changed: JsonObject | undefined;
    if (iac.pipeline !== undefined && !this.isFresh(iac.pipeline)) {
      changed = { ...iac };
      delete changed.pipeline;
    }
    const batch = iac.pipelineBatch;
    if (isObject(batch) && Array.isArray(batch.events)) {
      const kept: unknown[] = [];
      for (const envelope of batch.events) if (this.isFresh(envelope)) kept.push(envelope);
      if (kept.length !== batch.events.length) {
        changed ??= { ...iac };
        changed.pipelineBatch = { ...batch, events: kept };
      }
    }
    this.out.next(changed ? withIacCode(frame, changed) : frame);
  }

  private isFresh(envelope: unknown): boolean {
    if (!isObject(envelope)) return true;
    const id = envelope.eventId;
    const sequence = toCount(envelope.sequence);
    if (typeof id === "string" && id !== "") {
      if (this.seen?.has(id)) return false;
      (this.seen ??= new Set()).add(id);
    } else if (sequence !== undefined && sequence > 0 && sequence <= this.last) {
      return false;
    }
    if (sequence !== undefined && sequence > this.last) this.last = sequence;
    return true;
  }
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
