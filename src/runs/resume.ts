// Resume rules (seeds "Retomada", reference-adapter §4.4–4.6, §6.2–6.3): which answers apply, whether
// they are valid, and how each one is encoded for A2A. Pure: the plan says what the pending set becomes,
// the reconcilePending transition writes it, and the run service does the I/O around it.
import { createHash } from "node:crypto";
import { Ajv, type ValidateFunction } from "ajv";
import {
  RunError,
  buildInterrupt,
  canonicalJson,
  requiredInputs,
  responseSchemaFor,
  type A2APart,
  type A2ATask,
  type Interrupt,
  type Translate,
} from "../../operators/index.js";
import { TERMINAL_STATES, normalizeState } from "../../operators/lib/a2a-read.js";
import { isObject } from "../../operators/lib/json.js";
import type { AppliedResumeDigest, PendingEntry, ThreadRecord } from "../state/thread-store.js";
import { putOwn, withEntries } from "../state/windows.js";
import type { ResumeEntry } from "./input.js";
import { messageText } from "../i18n/index.js";

export function resumeDigest(entry: ResumeEntry): string {
  return createHash("sha256")
    .update(canonicalJson({ status: entry.status, payload: entry.payload ?? null }), "utf8")
    .digest("hex");
}

/** One answer, ready to send. */
export interface PlannedAnswer {
  entry: ResumeEntry;
  pending: PendingEntry;
  digest: string;
  /** "deny" for a cancelled permission. */
  decision?: "allow_once" | "deny";
}

export type ResumePlan =
  | { kind: "apply"; answers: PlannedAnswer[] }
  /** Nothing is sent: the resume is refused with this error (the reconciled pending set is still written). */
  | { kind: "refused"; error: RunError }
  /** The kernel shows inputs nobody has seen yet: announce them all instead of sending anything. */
  | { kind: "announce"; pending: Record<string, PendingEntry> }
  /** A non-permission interrupt answered `cancelled`: the whole task is cancelled. */
  | { kind: "cancel" };

const ajv = new Ajv({ strict: false, allErrors: false });
const validators = new Map<string, ValidateFunction>();

function validatorFor(schema: Record<string, unknown>): ValidateFunction {
  const key = canonicalJson(schema);
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile(schema);
    validators.set(key, validate);
  }
  return validate;
}

function applied(record: ThreadRecord, interruptId: string): string | undefined {
  const executionId = record.execution.executionId;
  return record.appliedResumeDigests.find((d) => d.executionId === executionId && d.interruptId === interruptId)?.digest;
}

/** A plan, and the pending set it settled on: the inputs the kernel shows, less the answers it already took. */
export interface PlannedResume {
  plan: ResumePlan;
  pending: Record<string, PendingEntry>;
  /** Answers the kernel took that the state never recorded (it stopped between the two). */
  recovered: AppliedResumeDigest[];
}

/**
 * Reconciles the durable pending set with the kernel's view of the task and decides what to do. Changes
 * nothing: the caller writes `pending` and `recovered` (reconcilePending), also for a refused plan.
 */
export function planResume(record: ThreadRecord, entries: ResumeEntry[], task: A2ATask | undefined, now: number): PlannedResume {
  const settled: Omit<PlannedResume, "plan"> = { pending: withEntries(record.execution.pending, []), recovered: [] };
  try {
    return { plan: decide(record, entries, task, now, settled), ...settled };
  } catch (error) {
    if (error instanceof RunError) return { plan: { kind: "refused", error }, ...settled };
    throw error;
  }
}

/** The plan; refusals are thrown. Writes what it learns of the pending set into `settled` (a copy, never the record). */
function decide(record: ThreadRecord, entries: ResumeEntry[], task: A2ATask | undefined, now: number, settled: Omit<PlannedResume, "plan">): ResumePlan {
  const execution = record.execution;
  const { pending, recovered } = settled;
  const known = new Set(Object.keys(execution.pending));
  const digests = entries.map(resumeDigest);
  const appliedDigest = (interruptId: string) =>
    applied(record, interruptId) ?? recovered.find((d) => d.interruptId === interruptId)?.digest;
  const lost = () => {
    for (const id of Object.keys(pending)) delete pending[id];
    return new RunError("EXECUTION_LOST", messageText("resume.taskUnavailable"));
  };

  if (execution.taskId === null || known.size === 0) {
    if (entries.length > 0 && entries.every((e, i) => applied(record, e.interruptId) === digests[i])) {
      throw new RunError("RESUME_ALREADY_APPLIED", messageText("resume.alreadyApplied"));
    }
    throw new RunError("EXECUTION_LOST", messageText("resume.taskUnavailable"));
  }

  for (const entry of Object.values(execution.pending)) {
    if (entry.expiresAt !== undefined && Date.parse(entry.expiresAt) <= now) {
      throw new RunError("EXECUTION_EXPIRED", messageText("resume.expired"));
    }
  }

  if (task) {
    const state = normalizeState(task.status?.state);
    if (state !== undefined && TERMINAL_STATES.has(state)) throw lost();
    const iac = isObject(task.metadata?.iac_code) ? (task.metadata.iac_code as Record<string, unknown>) : undefined;
    const exposed = requiredInputs(iac);
    const waiting = new Set(exposed.map((input) => input.value.inputId));
    for (const id of known) {
      if (waiting.has(id)) continue;
      if (answeredInHistory(task, id)) {
        // The kernel took an answer the gateway never recorded (it stopped between the two): record it
        // now, so the same answer is "already applied" and nothing is sent twice.
        const entry = entries.find((e) => e.interruptId === id);
        if (entry) recovered.push({ executionId: execution.executionId, interruptId: id, digest: resumeDigest(entry) });
        delete pending[id];
      } else if (state === "input-required") {
        // The turn ended and nothing waits for this answer any more (the kernel restarted or moved on).
        throw lost();
      }
    }
    for (const input of exposed) {
      const id = input.value.inputId;
      if (applied(record, id) !== undefined) continue;
      const existing = Object.hasOwn(pending, id) ? pending[id] : undefined;
      if (existing) {
        if (input.sideband && !existing.sideband) putOwn(pending, id, { ...existing, sideband: true });
      } else {
        putOwn(pending, id, { value: input.value, sideband: input.sideband });
      }
    }
  }

  const seen = new Set<string>();
  for (const entry of entries) {
    if (seen.has(entry.interruptId)) throw new RunError("INCOMPLETE_RESUME", messageText("resume.duplicateInterruptIds"));
    seen.add(entry.interruptId);
  }

  // An id the kernel already accepted leaves the pending set whatever a stale snapshot says.
  entries.forEach((entry, i) => {
    const done = appliedDigest(entry.interruptId);
    if (done !== undefined) {
      if (done !== digests[i]) throw new RunError("RESUME_ALREADY_APPLIED", messageText("resume.alreadyApplied"));
      delete pending[entry.interruptId];
    }
  });
  for (const id of Object.keys(pending)) if (appliedDigest(id) !== undefined) delete pending[id];

  const answers: PlannedAnswer[] = [];
  entries.forEach((entry, i) => {
    const target = Object.hasOwn(pending, entry.interruptId) ? pending[entry.interruptId] : undefined;
    if (target) {
      answers.push({ entry, pending: target, digest: digests[i]! });
      return;
    }
    if (appliedDigest(entry.interruptId) === undefined) throw new RunError("UNKNOWN_INTERRUPT", messageText("resume.unknownInterrupt"));
  });

  const missing = Object.keys(pending).filter((id) => !seen.has(id));
  if (missing.some((id) => known.has(id))) {
    throw new RunError("INCOMPLETE_RESUME", messageText("resume.incomplete"));
  }
  if (missing.length > 0) return { kind: "announce", pending };
  if (answers.length === 0) throw new RunError("RESUME_ALREADY_APPLIED", messageText("resume.alreadyApplied"));

  for (const answer of answers) {
    const kind = answer.pending.value.kind;
    if (answer.entry.status === "cancelled") {
      if (kind === "permission") answer.decision = "deny";
      continue;
    }
    if (answer.entry.payload === undefined || answer.entry.payload === null) {
      throw new RunError("RESUME_PAYLOAD_INVALID", messageText("resume.payloadRequired"));
    }
    if (!validatorFor(responseSchemaFor(answer.pending.value))(answer.entry.payload)) {
      throw new RunError("RESUME_PAYLOAD_INVALID", messageText("resume.payloadInvalid"));
    }
    if (kind === "permission") answer.decision = (answer.entry.payload as { decision: "allow_once" | "deny" }).decision;
  }
  if (answers.some((a) => a.entry.status === "cancelled" && a.pending.value.kind !== "permission")) return { kind: "cancel" };
  return { kind: "apply", answers };
}

/** The message ids the gateway sends answers under (resume-flow.ts): an answer, not something the user said. */
export function isAnswerMessageId(messageId: string): boolean {
  return messageId.startsWith("agui-resume-");
}

/** A user message of the task carries our answer to `inputId` (its data part, or our resume message id). */
function answeredInHistory(task: A2ATask, inputId: string): boolean {
  for (const message of task.history ?? []) {
    if (message.role !== "ROLE_USER" && message.role !== "user") continue;
    const id = message.messageId ?? "";
    if (isAnswerMessageId(id) && id.endsWith(inputId)) return true;
    for (const part of message.parts ?? []) {
      if (isObject(part.data) && part.data.inputId === inputId) return true;
    }
  }
  return false;
}

/** What one answer becomes on the A2A wire. */
export interface EncodedAnswer {
  parts: A2APart[];
  /** Extra `metadata.iac_code` keys (the resource-selection answer channel). */
  metadata?: Record<string, unknown>;
  /** Shown as a TOOL_CALL_RESULT once the kernel accepted the answer (questions answered by a tool). */
  toolResult?: { toolCallId: string; content: string };
}

export function encodeAnswer(answer: PlannedAnswer, taskId: string, contextId: string): EncodedAnswer {
  const value = answer.pending.value;
  const toolUseId = typeof value.toolUseId === "string" && value.toolUseId !== "" ? value.toolUseId : undefined;
  if (value.kind === "permission") {
    return {
      parts: [
        {
          data: {
            schemaVersion: 1,
            kind: "permission",
            requestTaskId: taskId,
            inputId: value.inputId,
            toolUseId: toolUseId ?? "",
            decision: answer.decision ?? "deny",
          },
          mediaType: "application/json",
        },
      ],
    };
  }
  const payload = (answer.entry.payload ?? {}) as Record<string, unknown>;
  if (value.kind === "cloud_resource_selection") {
    const selector = isObject(value.selector) ? value.selector : {};
    const chosen = typeof payload.value === "string" ? payload.value : String(payload.freeText ?? "");
    const label = typeof payload.label === "string" ? payload.label : chosen;
    const response = {
      schemaVersion: 1,
      kind: "cloud_resource_selection",
      status: "selected",
      requestTaskId: taskId,
      contextId,
      inputId: value.inputId,
      toolUseId,
      selectorId: selector.id,
      value: chosen,
      label,
    };
    return {
      parts: [{ text: label }],
      metadata: { inputResponse: response },
      ...(toolUseId !== undefined && { toolResult: { toolCallId: toolUseId, content: label } }),
    };
  }
  const text = answerText(value, payload);
  if (text === "") throw new RunError("RESUME_PAYLOAD_INVALID", messageText("resume.noAnswer"));
  return { parts: [{ text }], ...(toolUseId !== undefined && { toolResult: { toolCallId: toolUseId, content: text } }) };
}

/** The text a question, selection or confirmation answer is sent as (reference §6.2 resume_value). */
function answerText(value: Record<string, unknown>, payload: Record<string, unknown>): string {
  const options = Array.isArray(value.options) ? value.options : [];
  if (value.kind === "deployment_confirmation") {
    let action = typeof payload.action === "string" ? payload.action : undefined;
    if (action === undefined && typeof payload.selectedId === "string") {
      const option = options.find((o) => isObject(o) && String(o.id) === payload.selectedId);
      action = isObject(option) && typeof option.action === "string" ? option.action : undefined;
    }
    if (action === undefined) return "";
    const overrides = isObject(payload.parameter_overrides) ? payload.parameter_overrides : {};
    // The kernel's pipeline parser reads this JSON; the action, never a localized label, is what decides.
    return `{"action": ${JSON.stringify(action.toLowerCase())}, "parameter_overrides": ${pythonJson(overrides)}}`;
  }
  if (typeof payload.freeText === "string" && payload.freeText !== "") return payload.freeText;
  if (typeof payload.selectedId === "string") {
    const option = options.find((o) => (isObject(o) ? String(o.id ?? o.candidate_index) : String(o)) === payload.selectedId);
    if (isObject(option)) {
      const label = option.label ?? option.name;
      if (typeof label === "string" && label !== "") return label;
    }
    return payload.selectedId;
  }
  return "";
}

/** JSON with Python's default separators (", " and ": "), as the kernel's own encoder writes it. */
function pythonJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(", ")}]`;
  if (isObject(value)) {
    return `{${Object.entries(value)
      .filter(([, v]) => v !== undefined && v !== null)
      .map(([k, v]) => `${JSON.stringify(k)}: ${pythonJson(v)}`)
      .join(", ")}}`;
  }
  return JSON.stringify(value);
}

/** The Interrupt objects of a pending set, as announced (stable: rebuilt from the stored value). */
export function interruptsOf(pending: Record<string, PendingEntry>, translate: Translate): Interrupt[] {
  return Object.values(pending).map((entry) => buildInterrupt(entry.value, translate, entry.expiresAt));
}
