// Public API: each operator on its own, and createAguiPipeline composing them into one AG-UI run.
import { EventType } from "@ag-ui/core";
import { filter, type Observable, type ObservableInput, type OperatorFunction } from "rxjs";
import { balanceSpans } from "./balance-spans.js";
import { commitBeforeEmit } from "./commit-before-emit.js";
import { dedupePipelineStage } from "./dedupe-pipeline.js";
import { finishCancelled } from "./finish-cancelled.js";
import { mergeHeartbeat } from "./merge-heartbeat.js";
import { namespaceCustomStage } from "./namespace-custom.js";
import { isProjectionFact, type ProjectionFact } from "./facts.js";
import { projectionStages, type ProjectA2AOptions } from "./project-a2a.js";
import { unprocessableFrame } from "./lib/a2a-read.js";
import { passThrown } from "./lib/operate.js";
import { fuseStages, type Stage, type Wrap } from "./lib/stage.js";
import { runErrorEvent } from "./lib/run-error-event.js";
import { OPERATOR_TEXTS } from "./messages.js";
import { stripResumedTextStage } from "./strip-resumed-text.js";
import { RunError, type A2AStreamResponse, type AguiEvent, type AguiOutput, type TextSegmentDigest } from "./types.js";

export { balanceSpans, type BalanceSpansOptions } from "./balance-spans.js";
export { commitBeforeEmit, type CommitBeforeEmitOptions } from "./commit-before-emit.js";
export { dedupePipeline, type DedupePipelineOptions } from "./dedupe-pipeline.js";
export { finishCancelled, type FinishCancelledOptions } from "./finish-cancelled.js";
export { mergeHeartbeat, type MergeHeartbeatOptions } from "./merge-heartbeat.js";
export { namespaceCustom, PIPELINE_CUSTOM_EVENT_TYPES } from "./namespace-custom.js";
export { stripResumedText, type StripResumedTextOptions } from "./strip-resumed-text.js";
export {
  projectA2A,
  stepKeyOf,
  stepName,
  type ProjectA2AOptions,
  type ProjectedItem,
  type SessionInfo,
} from "./project-a2a.js";
// The projection's stages, for composing a projection of your own (projectA2A composes all eight, in this order).
export { readFrames, type ReadFramesOptions } from "./projection/read-frames.js";
export { guardIdentity, type GuardIdentityOptions } from "./projection/guard-identity.js";
export { projectPipeline, type ProjectPipelineOptions } from "./projection/project-pipeline.js";
export { projectSpans, type ProjectSpansOptions } from "./projection/project-spans.js";
export { totalUsage } from "./projection/total-usage.js";
export { mapInterrupts, type MapInterruptsOptions } from "./projection/map-interrupts.js";
export { mapTerminal, type MapTerminalOptions } from "./projection/map-terminal.js";
export { announceSession, type AnnounceSessionOptions } from "./projection/announce-session.js";
export type * from "./projection/parts.js";
export { fact, isProjectionFact, type PendingInterrupt, type ProjectionFact, type ProjectionFactName } from "./facts.js";
export { buildInterrupt, requiredInputs, responseSchemaFor, standardOptions, PERSISTED_INPUT_KEYS } from "./lib/interrupts.js";
export type { InputValue, RequiredInput, Translate } from "./lib/interrupts.js";
export { canonicalJson } from "./lib/json.js";
export * from "./types.js";

export interface AguiPipelineOptions extends ProjectA2AOptions {
  /** Pipeline sequence delivered by earlier runs of this execution (the persisted cursor). */
  pipelineSequence?: number;
  /** Heartbeat markers while idle: on by default, every 15 s. */
  heartbeat?: boolean | { intervalMs: number };
  /** Digests of text segments earlier runs of this execution showed: a replay of them is not shown again. */
  textSnapshotDigests?: Iterable<string>;
  /**
   * Durability hook: return an ObservableInput that completes when what `event` reveals is persisted
   * (or nothing when it needs no write). A failure ends the run with RUN_ERROR (a RunError's code,
   * otherwise STATE_PERSISTENCE_FAILED) and nothing more is emitted. It also sees each TextSegmentDigest
   * (keep it with the execution; the interrupt's RUN_FINISHED comes after) and each ProjectionFact (what the
   * stream revealed: fold it into the state; the event that depends on it comes after); neither is emitted.
   */
  commit?: (item: AguiEvent | TextSegmentDigest | ProjectionFact) => ObservableInput<unknown> | undefined | void;
  /** AG-UI 1.0 consumers: a cancelled run ends RUN_FINISHED `outcome: {type: "cancelled"}` instead of RUN_ERROR CANCELLED. */
  cancelledOutcome?: boolean;
}

/** Not a text-segment digest or a projection fact: an event for the client. */
function isWireItem(item: AguiEvent | TextSegmentDigest | ProjectionFact): item is AguiEvent {
  return item.type !== "IAC_CODE_TEXT_SEGMENT" && !isProjectionFact(item);
}

// Which error a throw in each fused stage becomes: in dedupePipeline's and the projection's, a protocol error;
// in the two after them, what was thrown. One array per length, shared by every stream.
const FUSED_WRAPS = new Map<number, readonly Wrap[]>();
function fusedWraps(projectionLength: number): readonly Wrap[] {
  let wraps = FUSED_WRAPS.get(projectionLength);
  if (!wraps) FUSED_WRAPS.set(projectionLength, (wraps = [...new Array<Wrap>(1 + projectionLength).fill(unprocessableFrame), passThrown, passThrown]));
  return wraps;
}

/**
 * The whole projection: A2A 1.0 stream results in, one complete AG-UI run out (RUN_STARTED … exactly one
 * RUN_FINISHED or RUN_ERROR, every span closed), plus heartbeat markers when enabled. No I/O behind it.
 * Data flows one way: dedupePipeline → projectA2A (readFrames → guardIdentity → mapInterrupts →
 * projectPipeline → totalUsage → projectSpans → mapTerminal → announceSession) → stripResumedText →
 * namespaceCustom → commitBeforeEmit (where `commit` folds facts and digests) → internal items dropped →
 * balanceSpans → finishCancelled → mergeHeartbeat.
 *
 * @example
 * a2aFrames$.pipe(createAguiPipeline({ threadId: "t", runId: "r", heartbeat: false }))
 * // {statusUpdate: {status: {state: "TASK_STATE_WORKING", message: {parts: [{text: "Hello"}]}}}}
 * // {statusUpdate: {status: {state: "TASK_STATE_COMPLETED"}}}
 * // → RUN_STARTED, TEXT_MESSAGE_START, TEXT_MESSAGE_CONTENT "Hello", TEXT_MESSAGE_END, RUN_FINISHED success
 */
export function createAguiPipeline(options: AguiPipelineOptions): OperatorFunction<A2AStreamResponse, AguiOutput> {
  const translate = options.translate ?? ((english: string) => english);
  return (frames) => {
    // dedupePipeline → projectA2A → stripResumedText → namespaceCustom, fused into one operator (each with the
    // errors it would have on its own): one subscription per stream instead of four, one call per stage per item.
    const projection = projectionStages(options);
    const events = frames.pipe(
      fuseStages<A2AStreamResponse, AguiEvent | TextSegmentDigest | ProjectionFact>(
        [
          dedupePipelineStage(options.pipelineSequence !== undefined ? { afterSequence: options.pipelineSequence } : {}),
          ...projection,
          stripResumedTextStage(options.textSnapshotDigests !== undefined ? { knownDigests: options.textSnapshotDigests } : {}),
          namespaceCustomStage(),
        ] as Stage<unknown, unknown>[],
        fusedWraps(projection.length),
      ),
    );
    // Internal items end before balanceSpans: nothing after it, and nothing on the wire, sees them.
    const commit = options.commit;
    let wire: Observable<AguiEvent>;
    if (commit) {
      wire = events.pipe(
        commitBeforeEmit<AguiEvent | TextSegmentDigest | ProjectionFact, AguiEvent>({
          commit,
          keep: isWireItem,
          onFailure: (error) =>
            runErrorEvent(error, {
              timestamp: Math.floor(options.scheduler?.now() ?? Date.now()),
              fallback: { code: "STATE_PERSISTENCE_FAILED", english: OPERATOR_TEXTS["state.mappingCommitFailed"] },
              translate,
              ...(options.language !== undefined && { language: options.language }),
            }),
        }),
      ) as Observable<AguiEvent>;
    } else {
      wire = events.pipe(filter(isWireItem));
    }
    let balanced = wire.pipe(balanceSpans<AguiEvent>({ translate, ...(options.language !== undefined && { language: options.language }) }));
    if (options.cancelledOutcome) balanced = balanced.pipe(finishCancelled<AguiEvent>({ threadId: options.threadId, runId: options.runId }));
    const heartbeat = options.heartbeat ?? true;
    if (heartbeat === false) return balanced;
    return balanced.pipe(
      mergeHeartbeat<AguiEvent>({
        intervalMs: heartbeat === true ? 15_000 : heartbeat.intervalMs,
        ...(options.scheduler ? { scheduler: options.scheduler } : {}),
      }),
    );
  };
}
