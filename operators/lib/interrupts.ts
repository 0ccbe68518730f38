// A2A required inputs (`metadata.iac_code.input`, `pendingPermissions[]`) → AG-UI Interrupt objects
// (reference-adapter §6). Pure: the caller supplies the clock and the translator.
import type { Interrupt } from "@ag-ui/core";
import { canonicalJson, isObject } from "./json.js";
import { OPERATOR_TEXTS } from "../messages.js";

/** The only input fields that are kept, persisted and shown to clients; anything else A2A sends is dropped. */
export const PERSISTED_INPUT_KEYS: ReadonlySet<string> = new Set([
  "schemaVersion", "kind", "requestTaskId", "contextId", "inputId", "toolUseId", "toolName", "title", "purpose",
  "effect", "target", "isReadOnly", "prompt", "safeSummary", "options", "language", "deploymentSummary", "scope",
  "subPipelineId", "operation", "displayParameters", "allowFreeText", "freeTextPrompt", "required", "selector",
]);

const DEPLOYMENT_ACTIONS = new Set(["confirm", "adjust", "reselect", "cancel"]);

export type InputValue = Record<string, unknown> & { inputId: string };

export interface RequiredInput {
  value: InputValue;
  /** Published by a concurrent pipeline wait: answered with SendMessage rather than a stream. */
  sideband: boolean;
}

/** Localizes one of the operators' English texts (OPERATOR_TEXTS, or a RunError's message); unknown text stays as is. */
export type Translate = (english: string, language?: string) => string;

/** Required inputs of one frame's iac_code metadata, allowlist-filtered, deduplicated, in order. */
const NONE: RequiredInput[] = [];

export function requiredInputs(iacCode: Record<string, unknown> | undefined): RequiredInput[] {
  // Hot path: almost every frame carries neither key.
  if (!iacCode || (iacCode.input === undefined && iacCode.pendingPermissions === undefined)) return NONE;
  const found: RequiredInput[] = [];
  const seen = new Set<string>();
  const add = (raw: unknown, fromPendingList: boolean) => {
    if (!isObject(raw) || raw.required !== true) return;
    const value = filterInput(raw);
    if (seen.has(value.inputId)) {
      if (fromPendingList) found.find((f) => f.value.inputId === value.inputId)!.sideband = true;
      return;
    }
    seen.add(value.inputId);
    const sideband = fromPendingList || raw.scope === "candidate" || typeof raw.subPipelineId === "string";
    found.push({ value, sideband });
  };
  add(iacCode.input, false);
  const pending = iacCode.pendingPermissions;
  if (Array.isArray(pending)) for (const item of pending) add(item, true);
  return found;
}

function filterInput(raw: Record<string, unknown>): InputValue {
  const value: Record<string, unknown> = {};
  for (const key of Object.keys(raw)) {
    if (PERSISTED_INPUT_KEYS.has(key)) value[key] = structuredClone(raw[key]);
  }
  if (typeof value.inputId !== "string" || value.inputId === "") {
    // Inputs without an id are keyed by their content so repeated sightings stay one interrupt.
    value.inputId = `input-${hashKey(canonicalJson(value))}`;
  }
  return value as InputValue;
}

function hashKey(text: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) >>> 0;
  }
  return h1.toString(16).padStart(8, "0") + h2.toString(16).padStart(8, "0");
}

export interface StandardOption {
  id: string;
  title: string;
}

export function standardOptions(options: unknown): StandardOption[] {
  if (!Array.isArray(options)) return [];
  const result: StandardOption[] = [];
  const used = new Map<string, number>();
  options.forEach((option, index) => {
    let id: string;
    let title: string;
    if (isObject(option)) {
      id = "id" in option ? String(option.id) : "candidate_index" in option ? String(option.candidate_index) : String(index);
      const label = option.label ?? option.name ?? option.title;
      title = typeof label === "string" && label !== "" ? label : id;
    } else {
      id = String(option);
      title = id;
    }
    if (id === "") id = `option-${index + 1}`;
    const count = used.get(id) ?? 0;
    used.set(id, count + 1);
    if (count > 0) id = `${id}-${count + 1}`;
    result.push({ id, title });
  });
  return result;
}

const SELECTED_ID = (option: StandardOption, withOverrides: boolean) => ({
  type: "object",
  properties: {
    selectedId: { type: "string", const: option.id, title: option.title },
    ...(withOverrides ? { parameter_overrides: { type: "object" } } : {}),
  },
  required: ["selectedId"],
  additionalProperties: false,
});

const FREE_TEXT = {
  type: "object",
  properties: { freeText: { type: "string", minLength: 1 } },
  required: ["freeText"],
  additionalProperties: false,
};

export const PERMISSION_SCHEMA = {
  type: "object",
  properties: { decision: { type: "string", enum: ["allow_once", "deny"] } },
  required: ["decision"],
  additionalProperties: false,
};

export function responseSchemaFor(value: InputValue): Record<string, unknown> {
  const kind = typeof value.kind === "string" ? value.kind : "input_required";
  const options = standardOptions(value.options);
  if (kind === "permission") return PERMISSION_SCHEMA;
  if (kind === "cloud_resource_selection") {
    return {
      oneOf: [
        {
          type: "object",
          properties: { value: { type: "string", minLength: 1 }, label: { type: "string" } },
          required: ["value"],
          additionalProperties: false,
        },
        FREE_TEXT,
      ],
    };
  }
  if (kind === "deployment_confirmation") {
    const actions = deploymentActions(value.options);
    return {
      oneOf: [
        ...options.map((o) => SELECTED_ID(o, true)),
        {
          type: "object",
          properties: { action: { type: "string", enum: actions }, parameter_overrides: { type: "object" } },
          required: ["action"],
          additionalProperties: false,
        },
      ],
    };
  }
  const branches: Record<string, unknown>[] = options.map((o) => SELECTED_ID(o, false));
  if (value.allowFreeText || options.length === 0) branches.push(FREE_TEXT);
  return { oneOf: branches };
}

/** Actions of a deployment confirmation; a malformed option list is a protocol error, not a UI guess. */
export function deploymentActions(options: unknown): string[] {
  if (!Array.isArray(options) || options.length === 0) throw new Error("deployment_confirmation needs options");
  const actions = new Set<string>();
  const ids = new Set<string>();
  for (const option of options) {
    if (!isObject(option) || typeof option.id !== "string" || option.id === "" || option.id.length > 200) {
      throw new Error("deployment_confirmation option needs an id");
    }
    if (ids.has(option.id)) throw new Error("deployment_confirmation option ids must be unique");
    ids.add(option.id);
    if (typeof option.action !== "string" || !DEPLOYMENT_ACTIONS.has(option.action)) {
      throw new Error("deployment_confirmation option needs a known action");
    }
    actions.add(option.action);
  }
  return [...actions].sort();
}

function interruptMessage(value: InputValue, translate: Translate): string {
  const language = typeof value.language === "string" ? value.language : undefined;
  const prompt = typeof value.prompt === "string" && value.prompt !== "" ? value.prompt : undefined;
  if (value.kind === "permission") {
    const title = typeof value.title === "string" && value.title !== "" ? value.title : undefined;
    return prompt ?? title ?? translate(OPERATOR_TEXTS["interrupt.permissionRequired"], language);
  }
  const head = prompt ?? translate(OPERATOR_TEXTS["interrupt.inputRequired"], language);
  if (value.kind === "cloud_resource_selection") return head;
  const options = standardOptions(value.options);
  return options.length === 0 ? head : [head, ...options.map((o) => `- ${o.id}: ${o.title}`)].join("\n");
}

export function buildInterrupt(value: InputValue, translate: Translate, expiresAt?: string): Interrupt {
  const interrupt: Interrupt = {
    id: value.inputId,
    reason: value.kind === "permission" ? "tool_call" : "input_required",
    message: interruptMessage(value, translate),
    responseSchema: responseSchemaFor(value),
    metadata: { schemaVersion: 1, ...value, standardOptions: standardOptions(value.options) },
  };
  if (typeof value.toolUseId === "string" && value.toolUseId !== "") interrupt.toolCallId = value.toolUseId;
  if (expiresAt !== undefined) interrupt.expiresAt = expiresAt;
  return interrupt;
}
