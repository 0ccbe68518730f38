// The `message.metadata.iac_code` object the kernel reads on every turn (reference-adapter §4.1–4.2).
// Everything travels in message.metadata: the kernel ignores message.metadata entirely as soon as
// params.metadata is non-empty (a2a-upstream §2.2), so the gateway never sends params.metadata.
import { createHash } from "node:crypto";
import type { A2AMessage, A2APart, JsonObject } from "../../operators/types.js";

/** The validated `forwardedProps.iacCode` values that reach the kernel, plus the resolved cwd and language. */
export interface RequestMetadataInput {
  cwd: string;
  rosInvocationId: string;
  /** Already normalised to the 2-letter tag; always sent. */
  language: string;
  model?: string;
  llmApiKey?: string;
  llmHeaders?: Record<string, string>;
  thinking?: { enabled: boolean; effort?: string; budget?: number };
  userId?: string;
  channel?: string;
  candidatePresentation?: "standard" | "rich";
  runMode?: "normal" | "pipeline";
  pipelineName?: string;
  cleanupOnly: boolean;
  alibabaCloud?: { accessKeyId?: string; accessKeySecret?: string; securityToken?: string; regionId?: string };
  /** Undocumented guidance / handoff keys of the reference adapter, passed through unchanged. */
  guidanceId?: string;
  executionFence?: JsonObject;
  inputDigest?: string;
}

/**
 * Keys whose values are secrets. The kernel echoes the user message, metadata included, into
 * Task.history (a2a-upstream §2.3), so anything relayed from it must have these stripped.
 */
export const SECRET_METADATA_KEYS: readonly string[] = Object.freeze([
  "iac_code_api_key",
  "llm_headers",
  "alibaba_cloud_access_key_id",
  "alibaba_cloud_access_key_secret",
  "alibaba_cloud_security_token",
]);

/** Key order follows the reference adapter's dict; `undefined` values are dropped like its `None`s. */
export function buildIacCodeMetadata(input: RequestMetadataInput): Record<string, unknown> {
  const metadata: Record<string, unknown> = {
    user_id: input.userId,
    channel: input.channel,
    preferredLanguage: input.language,
    candidatePresentation: input.candidatePresentation,
    run_mode: input.runMode,
    pipeline_name: input.pipelineName,
    cleanupOnly: input.cleanupOnly,
    rosInvocationId: input.rosInvocationId,
    guidance_id: input.guidanceId,
    execution_fence: input.executionFence,
    input_digest: input.inputDigest,
    // `{}` is sent on purpose: an explicit empty header set differs from "not given".
    llm_headers: input.llmHeaders,
  };
  if (input.alibabaCloud) {
    metadata.alibaba_cloud_access_key_id = input.alibabaCloud.accessKeyId;
    metadata.alibaba_cloud_access_key_secret = input.alibabaCloud.accessKeySecret;
    metadata.alibaba_cloud_security_token = input.alibabaCloud.securityToken;
    metadata.alibaba_cloud_region_id = input.alibabaCloud.regionId;
  }
  metadata.cwd = input.cwd;
  // The kernel requires non-blank values for these; a blank one would only be rejected or ignored there.
  metadata.iac_code_model = nonBlank(input.model);
  metadata.iac_code_api_key = nonBlank(input.llmApiKey);
  if (input.thinking) metadata.thinking = thinkingPolicy(input.thinking);
  return dropUndefined(metadata);
}

/** Deterministic per thread, so every run of a thread continues the same kernel session. */
export function contextIdForThread(threadId: string): string {
  return "agui-" + createHash("sha256").update(threadId, "utf8").digest("hex").slice(0, 40);
}

export function buildUserMessage(args: {
  messageId: string;
  contextId: string;
  taskId?: string;
  parts: A2APart[];
  metadata: Record<string, unknown>;
}): A2AMessage {
  const message: A2AMessage = {
    messageId: args.messageId,
    role: "ROLE_USER",
    parts: args.parts,
    metadata: { iac_code: args.metadata },
    contextId: args.contextId,
  };
  // A new turn must omit taskId (a finished task cannot take another turn); only resumes set it.
  if (args.taskId !== undefined) message.taskId = args.taskId;
  return message;
}

function thinkingPolicy(thinking: NonNullable<RequestMetadataInput["thinking"]>): Record<string, unknown> {
  const policy: Record<string, unknown> = { enabled: thinking.enabled };
  const effort = nonBlank(thinking.effort);
  if (effort !== undefined) policy.effort = effort;
  if (Number.isInteger(thinking.budget) && (thinking.budget as number) > 0) policy.budget = thinking.budget;
  return policy;
}

function nonBlank(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

/** A copy without the `undefined` values; not `delete`, which turns the object into a dictionary several times its size. */
function dropUndefined(record: Record<string, unknown>): Record<string, unknown> {
  const defined: Record<string, unknown> = {};
  for (const key of Object.keys(record)) if (record[key] !== undefined) defined[key] = record[key];
  return defined;
}
