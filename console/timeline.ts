// The timeline's model: AG-UI events folded into one view per run. Pure (no DOM), so the page and the
// Node tests share it; the renderer only reads what is built here.
import type { BaseEvent, Interrupt } from "@ag-ui/client";

export type Tone = "good" | "bad" | "warn" | "info";
export type RunStatus = "running" | "success" | "interrupt" | "cancelled" | "error";
export type StepStatus = "running" | "done" | "failed";

export interface Badge {
  label: string;
  tone: Tone;
  /** Hover text: the event's data, abbreviated. */
  detail: string;
}

export interface UsageEntry {
  provider?: string;
  model?: string;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cachedInputTokens: number;
}

export type TimelineItem =
  | { kind: "text"; key: string; messageId: string; candidate?: string; text: string; streaming: boolean }
  | { kind: "reasoning"; key: string; messageId: string; candidate?: string; text: string; streaming: boolean; open: boolean }
  | {
      kind: "tool";
      key: string;
      toolCallId: string;
      parentMessageId?: string;
      name: string;
      args: string;
      result?: string;
      status: "streaming" | "called" | "done";
      open: boolean;
    }
  | { kind: "badges"; key: string; badges: Badge[] }
  | { kind: "steps"; key: string }
  | { kind: "activity"; key: string; activityType: string; content: unknown; open: boolean }
  | { kind: "usage"; key: string; entries: UsageEntry[] }
  | { kind: "error"; key: string; code: string; message: string };

export interface StepNode {
  /** The STEP_* name as sent: `<id>` for pipeline steps, `candidate:<candidate>:<id>` inside a candidate. */
  name: string;
  label: string;
  status: StepStatus;
  candidates: CandidateNode[];
}

export interface CandidateNode {
  id: string;
  label: string;
  status: StepStatus;
  steps: StepNode[];
}

export interface PipelineTree {
  steps: StepNode[];
  /** Candidates whose parent step is not known (their start was not seen in this run). */
  loose: CandidateNode[];
}

export interface RunView {
  runId: string;
  /** The user's text for a prompt run; undefined for a resume. */
  prompt?: string;
  /** For a resume: what the user chose, as they saw it (button labels, typed text). */
  answer?: string;
  /** A connect (POST /connect): the thread as the gateway has it, then the live run's events when one is running. */
  connect?: boolean;
  status: RunStatus;
  items: TimelineItem[];
  pipeline?: PipelineTree;
  executionId?: string;
  interrupts: Interrupt[];
  error?: { code: string; message: string };
  sawRunStarted: boolean;
}

/** What outlives a run: tool names, so a result that arrives in a resume run still shows its tool. */
export interface ThreadMemory {
  toolNames: Map<string, string>;
  candidateLabels: Map<string, string>;
  candidateParents: Map<string, string>;
}

export function newThreadMemory(): ThreadMemory {
  return { toolNames: new Map(), candidateLabels: new Map(), candidateParents: new Map() };
}

export function newRun(runId: string, prompt?: string, answer?: string): RunView {
  return {
    runId,
    ...(prompt !== undefined && { prompt }),
    ...(answer !== undefined && { answer }),
    status: "running",
    items: [],
    interrupts: [],
    sawRunStarted: false,
  };
}

type Loose = Record<string, unknown>;

const isObject = (v: unknown): v is Loose => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const count = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

export function applyEvent(memory: ThreadMemory, run: RunView, event: BaseEvent): void {
  const e = event as BaseEvent & Loose;
  let seq = run.items.length;
  const key = (prefix: string) => `${prefix}-${seq++}`;

  switch (e.type) {
    case "RUN_STARTED":
      run.sawRunStarted = true;
      run.status = "running";
      return;
    case "TEXT_MESSAGE_START":
      messageRow(memory, run, "text", String(e.messageId), key);
      return;
    case "TEXT_MESSAGE_CONTENT":
      messageRow(memory, run, "text", String(e.messageId), key).text += String(e.delta ?? "");
      return;
    case "TEXT_MESSAGE_END":
      for (const item of run.items) if (item.kind === "text" && item.messageId === e.messageId) item.streaming = false;
      return;
    case "REASONING_MESSAGE_START":
      messageRow(memory, run, "reasoning", String(e.messageId), key);
      return;
    case "REASONING_MESSAGE_CONTENT":
      messageRow(memory, run, "reasoning", String(e.messageId), key).text += String(e.delta ?? "");
      return;
    case "REASONING_MESSAGE_END":
    case "REASONING_END":
      for (const item of run.items) if (item.kind === "reasoning" && item.messageId === e.messageId) item.streaming = false;
      return;
    case "TOOL_CALL_START": {
      const toolCallId = String(e.toolCallId);
      const name = str(e.toolCallName) ?? "tool";
      memory.toolNames.set(toolCallId, name);
      const parentMessageId = str(e.parentMessageId);
      run.items.push({ kind: "tool", key: key("tool"), toolCallId, ...(parentMessageId !== undefined && { parentMessageId }), name, args: "", status: "streaming", open: true });
      return;
    }
    case "TOOL_CALL_ARGS": {
      const tool = findTool(run, String(e.toolCallId));
      if (tool) tool.args += String(e.delta ?? "");
      return;
    }
    case "TOOL_CALL_END": {
      const tool = findTool(run, String(e.toolCallId));
      if (tool) tool.status = "called";
      return;
    }
    case "TOOL_CALL_RESULT": {
      const toolCallId = String(e.toolCallId);
      let tool = findTool(run, toolCallId);
      if (!tool) {
        // The call was made in an earlier run (before an interrupt); show its result under its name.
        tool = { kind: "tool", key: key("tool"), toolCallId, name: memory.toolNames.get(toolCallId) ?? "tool", args: "", status: "called", open: true };
        run.items.push(tool);
      }
      tool.result = typeof e.content === "string" ? e.content : JSON.stringify(e.content);
      tool.status = "done";
      return;
    }
    case "STEP_STARTED":
    case "STEP_FINISHED":
      return stepEvent(memory, run, String(e.stepName), e.type === "STEP_STARTED", key);
    case "CUSTOM":
      return customEvent(memory, run, String(e.name), e.value, key);
    case "ACTIVITY_SNAPSHOT":
      run.items.push({ kind: "activity", key: key("activity"), activityType: String(e.activityType), content: e.content, open: false });
      return;
    case "RUN_FINISHED": {
      const outcome = isObject(e.outcome) ? e.outcome : {};
      const type = str(outcome.type) ?? "success";
      run.status = type === "interrupt" ? "interrupt" : type === "cancelled" ? "cancelled" : "success";
      run.interrupts = Array.isArray(outcome.interrupts) ? (outcome.interrupts as Interrupt[]) : [];
      const usage = usageOf(e.usage);
      if (usage.length > 0) run.items.push({ kind: "usage", key: key("usage"), entries: usage });
      closeOpenSteps(run, "done");
      return;
    }
    case "RUN_ERROR": {
      const code = str(e.code) ?? "RUN_ERROR";
      const message = str(e.message) ?? "";
      recordError(run, code, message);
      return;
    }
    default:
      return;
  }
}

type MessageRow = Extract<TimelineItem, { kind: "text" | "reasoning" }>;

/**
 * The row a message's delta grows: its latest row, even when other messages' rows came after it
 * (parallel candidates interleave), unless a tool call of that message (or of no message) came after
 * it — a message's text around its own tool calls reads as separate paragraphs, as it streamed. A
 * candidate's message is open whenever it calls a tool, so a call without a parent is another scope's.
 */
function messageRow(memory: ThreadMemory, run: RunView, kind: MessageRow["kind"], messageId: string, key: (prefix: string) => string): MessageRow {
  const candidate = candidateOfMessage(memory, messageId);
  for (let i = run.items.length - 1; i >= 0; i--) {
    const item = run.items[i]!;
    if (item.kind === "tool" && (item.parentMessageId === messageId || (item.parentMessageId === undefined && candidate === undefined))) break;
    if (item.kind === kind && item.messageId === messageId) return item;
  }
  const coordinates = { key: key(kind), messageId, ...(candidate !== undefined && { candidate }) };
  const row: MessageRow = kind === "text" ? { kind, ...coordinates, text: "", streaming: true } : { kind, ...coordinates, text: "", streaming: true, open: false };
  run.items.push(row);
  return row;
}

/**
 * The candidate a message belongs to. The gateway's pipeline message ids are colon-separated
 * coordinates (`pipeline-message:<run>:candidate_step:<candidate>:<step>:…`); a segment naming a
 * candidate seen in a pipeline event wins, else the segment after a `candidate…` scope.
 */
export function candidateOfMessage(memory: ThreadMemory, messageId: string): string | undefined {
  const segments = messageId.split(":");
  const known = segments.find((s) => memory.candidateLabels.has(s));
  if (known !== undefined) return known;
  const scope = segments.findIndex((s) => s === "candidate" || s === "candidate_step");
  return scope >= 0 ? str(segments[scope + 1]) : undefined;
}

export interface Reply {
  messageId: string;
  /** The candidate's id and label when the message is a pipeline candidate's. */
  candidate?: { id: string; label: string };
  /** The message's text; its parts around its own tool calls become paragraphs. */
  text: string;
  streaming: boolean;
}

/** The assistant's replies as the conversation shows them: one per message id, in the order the messages started. */
export function replies(run: RunView): Reply[] {
  const byMessage = new Map<string, { candidate?: string; paragraphs: string[]; streaming: boolean }>();
  for (const item of run.items) {
    if (item.kind !== "text") continue;
    const entry = byMessage.get(item.messageId) ?? { ...(item.candidate !== undefined && { candidate: item.candidate }), paragraphs: [], streaming: false };
    byMessage.set(item.messageId, entry);
    entry.paragraphs.push(item.text);
    entry.streaming ||= item.streaming;
  }
  const result: Reply[] = [];
  for (const [messageId, entry] of byMessage) {
    const text = entry.paragraphs.map((p) => p.trim()).filter((p) => p !== "").join("\n\n");
    if (text === "") continue;
    const candidate = entry.candidate !== undefined ? { id: entry.candidate, label: candidateLabel(run, entry.candidate) } : undefined;
    result.push({ messageId, ...(candidate && { candidate }), text, streaming: entry.streaming && run.status === "running" });
  }
  return result;
}

/** A candidate's label as its card in the pipeline tree shows it; its id when the tree never named it. */
export function candidateLabel(run: RunView, id: string): string {
  const tree = run.pipeline;
  if (!tree) return id;
  const all = [...tree.steps.flatMap((s) => s.candidates), ...tree.loose];
  return all.find((c) => c.id === id)?.label ?? id;
}

/** An error from outside the stream (HTTP refusal, network): the run ends with it. */
export function recordError(run: RunView, code: string, message: string): void {
  // A cancel the user asked for ends as RUN_ERROR CANCELLED: shown as cancelled, with its code kept.
  run.status = code === "CANCELLED" ? "cancelled" : "error";
  run.error = { code, message };
  run.items.push({ kind: "error", key: `error-${run.items.length}`, code, message });
  closeOpenSteps(run, "failed");
}

function findTool(run: RunView, toolCallId: string) {
  for (let i = run.items.length - 1; i >= 0; i--) {
    const item = run.items[i];
    if (item?.kind === "tool" && item.toolCallId === toolCallId) return item;
  }
  return undefined;
}

function usageOf(value: unknown): UsageEntry[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isObject).map((u) => ({
    ...(str(u.provider) !== undefined && { provider: str(u.provider)! }),
    ...(str(u.model) !== undefined && { model: str(u.model)! }),
    inputTokens: count(u.inputTokens),
    outputTokens: count(u.outputTokens),
    totalTokens: count(u.totalTokens),
    cachedInputTokens: count(u.cachedInputTokens),
  }));
}

// --- pipeline --------------------------------------------------------------------------------------

function treeOf(run: RunView, key: (prefix: string) => string): PipelineTree {
  if (!run.pipeline) {
    run.pipeline = { steps: [], loose: [] };
    run.items.push({ kind: "steps", key: key("steps") });
  }
  return run.pipeline;
}

/** `candidate:<candidate>:<step>` → its two parts; candidate ids never hold the last colon. */
export function parseStepName(name: string): { candidate?: string; step: string } {
  if (!name.startsWith("candidate:")) return { step: name };
  const rest = name.slice("candidate:".length);
  const colon = rest.lastIndexOf(":");
  if (colon <= 0) return { step: name };
  return { candidate: rest.slice(0, colon), step: rest.slice(colon + 1) };
}

function stepEvent(memory: ThreadMemory, run: RunView, name: string, started: boolean, key: (prefix: string) => string): void {
  const tree = treeOf(run, key);
  const parsed = parseStepName(name);
  let list: StepNode[];
  if (parsed.candidate === undefined) list = tree.steps;
  else {
    const candidate = candidateNode(memory, tree, parsed.candidate);
    if (started) candidate.status = "running";
    list = candidate.steps;
  }
  let node = list.find((s) => s.name === name);
  if (!node) {
    node = { name, label: parsed.step, status: "running", candidates: [] };
    list.push(node);
  }
  if (started) node.status = "running";
  else if (node.status === "running") node.status = "done";
}

function candidateNode(memory: ThreadMemory, tree: PipelineTree, id: string): CandidateNode {
  for (const step of tree.steps) {
    const found = step.candidates.find((c) => c.id === id);
    if (found) return found;
  }
  const loose = tree.loose.find((c) => c.id === id);
  if (loose) return loose;
  const node: CandidateNode = { id, label: memory.candidateLabels.get(id) ?? id, status: "running", steps: [] };
  const parentName = memory.candidateParents.get(id);
  // Unknown parent: the pipeline step still running is the one that fans out into candidates.
  const parent =
    (parentName !== undefined ? tree.steps.find((s) => s.name === parentName) : undefined) ??
    [...tree.steps].reverse().find((s) => s.status === "running");
  if (parent) parent.candidates.push(node);
  else tree.loose.push(node);
  return node;
}

/** A run that ended (an abort, a lost stream) leaves nothing shown as still running. */
function closeOpenSteps(run: RunView, status: StepStatus): void {
  const close = (steps: StepNode[]) => {
    for (const step of steps) {
      if (step.status === "running") step.status = status;
      for (const candidate of step.candidates) {
        if (candidate.status === "running") candidate.status = status;
        close(candidate.steps);
      }
    }
  };
  if (!run.pipeline) return;
  close(run.pipeline.steps);
  for (const candidate of run.pipeline.loose) {
    if (candidate.status === "running") candidate.status = status;
    close(candidate.steps);
  }
}

function customEvent(memory: ThreadMemory, run: RunView, name: string, value: unknown, key: (prefix: string) => string): void {
  if (name === "iac-code.session.v1") {
    if (isObject(value) && str(value.executionId)) run.executionId = str(value.executionId)!;
    return;
  }
  if (name === "iac-code.pipeline.v1" && isObject(value)) {
    const eventType = str(value.eventType) ?? "pipeline";
    notePipelineCoordinates(memory, run, value, eventType, key);
    return addBadge(run, { label: eventType.replace(/_/g, " "), tone: toneOf(eventType, value.status), detail: detailOf(value.data) }, key);
  }
  addBadge(run, { label: name, tone: "info", detail: detailOf(value) }, key);
}

function notePipelineCoordinates(memory: ThreadMemory, run: RunView, envelope: Loose, eventType: string, key: (prefix: string) => string): void {
  const candidate = isObject(envelope.candidate) ? envelope.candidate : undefined;
  if (!candidate) return;
  const id = str(candidate.runId) ?? str(candidate.id) ?? str(candidate.subPipelineId);
  if (id === undefined) return;
  const data = isObject(envelope.data) ? envelope.data : {};
  const index = typeof candidate.index === "number" ? candidate.index : typeof data.candidateIndex === "number" ? data.candidateIndex : undefined;
  const base = str(candidate.name) ?? str(data.candidateName) ?? str(data.subPipelineName) ?? str(candidate.id) ?? id;
  const label = index !== undefined ? `${base} #${index + 1}` : base;
  memory.candidateLabels.set(id, label);
  const step = isObject(envelope.step) ? str(envelope.step.id) : undefined;
  if (step !== undefined) memory.candidateParents.set(id, step);
  if (!eventType.startsWith("candidate_")) return;
  const node = candidateNode(memory, treeOf(run, key), id);
  node.label = label;
  if (eventType === "candidate_failed") node.status = "failed";
  else if (eventType === "candidate_completed") node.status = data.failed === true ? "failed" : "done";
  else if (eventType === "candidate_step_failed") {
    const stepId = isObject(envelope.candidateStep) ? str(envelope.candidateStep.id) : undefined;
    const failed = node.steps.find((s) => s.label === stepId);
    if (failed) failed.status = "failed";
  }
}

function addBadge(run: RunView, badge: Badge, key: (prefix: string) => string): void {
  const last = run.items.at(-1);
  if (last?.kind === "badges") last.badges.push(badge);
  else run.items.push({ kind: "badges", key: key("badges"), badges: [badge] });
}

export function toneOf(eventType: string, status?: unknown): Tone {
  if (/(_failed|_error|blocked)$/.test(eventType) || status === "failed") return "bad";
  if (/(warning|_restart_requested|rollback_triggered|stale)/.test(eventType)) return "warn";
  if (/(_completed|_selected|compacted)$/.test(eventType) || status === "completed") return "good";
  return "info";
}

function detailOf(value: unknown): string {
  if (value === undefined) return "";
  const text = JSON.stringify(value);
  return text.length > 400 ? `${text.slice(0, 397)}...` : text;
}

/** Tool arguments as the user should read them: pretty JSON when they parse, the raw text otherwise. */
export function prettyJson(text: string): string {
  if (text.trim() === "") return "";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
