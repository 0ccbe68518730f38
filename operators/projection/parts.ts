// The items the projection's stages pass each other. readFrames turns each A2A frame into these parts, in
// the order the frame's events must come out; every later stage replaces the parts it owns with AG-UI
// events, signals, facts or parts for a stage further down, in place, and passes everything else on. So a
// frame's output order is fixed once, by readFrames, however the stages are arranged. Each part carries its
// frame's time: every event a frame produces has the same timestamp (one clock read per frame).
import type { Interrupt, TokenUsage } from "@ag-ui/core";
import type { ProjectionFact } from "../facts.js";
import type { RequiredInput } from "../lib/interrupts.js";
import type { AguiEvent, IacCodeSignal, JsonObject } from "../types.js";

/** First part of every frame: the ids it names, for guardIdentity; then the frame's start, for announceSession. */
export interface FramePart {
  type: "A2A_FRAME";
  time: number;
  taskId?: string;
  contextId?: string;
  sessionId?: string;
}

/** `metadata.iac_code.pipelineSnapshot`: the kernel's pipeline state, put there by the edge before a resume. */
export interface PipelineSnapshotPart {
  type: "A2A_PIPELINE_SNAPSHOT";
  time: number;
  snapshot: JsonObject;
}

/** One pipeline envelope (`iac_code.pipeline`, or one of `iac_code.pipelineBatch.events`). */
export interface PipelineEnvelopePart {
  type: "A2A_PIPELINE_ENVELOPE";
  time: number;
  envelope: JsonObject;
}

/**
 * Assistant text. `parallel` (pipeline text): the message id is the whole identity, other messages stay open.
 * Status text (not parallel) continues the current message and ends the previous one.
 */
export interface TextPart {
  type: "A2A_TEXT";
  time: number;
  delta: string;
  messageId?: string;
  parallel: boolean;
}

/** A status message's text. `final`: the kernel's repeat of the whole answer; `history`: the task history's last agent block. */
export interface StatusTextPart {
  type: "A2A_STATUS_TEXT";
  time: number;
  delta: string;
  messageId?: string;
  final: boolean;
  history?: { text: string; messageId?: string };
}

/** A thinking item (`{type: "raw_thinking", text}`), in the reasoning of `ownerMessageId` or of the current message. */
export interface ReasoningPart {
  type: "A2A_REASONING";
  time: number;
  thinking: unknown;
  ownerMessageId?: string;
}

/** A tool call starts (and, with `args`, its input is complete). Parent: `parentMessageId`, or the current message. */
export interface ToolCallPart {
  type: "A2A_TOOL_CALL";
  time: number;
  toolUseId: unknown;
  name: string;
  parentMessageId?: string;
  ofCurrentMessage: boolean;
  args?: string;
}

export interface ToolResultPart {
  type: "A2A_TOOL_RESULT";
  time: number;
  toolUseId: unknown;
  result: unknown;
}

/** A usage report (`{provider?, model?, inputTokens, …}`), unchecked. */
export interface UsagePart {
  type: "A2A_USAGE";
  time: number;
  usage: unknown;
}

/** The required inputs a frame carries, applied ones included (mapInterrupts decides). */
export interface RequiredInputsPart {
  type: "A2A_REQUIRED_INPUTS";
  time: number;
  inputs: RequiredInput[];
}

/** The frame's task state when it ends the turn, normalized (`completed`, `input-required`, `canceled`, `failed`, …). Last part of a frame. */
export interface StatePart {
  type: "A2A_STATE";
  time: number;
  state: string;
}

/** totalUsage → mapTerminal: the run's usage so far, one entry per provider and model. */
export interface UsageTotalsPart {
  type: "A2A_USAGE_TOTALS";
  usage: TokenUsage[];
}

/** mapInterrupts → mapTerminal: the run ends with these interrupts. */
export interface InterruptEndPart {
  type: "A2A_INTERRUPT_END";
  time: number;
  interrupts: Interrupt[];
}

export type FrameContentPart =
  | PipelineSnapshotPart
  | PipelineEnvelopePart
  | TextPart
  | StatusTextPart
  | ReasoningPart
  | ToolCallPart
  | ToolResultPart
  | UsagePart
  | RequiredInputsPart
  | StatePart;

/** Everything that travels between the projection's stages. */
export type ProjectionPart = FramePart | FrameContentPart | UsageTotalsPart | InterruptEndPart;

/** What a stage passes on: parts for later stages, and what the projection emits. */
export type StageItem = ProjectionPart | AguiEvent | IacCodeSignal | ProjectionFact;
