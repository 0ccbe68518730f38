// A stage of projectA2A: pipeline envelopes and steps (reference-adapter §5, pipeline mode). An envelope's
// text, thinking, tools and usage become parts for the span and usage stages, in pipeline message ids; its
// step lifecycle becomes STEP_STARTED/STEP_FINISHED; the envelope itself leaves as a `pipeline` signal
// (namespaceCustom keeps the documented types). Steps still open from the previous run are reopened on
// subscribe; the durable open set and the pipeline cursor leave as facts whenever they change. A recovery
// snapshot (the kernel's pipeline state, before a resume) becomes one ACTIVITY_SNAPSHOT.
import { EventType } from "@ag-ui/core";
import { asyncScheduler, type OperatorFunction, type SchedulerLike } from "rxjs";
import { fact, type ProjectionFact } from "../facts.js";
import { unprocessableFrame } from "../lib/a2a-read.js";
import { canonicalJson, isObject, toCount } from "../lib/json.js";
import { stageOperator, type Stage, type StageHandlers, type StageOutput } from "../lib/stage.js";
import type { AguiEvent, IacCodeSignal, JsonObject } from "../types.js";
import type { PipelineEnvelopePart, PipelineSnapshotPart, ProjectionPart } from "./parts.js";

export interface ProjectPipelineOptions {
  threadId: string;
  /** Durable pipeline steps still open from the previous run; reopened on subscribe. */
  openSteps?: Iterable<string>;
  scheduler?: SchedulerLike;
}

type Out<T> = Exclude<T, PipelineEnvelopePart | PipelineSnapshotPart> | ProjectionPart | AguiEvent | IacCodeSignal | ProjectionFact;

const READS: ReadonlySet<string> = new Set(["A2A_PIPELINE_ENVELOPE", "A2A_PIPELINE_SNAPSHOT"]);
const STEP_START_TYPES = new Set(["step_started", "candidate_step_started", "input_received"]);
const STEP_FINISH_TYPES = new Set(["step_completed", "step_failed", "candidate_step_completed", "candidate_step_failed"]);

/**
 * Consumes `A2A_PIPELINE_ENVELOPE` and `A2A_PIPELINE_SNAPSHOT` parts; passes everything else on.
 *
 * @example
 * parts$.pipe(projectPipeline({ threadId: "t", openSteps: ["step:deploying"] }))
 * // on subscribe: STEP_STARTED deploying; an envelope {eventType: "step_completed", step: {id: "deploying"}, sequence: 7}
 * // → fact pipelineCursor 7, STEP_FINISHED deploying, fact openSteps [], IAC_CODE_SIGNAL pipeline
 */
export function projectPipeline<T extends { type: string }>(options: ProjectPipelineOptions): OperatorFunction<T, Out<T>> {
  return stageOperator(projectPipelineStage<T>(options), unprocessableFrame);
}

/** projectPipeline as a Stage, for fuseStages (projectA2A runs the eight stages fused). */
export function projectPipelineStage<T extends { type: string }>(options: ProjectPipelineOptions): Stage<T, Out<T>> {
  const scheduler = options.scheduler ?? asyncScheduler;
  return (out) => new PipelineProjector<T>(options, scheduler, out);
}

/** One subscription's pipeline steps: a class, since an idle run holds it (its methods on the prototype, not closures). */
class PipelineProjector<T extends { type: string }> implements StageHandlers<T> {
  readonly reads = READS;
  // Made on first use (durableSteps: only for a non-empty seed): an idle stream holds none (each empty Set is ~150 B).
  private durableSteps: Set<string> | undefined;
  private runSteps: Set<string> | undefined;
  // A recovery snapshot may name another.
  private pipelineRunId: string;
  private cursor = 0;

  constructor(
    options: ProjectPipelineOptions,
    scheduler: SchedulerLike,
    private readonly out: StageOutput<Out<T>>,
  ) {
    for (const key of options.openSteps ?? []) (this.durableSteps ??= new Set()).add(key);
    this.pipelineRunId = `pipeline-${options.threadId}`;
    const opened = Math.floor(scheduler.now());
    for (const key of [...(this.durableSteps ?? [])].sort()) {
      (this.runSteps ??= new Set()).add(key);
      this.step(EventType.STEP_STARTED, key, opened);
    }
  }

  next(item: T): void {
    if (item.type === "A2A_PIPELINE_ENVELOPE") return this.envelope(item as unknown as PipelineEnvelopePart);
    if (item.type === "A2A_PIPELINE_SNAPSHOT") return this.snapshot(item as unknown as PipelineSnapshotPart);
    this.emit(item as Out<T>);
  }

  private emit(item: Out<T>): void {
    this.out.next(item);
  }

  private step(type: EventType.STEP_STARTED | EventType.STEP_FINISHED, key: string, timestamp: number): void {
    this.emit({ type, stepName: stepName(key), timestamp } as AguiEvent);
  }

  private reportSteps(): void {
    this.emit(fact("openSteps", { openSteps: [...(this.durableSteps ?? [])].sort() }));
  }

  private advance(sequence: number | undefined): void {
    if (sequence === undefined || sequence <= this.cursor) return;
    this.cursor = sequence;
    this.emit(fact("pipelineCursor", { sequence }));
  }

  private envelope({ envelope, time }: PipelineEnvelopePart): void {
    const eventType = typeof envelope.eventType === "string" ? envelope.eventType : "";
    const data = isObject(envelope.data) ? envelope.data : {};
    const messageId = pipelineMessageId(this.pipelineRunId, envelope);
    this.advance(toCount(envelope.sequence));
    switch (eventType) {
      case "text_delta":
        if (typeof data.text === "string") this.emit({ type: "A2A_TEXT", time, delta: data.text, messageId, parallel: true });
        break;
      case "thinking_delta":
        this.emit({ type: "A2A_REASONING", time, thinking: data, ownerMessageId: messageId });
        break;
      case "tool_started":
        this.emit({
          type: "A2A_TOOL_CALL",
          time,
          toolUseId: data.toolUseId,
          name: typeof data.toolName === "string" && data.toolName ? data.toolName : "tool",
          parentMessageId: messageId,
          ofCurrentMessage: false,
          args: canonicalJson(data.input ?? {}),
        });
        break;
      case "tool_result":
        this.emit({ type: "A2A_TOOL_RESULT", time, toolUseId: data.toolUseId, result: data.result });
        break;
      case "usage":
        this.emit({ type: "A2A_USAGE", time, usage: data });
        break;
    }
    const key = stepKeyOf(envelope);
    if (key !== undefined) {
      if (STEP_START_TYPES.has(eventType)) {
        (this.durableSteps ??= new Set()).add(key);
        if (!this.runSteps?.has(key)) {
          (this.runSteps ??= new Set()).add(key);
          this.step(EventType.STEP_STARTED, key, time);
        }
        this.reportSteps();
      } else if (STEP_FINISH_TYPES.has(eventType)) {
        const wasDurable = this.durableSteps?.delete(key) ?? false;
        if (this.runSteps?.delete(key)) {
          this.step(EventType.STEP_FINISHED, key, time);
        } else {
          // The completion of a step this run never opened (its start was missed): a zero-length pair.
          this.step(EventType.STEP_STARTED, key, time);
          this.step(EventType.STEP_FINISHED, key, time);
        }
        if (wasDurable) this.reportSteps();
      }
    }
    this.emit({ type: "IAC_CODE_SIGNAL", namespace: "pipeline", value: envelope, timestamp: time });
  }

  /** The kernel's pipeline state fetched before a resume: one ACTIVITY_SNAPSHOT, replacing the client's view. */
  private snapshot({ snapshot, time }: PipelineSnapshotPart): void {
    if (typeof snapshot.pipelineRunId === "string" && snapshot.pipelineRunId !== "") this.pipelineRunId = snapshot.pipelineRunId;
    const pipelineRunId = this.pipelineRunId;
    this.emit({
      type: EventType.ACTIVITY_SNAPSHOT,
      messageId: `pipeline:${pipelineRunId}`,
      activityType: "iac-code.pipeline.v1",
      content: { schemaVersion: 1, pipelineRunId, snapshot },
      replace: true,
      timestamp: time,
    } as AguiEvent);
    this.advance(toCount(snapshot.lastSequence));
  }
}

/**
 * `step:<id>`, or `candidate:<candidate>:<id>` inside a candidate. The candidate part prefers the
 * candidate's runId: parallel candidates of one sub-pipeline share their `id`, and their steps must not
 * collide in STEP_* names.
 *
 * @example
 * stepKeyOf({ step: { id: "deploying" } }) // "step:deploying"
 * stepKeyOf({ candidate: { runId: "c-1" }, candidateStep: { id: "plan" } }) // "candidate:c-1:plan"
 */
export function stepKeyOf(envelope: Record<string, unknown>): string | undefined {
  const step = isObject(envelope.candidateStep) ? envelope.candidateStep : isObject(envelope.step) ? envelope.step : undefined;
  const stepId = step && typeof step.id === "string" && step.id !== "" ? step.id : undefined;
  if (stepId === undefined) return undefined;
  const candidate = isObject(envelope.candidate) ? envelope.candidate : undefined;
  const candidateId = candidate ? firstString(candidate.runId, candidate.id, candidate.subPipelineId) : undefined;
  return candidateId !== undefined ? `candidate:${candidateId}:${stepId}` : `step:${stepId}`;
}

/**
 * The STEP_* `stepName` of a step key: a top-level step by its id, a candidate's step by its whole key.
 *
 * @example
 * stepName("step:deploying") // "deploying"
 */
export function stepName(key: string): string {
  return key.startsWith("step:") ? key.slice(5) : key;
}

function pipelineMessageId(pipelineRunId: string, envelope: JsonObject): string {
  const scope = typeof envelope.scope === "string" && envelope.scope !== "" ? envelope.scope : "pipeline";
  const coords: string[] = [];
  for (const key of ["candidate", "candidateStep", "step"] as const) {
    const c = envelope[key];
    if (!isObject(c)) continue;
    const coord = firstString(c.runId, c.id);
    if (coord !== undefined && !coords.includes(coord)) coords.push(coord);
  }
  return [`pipeline-message:${pipelineRunId}:${scope}`, ...coords].join(":");
}

function firstString(...values: unknown[]): string | undefined {
  for (const v of values) if (typeof v === "string" && v !== "") return v;
  return undefined;
}
