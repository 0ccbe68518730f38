// An interrupt's controls, derived from its responseSchema (what the gateway will accept) and its
// metadata (labels and context). Pure, so the same derivation is unit-tested in Node.
import type { Interrupt } from "@ag-ui/client";

export type ChoiceTone = "primary" | "danger" | "neutral";

export interface InterruptChoice {
  label: string;
  payload: Record<string, unknown>;
  tone: ChoiceTone;
}

export interface TextField {
  /** The payload key the typed text goes into (`freeText`, or `value` for a resource selection). */
  field: string;
  label: string;
}

export interface InterruptForm {
  id: string;
  kind: string;
  title: string;
  message: string;
  details: [string, string][];
  choices: InterruptChoice[];
  text?: TextField;
  expiresAt?: string;
}

type Loose = Record<string, unknown>;
const isObject = (v: unknown): v is Loose => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

const DETAIL_KEYS: [string, string][] = [
  ["toolName", "Tool"],
  ["purpose", "Purpose"],
  ["effect", "Effect"],
  ["target", "Target"],
  ["safeSummary", "Summary"],
];

const NEGATIVE = /^(deny|reject|cancel|no|abort|decline)/i;

export function interruptForm(interrupt: Interrupt): InterruptForm {
  const metadata = isObject(interrupt.metadata) ? interrupt.metadata : {};
  const kind = str(metadata.kind) ?? interrupt.reason ?? "input";
  const labels = optionLabels(metadata);
  const schema = isObject(interrupt.responseSchema) ? interrupt.responseSchema : {};
  const branches = Array.isArray(schema.oneOf) ? schema.oneOf.filter(isObject) : [schema];

  const choices: InterruptChoice[] = [];
  let text: TextField | undefined;
  for (const branch of branches) {
    const properties = isObject(branch.properties) ? branch.properties : {};
    const required = Array.isArray(branch.required) ? branch.required.filter((r): r is string => typeof r === "string") : [];
    for (const field of required) {
      const property = isObject(properties[field]) ? properties[field] : {};
      if (property.const !== undefined) {
        const id = String(property.const);
        choices.push({ label: str(property.title) ?? labels.get(id) ?? humanize(id), payload: { [field]: property.const }, tone: "neutral" });
      } else if (Array.isArray(property.enum)) {
        for (const value of property.enum) {
          const id = String(value);
          choices.push({ label: labels.get(id) ?? humanize(id), payload: { [field]: value }, tone: "neutral" });
        }
      } else if (property.type === "string" && text === undefined && required.length === 1) {
        text = { field, label: field === "freeText" ? "Answer in your own words" : `Enter a ${humanize(field).toLowerCase()}` };
        if (field !== "freeText") choices.push(...valueChoices(metadata, field));
      }
    }
  }
  // First affirmative choice is the primary action; negative ones are marked as such.
  let primaryGiven = false;
  for (const choice of choices) {
    const id = String(Object.values(choice.payload)[0]);
    if (NEGATIVE.test(id)) choice.tone = "danger";
    else if (!primaryGiven) {
      choice.tone = "primary";
      primaryGiven = true;
    }
  }

  const details: [string, string][] = [];
  for (const [k, label] of DETAIL_KEYS) {
    const v = metadata[k];
    if (typeof v === "string" && v !== "") details.push([label, v]);
  }
  const summary = isObject(metadata.deploymentSummary) ? metadata.deploymentSummary : undefined;
  if (summary) {
    for (const [k, label] of [["stackName", "Stack"], ["region", "Region"], ["action", "Action"], ["totalMonthlyCost", "Monthly cost"]] as const) {
      const v = summary[k];
      if (typeof v === "string" && v !== "") details.push([label, v]);
    }
    if (Array.isArray(summary.resources)) {
      const names = summary.resources.filter(isObject).map((r) => [str(r.name), str(r.spec)].filter(Boolean).join(" "));
      if (names.length > 0) details.push(["Resources", names.join(", ")]);
    }
  }

  return {
    id: interrupt.id,
    kind,
    title: str(metadata.title) ?? (kind === "permission" ? "Permission required" : "Input required"),
    message: interrupt.message ?? str(metadata.prompt) ?? "",
    details,
    choices,
    ...(text !== undefined && { text }),
    ...(interrupt.expiresAt !== undefined && { expiresAt: interrupt.expiresAt }),
  };
}

/** id → label from the gateway's normalized `standardOptions`, falling back to the raw `options`. */
function optionLabels(metadata: Loose): Map<string, string> {
  const labels = new Map<string, string>();
  for (const list of [metadata.options, metadata.standardOptions]) {
    if (!Array.isArray(list)) continue;
    for (const option of list) {
      if (!isObject(option)) continue;
      const id = str(option.id) ?? (typeof option.id === "number" ? String(option.id) : undefined);
      const label = str(option.title) ?? str(option.label) ?? str(option.name);
      if (id !== undefined && label !== undefined) labels.set(id, label);
    }
  }
  return labels;
}

/** A resource selection's listed resources as one-click answers. */
function valueChoices(metadata: Loose, field: string): InterruptChoice[] {
  const list = Array.isArray(metadata.options) ? metadata.options : Array.isArray(metadata.resources) ? metadata.resources : [];
  const choices: InterruptChoice[] = [];
  for (const option of list) {
    if (!isObject(option)) continue;
    const value = str(option.value) ?? str(option.id) ?? str(option.resourceId);
    if (value === undefined) continue;
    const label = str(option.label) ?? str(option.name) ?? str(option.title);
    choices.push({ label: label ?? value, payload: { [field]: value, ...(label !== undefined && { label }) }, tone: "neutral" });
  }
  return choices;
}

function humanize(id: string): string {
  const words = id.replace(/[_-]+/g, " ").trim();
  return words === "" ? id : words.charAt(0).toUpperCase() + words.slice(1);
}
