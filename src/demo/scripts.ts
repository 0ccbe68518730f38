// The built-in demo agent: what `agui-gateway --demo` talks to. No LLM and no network; every text is
// derived from the user's prompt, and the frames follow iac-code's normal-mode catalogue
// (a2a-upstream.md §3.2, §4.1, §4.2, §8a, §8b) so the gateway runs its real projection against it.
import { RequestMalformedError } from "@a2a-js/sdk/errors";
import type { A2AStreamResponse } from "../../operators/types.js";
import type { ScriptItem, TurnContext, TurnScript } from "./a2a-server.js";
import { Frames, hex, promptOf, quoted } from "./demo-frames.js";
import { permissionAnswerOf, validateAnswer, type Decision, type PendingPermission } from "./permission-answer.js";
import { pipelineAnswerTurn, pipelineFirstTurn, wantsPipeline, type PipelineWait } from "./pipeline-script.js";

export interface DemoScriptOptions {
  /** Fixed pause between frames in ms. Default: a 10–40 ms rhythm so a human sees it stream. */
  frameDelayMs?: number;
}

const RHYTHM_MS = [10, 25, 40, 15, 30, 20];

/**
 * The demo's iac-code session for a context, derived from the context id alone (UUID-shaped, like iac-code's). The
 * demo keeps no conversation, so nothing is lost by this; what it buys is that a restarted demo, or the demo of
 * another replica, names the same session for a thread the gateway already knows, which the gateway's identity
 * rule (a session that changes mid-thread is A2A_PROTOCOL_ERROR) requires of any kernel.
 */
export function demoSessionId(contextId: string): string {
  const h = hex(`demo-session:${contextId}`, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export function createDemoScript(options: DemoScriptOptions = {}): TurnScript {
  const pending = new Map<string, PendingPermission>();
  const selections = new Map<string, PipelineWait>();
  let pauses = 0;

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
    const f = new Frames(turn, demoSessionId(turn.contextId));
    const selection = selections.get(turn.taskId);
    if (selection) {
      // A pipeline parked at its candidate selection: the answer is an ordinary text message.
      selections.delete(turn.taskId);
      yield* paced(pipelineAnswerTurn(turn, demoSessionId(turn.contextId), selection, promptOf(turn.userMessage)));
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
      const first = pipelineFirstTurn(turn, demoSessionId(turn.contextId), quoted(prompt));
      selections.set(turn.taskId, first.wait);
      yield* paced(first.frames);
      return;
    }
    const frames = /deploy/i.test(prompt) ? deployTurn(turn, f, prompt) : normalTurn(turn, f, prompt);
    yield* paced(frames);
  };
}


/** What `agui-gateway --demo` serves. Tests should build their own with createDemoScript(). */
export const demoScript: TurnScript = createDemoScript();
