// Validation of the POST / body: the open AG-UI RunAgentInput envelope plus the strict
// forwardedProps.iacCode extension. Every failure is an InputError whose message names the field,
// built only from the catalog texts of src/input-error.ts.
import type { Message } from "@ag-ui/core";
import { z } from "zod";
import type { RequestMetadataInput } from "../a2a/metadata.js";
import {
  INPUT_ERROR_BASES,
  INPUT_ERROR_REASONS,
  InputError,
  type InputErrorBase,
  type InputErrorReason,
} from "../input-error.js";
import { isObject } from "../../operators/lib/json.js";

export type AguiMessage = Message;
export type AguiUserMessage = Extract<Message, { role: "user" }>;

const REASON_TEXTS: ReadonlySet<string> = new Set(Object.values(INPUT_ERROR_REASONS));
const R = INPUT_ERROR_REASONS;
const B = INPUT_ERROR_BASES;

/** `forwardedProps.iacCode` after validation: what the kernel receives, as the client spelled it. */
export type IacCodeProps = Omit<RequestMetadataInput, "language" | "guidanceId" | "executionFence" | "inputDigest"> & {
  schemaVersion: 1;
  preferredLanguage?: string;
};

export interface ResumeEntry {
  interruptId: string;
  status: "resolved" | "cancelled";
  payload?: unknown;
}

/**
 * What a run keeps of its request once admitted. The messages were read at admission (the user's message, its
 * parts), and a client sends the whole conversation with every run: kept, it would stay for as long as the run streams.
 */
export type AdmittedRequest = Omit<RunRequest, "messages">;

export function admittedRequest({ messages: _readAtAdmission, ...kept }: RunRequest): AdmittedRequest {
  return kept;
}

export interface RunRequest {
  threadId: string;
  runId: string;
  parentRunId?: string;
  /** The AG-UI version the consumer declared ("1.0" from @ag-ui/client 1.0), if any. */
  protocolVersion?: string;
  messages: AguiMessage[];
  resume?: ResumeEntry[];
  iacCode: IacCodeProps;
  /** How many top-level forwardedProps keys besides iacCode were ignored (counted, never kept). */
  ignoredForwardedProps: number;
}

// --- schemas: every leaf carries its catalog reason as the zod message ---------------------------

const str = () => z.string({ error: R.string });
const nonEmptyStr = () => z.string({ error: R.nonEmptyString }).min(1, { error: R.nonEmptyString });
const bool = () => z.boolean({ error: R.boolean });
const strictObj = <S extends z.core.$ZodLooseShape>(shape: S) => z.strictObject(shape, { error: R.object });
const looseObj = <S extends z.core.$ZodLooseShape>(shape: S) => z.looseObject(shape, { error: R.object });

// Python's len() counts code points, not UTF-16 units; the reference limit is in code points.
const codePointLength = (s: string): number => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

// Ids the gateway keys state by (the thread's file, single-use run ids, pending interrupts): 1 to 256 code
// points of well-formed Unicode, so an unbounded id cannot bloat the state and a lone surrogate cannot be
// replaced by U+FFFD on its way to disk and collide with another id.
const LONE_SURROGATE = /\p{Cs}/u;
// A string the gateway stores or the kernel echoes back (whose incoming ids are bounded alike): at most 256 code points.
const within256 = (s: string) => s.length <= 256 || (s.length <= 512 && codePointLength(s) <= 256);
const boundedStr = () => str().refine(within256, { error: R.length1to256 });

const rosInvocationId = () => str().refine((s) => s.length >= 1 && within256(s), { error: R.length1to256 });

const stateId = () =>
  nonEmptyStr()
    .refine(within256, { error: R.length1to256 })
    .refine((s) => !LONE_SURROGATE.test(s), { error: R.invalid });

const iacCodeSchema = strictObj({
  schemaVersion: z.literal(1, { error: R.numberOne }),
  rosInvocationId: rosInvocationId(),
  cwd: str(),
  model: str().optional(),
  llmApiKey: str().optional(),
  llmHeaders: z.record(z.string(), str(), { error: R.object }).optional(),
  thinking: strictObj({
    enabled: bool().default(false),
    effort: str().optional(),
    budget: z.int({ error: R.positiveInteger }).positive({ error: R.positiveInteger }).optional(),
  }).optional(),
  userId: boundedStr().optional(),
  channel: str().optional(),
  preferredLanguage: str().optional(),
  candidatePresentation: z.enum(["standard", "rich"], { error: R.allowedValue }).optional(),
  runMode: z.enum(["normal", "pipeline"], { error: R.allowedValue }).optional(),
  pipelineName: str().optional(),
  cleanupOnly: bool().default(false),
  alibabaCloud: strictObj({
    accessKeyId: str().optional(),
    accessKeySecret: str().optional(),
    securityToken: str().optional(),
    regionId: str().optional(),
  }).optional(),
});

const MESSAGE_ROLES = ["developer", "system", "assistant", "user", "tool", "activity", "reasoning"] as const;

const messageSchema = looseObj({
  id: boundedStr(),
  role: z.enum(MESSAGE_ROLES, { error: R.allowedValue }),
}).superRefine((message, ctx) => {
  if (message.role !== "user") return;
  const content = (message as { content?: unknown }).content;
  if (typeof content === "string" || Array.isArray(content)) return;
  ctx.addIssue({ code: "custom", path: ["content"], input: content, message: R.invalid });
});

const resumeEntrySchema = looseObj({
  interruptId: stateId(),
  status: z.enum(["resolved", "cancelled"], { error: R.allowedValue }),
  payload: z.unknown().optional(),
  metadata: z.record(z.string(), z.unknown(), { error: R.object }).optional(),
});

// Key order here is the order fields are checked in, so the reported failure is deterministic.
// Optional standard fields accept null as absent, as the AG-UI models do.
const envelopeSchema = looseObj({
  threadId: stateId(),
  runId: stateId(),
  parentRunId: str().nullish(),
  protocolVersion: str().nullish(),
  state: z.custom<unknown>((value) => value !== undefined, { error: R.missing }),
  messages: z.array(messageSchema, { error: R.array }),
  tools: z.array(z.unknown(), { error: R.array }).refine((tools) => tools.length === 0, { error: B.clientTools }),
  context: z.array(z.unknown(), { error: R.array }),
  // Open at the top level: an app shares one `properties` object among its agents (CopilotKit adds
  // a2uiCatalogAvailable, toolChoice, command, …). Only iacCode is ours, and it stays strict.
  forwardedProps: looseObj({ iacCode: iacCodeSchema }),
  resume: z.array(resumeEntrySchema, { error: R.array }).nullish(),
});

function issueToError(issue: z.core.$ZodIssue): InputError {
  const path = issue.path.map(String);
  const base: InputErrorBase = path[0] === "forwardedProps" ? B.forwardedProps : B.envelope;
  if (issue.code === "unrecognized_keys") {
    return new InputError(base, [...path, issue.keys[0] ?? ""].join("."), R.unknownField);
  }
  const field = path.join(".");
  if (issue.message === B.clientTools) return new InputError(B.clientTools, field, undefined, toolNames(issue.input));
  // Issues carry `input` (reportInput); JSON has no undefined, so undefined means the key is absent.
  if (issue.input === undefined) return new InputError(base, field, R.missing);
  const reason = REASON_TEXTS.has(issue.message) ? (issue.message as InputErrorReason) : R.invalid;
  return new InputError(base, field, reason);
}

/** body is already a parsed JSON object. Throws InputError. */
export function parseRunAgentInput(body: Record<string, unknown>): RunRequest {
  const parsed = envelopeSchema.safeParse(body, { reportInput: true });
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw first ? issueToError(first) : new InputError(B.envelope);
  }
  const data = parsed.data;
  const request: RunRequest = {
    threadId: data.threadId,
    runId: data.runId,
    // Messages are passed on as the client sent them; only their envelope shape was checked.
    messages: body["messages"] as AguiMessage[],
    iacCode: data.forwardedProps.iacCode,
    ignoredForwardedProps: Object.keys(data.forwardedProps).filter((key) => key !== "iacCode").length,
  };
  if (typeof data.parentRunId === "string") request.parentRunId = data.parentRunId;
  if (typeof data.protocolVersion === "string") request.protocolVersion = data.protocolVersion;
  if (data.resume) {
    request.resume = data.resume.map((entry) => {
      const out: ResumeEntry = { interruptId: entry.interruptId, status: entry.status };
      if ("payload" in entry) out.payload = entry.payload;
      return out;
    });
  }
  return request;
}

/** A POST /connect body: a RunAgentInput's thread and run ids and, as proof of the binding, its rosInvocationId. */
export interface ConnectInput {
  threadId: string;
  /** Labels the connect stream's own run; it is not remembered. */
  runId: string;
  rosInvocationId?: string;
  preferredLanguage?: string;
}

// Open everywhere but the ids: messages, tools and the rest of forwardedProps are ignored (the gateway rebuilds the
// conversation from the kernel), and a server-side caller may send no forwardedProps at all.
const connectSchema = looseObj({
  threadId: stateId(),
  runId: stateId(),
  forwardedProps: looseObj({
    iacCode: looseObj({ rosInvocationId: rosInvocationId().optional(), preferredLanguage: str().optional() }).optional(),
  }).nullish(),
});

/** body is already a parsed JSON object. Throws InputError. */
export function parseConnectInput(body: Record<string, unknown>): ConnectInput {
  const parsed = connectSchema.safeParse(body, { reportInput: true });
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw first ? issueToError(first) : new InputError(B.envelope);
  }
  const { threadId, runId, forwardedProps } = parsed.data;
  const iacCode = forwardedProps?.iacCode;
  return {
    threadId,
    runId,
    ...(iacCode?.rosInvocationId !== undefined && { rosInvocationId: iacCode.rosInvocationId }),
    ...(iacCode?.preferredLanguage !== undefined && { preferredLanguage: iacCode.preferredLanguage }),
  };
}

/** Reads preferredLanguage without validating anything else (used to localize errors before validation); undefined if absent/not a string. */
export function peekPreferredLanguage(body: Record<string, unknown>): string | undefined {
  const props = body["forwardedProps"];
  if (!isObject(props)) return undefined;
  const iacCode = props["iacCode"];
  if (!isObject(iacCode)) return undefined;
  const language = iacCode["preferredLanguage"];
  return typeof language === "string" ? language : undefined;
}

/** The last message with role "user", wherever it sits in the list. */
export function latestUserMessage(messages: readonly AguiMessage[]): AguiUserMessage | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === "user") return message;
  }
  return undefined;
}

const MAX_LISTED_TOOLS = 10;
const MAX_TOOL_NAME = 64;

/** The names of refused client tools, JSON-quoted (control characters escaped) and bounded in count and length. */
function toolNames(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  const names = tools.flatMap((tool) => (isObject(tool) && typeof tool["name"] === "string" ? [tool["name"]] : []));
  const listed = names.slice(0, MAX_LISTED_TOOLS).map((name) => JSON.stringify(name.length > MAX_TOOL_NAME ? `${name.slice(0, MAX_TOOL_NAME)}…` : name));
  if (names.length > MAX_LISTED_TOOLS) listed.push(`… (${names.length} tools)`);
  return listed;
}

