// The built-in demo agent: what `agui-gateway --demo` talks to. No LLM and no network; every text is
// derived from the user's prompt, and the frames follow iac-code's normal-mode catalogue
// (a2a-upstream.md §3.2, §4.1, §4.2, §8a, §8b) so the gateway runs its real projection against it.
import { createHash, randomUUID } from "node:crypto";
import { RequestMalformedError } from "@a2a-js/sdk/errors";
import type { A2AMessage, A2AStreamResponse, JsonObject } from "../../operators/types.js";
import type { ScriptItem, TurnContext, TurnScript } from "./a2a-server.js";
import { pipelineAnswerTurn, pipelineFirstTurn, wantsPipeline, type PipelineWait } from "./pipeline-script.js";
import { isObject } from "../../operators/lib/json.js";

export interface DemoScriptOptions {
  /** Fixed pause between frames in ms. Default: a 10–40 ms rhythm so a human sees it stream. */
  frameDelayMs?: number;
}

/** A permission the agent is waiting for; one per task (iac-code queues the rest). */
interface PendingPermission {
  contextId: string;
  inputId: string;
  toolUseId: string;
  toolName: string;
  stackName: string;
  regionId: string;
}

type Decision = "allow_once" | "deny";

const ANSWER_KEYS = ["decision", "inputId", "kind", "requestTaskId", "schemaVersion", "toolUseId"];
const RHYTHM_MS = [10, 25, 40, 15, 30, 20];

/** Stable hex derived from a seed, so ids are reproducible per task. */
function hex(seed: string, length: number): string {
  return createHash("sha256").update(seed).digest("hex").slice(0, length);
}

function promptOf(message: A2AMessage): string {
  return (message.parts ?? [])
    .map((part) => (typeof part.text === "string" ? part.text : ""))
    .join("")
    .trim();
}

/** The prompt as it is quoted back: one line, bounded. */
function quoted(prompt: string): string {
  const line = prompt.replace(/\s+/g, " ");
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

/** Model-like deltas: a few words per chunk, spaces kept, so joining them gives the text back. */
function deltas(text: string): string[] {
  const words = text.match(/\S+\s*/g) ?? [];
  const chunks: string[] = [];
  for (let i = 0; i < words.length; i += 3) chunks.push(words.slice(i, i + 3).join(""));
  return chunks;
}


function now(): string {
  return new Date().toISOString();
}

/** Frame builders bound to one turn; every status frame carries the context's session id. */
class Frames {
  constructor(
    private readonly turn: TurnContext,
    private readonly sessionId: string,
  ) {}

  status(
    state: string,
    opts: { iac?: JsonObject; text?: string; messageId?: string; timestamp?: boolean; session?: boolean } = {},
  ): A2AStreamResponse {
    const { taskId, contextId } = this.turn;
    const message =
      opts.text === undefined
        ? undefined
        : { messageId: opts.messageId ?? `${taskId}-message`, contextId, taskId, role: "ROLE_AGENT", parts: [{ text: opts.text }] };
    const iac: JsonObject = { ...opts.iac };
    if (opts.session !== false) iac.iacCodeSessionId = this.sessionId;
    return {
      statusUpdate: {
        taskId,
        contextId,
        status: { state, ...(opts.timestamp ? { timestamp: now() } : {}), ...(message ? { message } : {}) },
        metadata: { iac_code: iac },
      },
    };
  }

  working(iac: JsonObject): A2AStreamResponse {
    return this.status("TASK_STATE_WORKING", { iac });
  }

  text(text: string): A2AStreamResponse[] {
    return deltas(text).map((chunk) => this.status("TASK_STATE_WORKING", { text: chunk }));
  }

  thinking(texts: string[]): A2AStreamResponse[] {
    return texts.map((text) => this.working({ thinking: { type: "raw_thinking", text } }));
  }

  usage(inputTokens: number, outputTokens: number): A2AStreamResponse {
    return this.working({ usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens } });
  }

  /** The repeat of the whole final assistant text that a delta consumer must skip (§3.2 frame 10). */
  assistantFinal(text: string): A2AStreamResponse {
    return this.status("TASK_STATE_WORKING", {
      text,
      messageId: `${this.turn.taskId}-2`,
      timestamp: true,
      iac: { assistantFinal: { complete: true } },
    });
  }

  /** iac-code's "turn finished OK": INPUT_REQUIRED without message and without input. */
  endOfTurn(): A2AStreamResponse {
    return this.status("TASK_STATE_INPUT_REQUIRED", { timestamp: true });
  }
}

export function createDemoScript(options: DemoScriptOptions = {}): TurnScript {
  const sessions = new Map<string, string>();
  const pending = new Map<string, PendingPermission>();
  const selections = new Map<string, PipelineWait>();
  let pauses = 0;

  const sessionFor = (contextId: string): string => {
    let id = sessions.get(contextId);
    if (!id) {
      id = randomUUID();
      sessions.set(contextId, id);
    }
    return id;
  };

  function* paced(frames: A2AStreamResponse[]): Generator<ScriptItem> {
    for (const [i, frame] of frames.entries()) {
      yield frame;
      // No pause after a turn's last frame: the client reads that frame as "parked" (or done) and may
      // answer at once, while an executor still sleeping would own the task's event bus, and the SDK
      // hands the answer that same bus, which the old turn then closes under it.
      if (i === frames.length - 1) break;
      const delayMs = options.frameDelayMs ?? RHYTHM_MS[pauses++ % RHYTHM_MS.length] ?? 20;
      if (delayMs > 0) yield { delayMs };
    }
  }

  function normalTurn(turn: TurnContext, f: Frames, prompt: string): A2AStreamResponse[] {
    const q = quoted(prompt);
    const toolUseId = `call_${hex(`${turn.taskId}:${turn.turnIndex}:read_file`, 24)}`;
    const toolInput = { path: "README.md" };
    const final = `The workspace is a demo, so nothing was changed. For "${q}" I would list the resources, write a ROS template and validate it before any deployment.`;
    return [
      f.status("TASK_STATE_SUBMITTED", { timestamp: true }),
      f.status("TASK_STATE_WORKING", { timestamp: true }),
      ...f.thinking([
        `The user asks: "${q}". `,
        "A read-only look at the workspace is enough to start. ",
        "Then I can outline the answer.",
      ]),
      ...f.text(`I'll help with "${q}". First I will read the workspace README.`),
      f.working({ tool: { status: "started", toolUseId, name: "read_file" } }),
      f.working({ tool: { status: "input_delta", toolUseId, partialJsonLength: JSON.stringify(toolInput).length } }),
      f.working({
        tool: {
          status: "input_complete",
          toolUseId,
          name: "read_file",
          toolInput,
          inputSummary: { tool_name: "read_file", fields: { path: { type: "str" } } },
        },
      }),
      f.usage(812, 40),
      f.working({
        tool: {
          status: "completed",
          toolUseId,
          name: "read_file",
          result: "# Demo workspace\nServed by the agui-gateway demo upstream; it holds no real infrastructure.",
        },
      }),
      ...f.text(final),
      f.usage(934, 38),
      f.assistantFinal(final),
      f.endOfTurn(),
    ];
  }

  function deployTurn(turn: TurnContext, f: Frames, prompt: string): A2AStreamResponse[] {
    const q = quoted(prompt);
    const { taskId, contextId } = turn;
    const toolUseId = `call_${hex(`${taskId}:${turn.turnIndex}:ros_deploy`, 24)}`;
    const stackName = `demo-${hex(contextId, 6)}`;
    const regionId = "cn-hangzhou";
    const inputId = `permission-${hex(`${taskId}:${toolUseId}`, 32)}`;
    const toolInput = { stackName, regionId, templateUrl: "file://./main.yaml" };
    pending.set(taskId, { contextId, inputId, toolUseId, toolName: "ros_deploy", stackName, regionId });
    const safeSummary = `ros_deploy: ${JSON.stringify({ stackName, regionId })}`;
    return [
      f.status("TASK_STATE_SUBMITTED", { timestamp: true }),
      f.status("TASK_STATE_WORKING", { timestamp: true }),
      ...f.thinking([`The user wants a deployment: "${q}". `, "Deploying changes the cloud, so I must ask first."]),
      ...f.text(`I'll deploy stack ${stackName} to ${regionId}. The template defines one VPC and one vSwitch.`),
      f.working({ tool: { status: "started", toolUseId, name: "ros_deploy" } }),
      f.working({ tool: { status: "input_delta", toolUseId, partialJsonLength: JSON.stringify(toolInput).length } }),
      f.working({
        tool: {
          status: "input_complete",
          toolUseId,
          name: "ros_deploy",
          toolInput,
          inputSummary: {
            tool_name: "ros_deploy",
            fields: { stackName: { type: "str" }, regionId: { type: "str" }, templateUrl: { type: "str" } },
          },
        },
      }),
      f.usage(1204, 96),
      f.status("TASK_STATE_INPUT_REQUIRED", {
        iac: {
          input: {
            schemaVersion: 1,
            kind: "permission",
            requestTaskId: taskId,
            contextId,
            inputId,
            toolUseId,
            toolName: "ros_deploy",
            title: "Deploy ROS stack",
            purpose: "Create the stack the user asked for",
            effect: "cloud_change",
            target: `${regionId}; stack: ${stackName}`,
            isReadOnly: false,
            prompt: `Deploy stack ${stackName} to ${regionId} - allow once?`,
            safeSummary,
            options: [
              { id: "allow_once", label: "Allow once" },
              { id: "deny", label: "Deny" },
            ],
            language: "en",
            required: true,
            deploymentSummary: {
              candidateName: "Demo VPC",
              action: "create",
              region: regionId,
              stackName,
              template: "main.yaml",
              totalMonthlyCost: "0.00 CNY",
              resources: [
                { name: "Vpc", spec: "ALIYUN::ECS::VPC", monthlyCost: "0.00 CNY" },
                { name: "VSwitch", spec: "ALIYUN::ECS::VSwitch", monthlyCost: "0.00 CNY" },
              ],
            },
          },
          permission: { autoApproved: false, pending: true, toolName: "ros_deploy", toolUseId },
        },
      }),
    ];
  }

  function answerTurn(turn: TurnContext, f: Frames, wait: PendingPermission, decision: Decision): A2AStreamResponse[] {
    const { inputId, toolUseId, toolName, stackName, regionId } = wait;
    const allowed = decision === "allow_once";
    const final = allowed
      ? `Stack ${stackName} is deployed in ${regionId} with one VPC and one vSwitch.`
      : `Understood, I did not deploy ${stackName}. Nothing was changed in ${regionId}.`;
    return [
      f.status("TASK_STATE_WORKING", {
        timestamp: true,
        session: false,
        iac: { inputReceived: { kind: "permission", inputId, toolUseId, decision } },
      }),
      f.working({ inputReceived: { kind: "permission", inputId, toolUseId } }),
      f.working({
        tool: allowed
          ? { status: "completed", toolUseId, name: toolName, result: `Stack ${stackName}: CREATE_COMPLETE (2 resources)` }
          : { status: "failed", toolUseId, name: toolName, result: "Permission denied by the user; ros_deploy was not executed." },
      }),
      ...f.text(final),
      f.usage(1380, 42),
      f.assistantFinal(final),
      f.endOfTurn(),
    ];
  }

  return async function* demoTurn(turn: TurnContext): AsyncGenerator<ScriptItem> {
    const f = new Frames(turn, sessionFor(turn.contextId));
    const selection = selections.get(turn.taskId);
    if (selection) {
      // A pipeline parked at its candidate selection: the answer is an ordinary text message.
      selections.delete(turn.taskId);
      yield* paced(pipelineAnswerTurn(turn, sessionFor(turn.contextId), selection, promptOf(turn.userMessage)));
      return;
    }
    const wait = pending.get(turn.taskId);
    const answer = permissionAnswerOf(turn.userMessage);
    if (wait) {
      // Throwing before the first frame makes the server answer with a plain -32602 body.
      const decision = validateAnswer(turn, wait);
      pending.delete(turn.taskId);
      yield* paced(answerTurn(turn, f, wait, decision));
      return;
    }
    if (answer) throw new RequestMalformedError("permission_resume_invalid: no pending permission for this task");
    const prompt = promptOf(turn.userMessage);
    if (!prompt) {
      yield f.status("TASK_STATE_FAILED", {
        timestamp: true,
        messageId: `${turn.taskId}-4`,
        text: "The message has no text to work on.",
      });
      return;
    }
    if (wantsPipeline(turn.userMessage.metadata)) {
      const first = pipelineFirstTurn(turn, sessionFor(turn.contextId), quoted(prompt));
      selections.set(turn.taskId, first.wait);
      yield* paced(first.frames);
      return;
    }
    const frames = /deploy/i.test(prompt) ? deployTurn(turn, f, prompt) : normalTurn(turn, f, prompt);
    yield* paced(frames);
  };
}

/** The data of a permission answer part, if the message carries one (validated separately). */
function permissionAnswerOf(message: A2AMessage): JsonObject | undefined {
  for (const part of message.parts ?? []) {
    if (isObject(part.data) && part.data.kind === "permission") return part.data;
  }
  return undefined;
}

/** iac-code's resume checks (a2a-upstream §4.2); every violation is -32602. */
function validateAnswer(turn: TurnContext, wait: PendingPermission): Decision {
  const invalid = (why: string): never => {
    throw new RequestMalformedError(`permission_resume_invalid: ${why}`);
  };
  const mismatch = (field: string): never => {
    throw new RequestMalformedError(`input_response_mismatch: ${field} does not match the pending permission`);
  };
  const message = turn.userMessage;
  if (message.role !== "ROLE_USER") invalid("role must be ROLE_USER");
  const parts = message.parts ?? [];
  if (parts.length !== 1) invalid("a permission answer must have exactly one part");
  const part = parts[0];
  if (!part || part.mediaType !== "application/json" || !isObject(part.data)) {
    return invalid("the part must be a DataPart with mediaType application/json");
  }
  const data = part.data;
  const keys = Object.keys(data).sort();
  if (keys.length !== ANSWER_KEYS.length || keys.some((key, i) => key !== ANSWER_KEYS[i])) {
    invalid(`the answer must have exactly the keys ${ANSWER_KEYS.join(", ")}`);
  }
  if (data.schemaVersion !== 1) invalid("schemaVersion must be 1");
  if (data.kind !== "permission") invalid("kind must be permission");
  if (data.decision !== "allow_once" && data.decision !== "deny") invalid("decision must be allow_once or deny");
  if (data.requestTaskId !== turn.taskId) mismatch("requestTaskId");
  if (turn.contextId !== wait.contextId) mismatch("contextId");
  if (data.inputId !== wait.inputId) mismatch("inputId");
  if (data.toolUseId !== wait.toolUseId) mismatch("toolUseId");
  return data.decision as Decision;
}

/** What `agui-gateway --demo` serves. Tests should build their own with createDemoScript(). */
export const demoScript: TurnScript = createDemoScript();
