// A2A 1.0 stream → one AG-UI run (reference-adapter §5), as eight stages that each own one job and pass
// each other typed parts (projection/parts.ts). readFrames fixes the order of a frame's output once; every
// later stage replaces its own parts in place. What the projection learns leaves as facts (facts.ts);
// iac-code signals without a standard event leave as IAC_CODE_SIGNAL for namespaceCustom. Open spans at
// the end are balanceSpans' job. Besides the kernel's keys, `metadata.iac_code.pipelineSnapshot` (the body
// of the kernel's /iac-code/pipeline/state, put there by the edge before a resume) becomes an ACTIVITY_SNAPSHOT.
import type { OperatorFunction, SchedulerLike } from "rxjs";
import type { ProjectionFact } from "./facts.js";
import { unprocessableFrame } from "./lib/a2a-read.js";
import type { Translate } from "./lib/interrupts.js";
import { fuseStages, type Stage } from "./lib/stage.js";
import { announceSessionStage, type SessionInfo } from "./projection/announce-session.js";
import { guardIdentityStage } from "./projection/guard-identity.js";
import { mapInterruptsStage } from "./projection/map-interrupts.js";
import { mapTerminalStage } from "./projection/map-terminal.js";
import { projectPipelineStage } from "./projection/project-pipeline.js";
import { projectSpansStage } from "./projection/project-spans.js";
import { readFramesStage } from "./projection/read-frames.js";
import { totalUsageStage } from "./projection/total-usage.js";
import type { A2AStreamResponse, AguiEvent, IacCodeSignal, Interrupt } from "./types.js";

export { stepKeyOf, stepName } from "./projection/project-pipeline.js";
export type { SessionInfo } from "./projection/announce-session.js";

export interface ProjectA2AOptions {
  threadId: string;
  runId: string;
  parentRunId?: string;
  /** The thread's A2A context; a frame naming another context ends the run with A2A_PROTOCOL_ERROR. */
  contextId?: string;
  /** The task being resumed, if any; a frame naming another task ends the run with A2A_PROTOCOL_ERROR. */
  taskId?: string;
  /** Without it no session event is emitted. */
  session?: SessionInfo;
  /** Inputs already answered in this execution: seeing them again is not a new interrupt. */
  appliedInputIds?: Iterable<string>;
  /** Interrupts already announced, by id: a repeated sighting keeps its object (ids, schema, expiresAt). */
  knownInterrupts?: ReadonlyMap<string, Interrupt>;
  /** 0 or absent: interrupts never expire. */
  interruptTtlMs?: number;
  /** Durable pipeline steps still open from the previous run; reopened right after RUN_STARTED. */
  openSteps?: Iterable<string>;
  /** Use the agent messages of a task's history when a run has produced no text (off for resumes). */
  historyFallback?: boolean;
  scheduler?: SchedulerLike;
  /** Suffix source for generated ids (`assistant-<id>`, `tool-<id>`). */
  newId?: () => string;
  /** Localizes English texts: RUN_ERROR messages (language = the run's) and interrupt fallbacks (the input's). */
  translate?: Translate;
  language?: string;
}

/** What the projection emits: AG-UI events, iac-code signals for namespaceCustom, and what it learned (facts). */
export type ProjectedItem = AguiEvent | IacCodeSignal | ProjectionFact;

/**
 * The projection: RUN_STARTED on subscribe, the events of every frame, exactly one terminal event, and the
 * facts it learned on the way (drop them with `isProjectionFact` if you keep no state). No I/O behind it.
 *
 * @example
 * a2aFrames$.pipe(projectA2A({ threadId: "t", runId: "r" }), namespaceCustom())
 * // {statusUpdate: {taskId: "task-1", status: {state: "TASK_STATE_WORKING", message: {parts: [{text: "Hi"}]}}}}
 * // {statusUpdate: {taskId: "task-1", status: {state: "TASK_STATE_COMPLETED"}}}
 * // → RUN_STARTED, fact taskId, TEXT_MESSAGE_START, TEXT_MESSAGE_CONTENT "Hi", fact outcome, RUN_FINISHED success
 */
export function projectA2A(options: ProjectA2AOptions): OperatorFunction<A2AStreamResponse, ProjectedItem> {
  return fuseStages<A2AStreamResponse, ProjectedItem>(projectionStages(options), unprocessableFrame);
}

/**
 * projectA2A's eight stages in order, for fuseStages. Each stage sits as early as its inputs allow, so the
 * bulk of the events (spans) crosses few stages.
 */
export function projectionStages(options: ProjectA2AOptions): Stage<unknown, unknown>[] {
  const { threadId, runId, contextId, taskId, scheduler, translate } = options;
  return [
    // guardIdentity and announceSession read a frame's ids only, and act only on ids they have not seen.
    readFramesStage({ historyFallback: options.historyFallback, scheduler, skipRepeatedIds: true }),
    guardIdentityStage({ contextId, taskId, sessionId: options.session?.sessionId }),
    mapInterruptsStage({
      contextId,
      taskId,
      appliedInputIds: options.appliedInputIds,
      knownInterrupts: options.knownInterrupts,
      interruptTtlMs: options.interruptTtlMs,
      translate,
    }),
    projectPipelineStage({ threadId, openSteps: options.openSteps, scheduler }),
    totalUsageStage(),
    projectSpansStage({ runId, newId: options.newId }),
    mapTerminalStage({ threadId, runId, parentRunId: options.parentRunId, translate, language: options.language, scheduler }),
    announceSessionStage({ threadId, runId, contextId, taskId, session: options.session }),
  ] as Stage<unknown, unknown>[];
}
