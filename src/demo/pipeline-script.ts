// The demo's pipeline mode (`forwardedProps.iacCode.runMode: "pipeline"`): the envelope wire of
// `iac-code a2a` with IAC_CODE_MODE=pipeline (a2a-upstream.md §7, §8c) — top-level steps, two parallel
// candidates of one sub-pipeline whose texts interleave, a candidate selection interrupt, then stack
// progress and completion with its backup acks arriving out of sequence order.
import type { A2AStreamResponse, JsonObject } from "../../operators/types.js";
import type { TurnContext } from "./a2a-server.js";

const STEPS = ["intent_parsing", "architecture_planning", "evaluate_candidates", "confirm_and_select", "deploying"];
const PLANS = [
  { name: "Plan A", summary: "One vSwitch in a single zone", cost: "0.00 CNY" },
  { name: "Plan B", summary: "Two vSwitches across two zones", cost: "0.00 CNY" },
];

export interface PipelineWait {
  contextId: string;
  inputId: string;
  nextSequence: number;
}

/** Builds envelopes for one task, numbering them like the kernel's per-context journal. */
class Envelopes {
  private sequence: number;

  constructor(
    private readonly turn: TurnContext,
    private readonly sessionId: string,
    startAt = 0,
  ) {
    this.sequence = startAt;
  }

  get last(): number {
    return this.sequence;
  }

  make(eventType: string, fields: JsonObject = {}, skip = 0): JsonObject {
    this.sequence += 1 + skip; // coalesced deltas leave gaps in the wire sequence
    return {
      schemaVersion: "1.0",
      extensionUri: "urn:iac-code:a2a:pipeline-events:v1",
      eventId: `evt-${this.turn.taskId.slice(0, 8)}-${this.sequence}`,
      sequence: this.sequence,
      createdAt: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
      eventType,
      scope: "step",
      status: "working",
      pipelineRunId: this.turn.contextId,
      taskId: this.turn.taskId,
      contextId: this.turn.contextId,
      pipelineName: "selling",
      iacCodeSessionId: this.sessionId,
      data: {},
      ...fields,
    };
  }

  frame(state: string, iac: JsonObject): A2AStreamResponse {
    return {
      statusUpdate: {
        taskId: this.turn.taskId,
        contextId: this.turn.contextId,
        status: { state },
        metadata: { iac_code: iac },
      },
    };
  }

  one(envelope: JsonObject, state = "TASK_STATE_WORKING", extra: JsonObject = {}): A2AStreamResponse {
    return this.frame(state, { pipeline: envelope, ...extra });
  }

  batch(events: JsonObject[], state = "TASK_STATE_WORKING", extra: JsonObject = {}): A2AStreamResponse {
    return this.frame(state, {
      pipelineBatch: { schemaVersion: "1.0", extensionUri: "urn:iac-code:a2a:pipeline-events:v1", events },
      ...extra,
    });
  }
}

const step = (id: string) => ({ id, runId: `step-${id}-1`, attempt: 1, index: STEPS.indexOf(id) + 1, total: STEPS.length });
const candidate = (k: number) => ({ id: "evaluate", runId: `candidate-evaluate-${k}-1`, index: k, attempt: 1, name: PLANS[k]!.name });
const candidateStep = (k: number) => ({ id: "template_generating", runId: `candidate-evaluate-${k}-1-template_generating-1`, attempt: 1 });

/** The first pipeline turn, up to the candidate selection. Returns the frames and the wait to remember. */
export function pipelineFirstTurn(turn: TurnContext, sessionId: string, prompt: string): { frames: A2AStreamResponse[]; wait: PipelineWait } {
  const e = new Envelopes(turn, sessionId);
  const toolUseId = `call_${turn.taskId.slice(0, 8)}_vpcs`;
  const inCandidate = (k: number, scope = "candidate_step") => ({
    scope,
    step: step("evaluate_candidates"),
    candidate: candidate(k),
    ...(scope === "candidate_step" ? { candidateStep: candidateStep(k) } : {}),
  });
  const frames: A2AStreamResponse[] = [
    e.batch([
      e.make("pipeline_started", { scope: "pipeline", data: { pipelineType: "selling", totalSteps: STEPS.length, stepNames: STEPS } }),
      e.make("step_started", { step: step("intent_parsing"), data: { name: "intent_parsing" } }),
    ]),
    e.one(e.make("text_delta", { step: step("intent_parsing"), data: { text: `Understanding "${prompt}"... ` } }, 1)),
    e.one(e.make("tool_started", { step: step("intent_parsing"), data: { toolName: "aliyun_api", toolUseId, input: { product: "Vpc", action: "DescribeVpcs" } } })),
    e.one(e.make("tool_result", { step: step("intent_parsing"), data: { toolName: "aliyun_api", toolUseId, isError: false, result: '{"Vpcs":[]}' } })),
    e.batch([
      e.make("step_completed", { step: step("intent_parsing"), data: { durationS: 1.2 } }),
      e.make("step_started", { step: step("evaluate_candidates"), data: { name: "evaluate_candidates" } }),
      e.make("candidate_started", { ...inCandidate(0, "candidate"), data: { subPipelineId: "evaluate", candidateIndex: 0 } }),
      e.make("candidate_started", { ...inCandidate(1, "candidate"), data: { subPipelineId: "evaluate", candidateIndex: 1 } }),
      e.make("candidate_step_started", { ...inCandidate(0), data: { stepId: "template_generating" } }),
      e.make("candidate_step_started", { ...inCandidate(1), data: { stepId: "template_generating" } }),
    ]),
  ];
  // The two candidates stream at the same time: their texts interleave but never merge.
  const words = PLANS.map((p) => `${p.name}: ${p.summary.toLowerCase()}. `.match(/\S+\s*/g) ?? []);
  for (let i = 0; i < Math.max(words[0]!.length, words[1]!.length); i++) {
    const events = [0, 1].flatMap((k) => (words[k]![i] ? [e.make("text_delta", { ...inCandidate(k), data: { text: words[k]![i] } })] : []));
    frames.push(e.batch(events));
  }
  frames.push(
    e.batch(
      [0, 1].flatMap((k) => [
        e.make("candidate_detail_shown", {
          ...inCandidate(k),
          data: { candidateName: PLANS[k]!.name, summary: PLANS[k]!.summary, costItems: [], totalMonthlyCost: PLANS[k]!.cost, candidateIndex: k },
        }),
        e.make("candidate_step_completed", { ...inCandidate(k), data: { stepId: "template_generating" } }),
        e.make("candidate_completed", { ...inCandidate(k, "candidate"), data: { subPipelineId: "evaluate", candidateIndex: k, failed: false } }),
      ]),
    ),
  );
  const selection = e.make("input_required", {
    step: step("confirm_and_select"),
    status: "input_required",
    data: { stepId: "confirm_and_select", prompt: "Pick a plan", options: PLANS.map((p, k) => ({ candidate_index: k, name: p.name })) },
  });
  const inputId = `input-${selection.eventId as string}`;
  frames.push(
    e.batch(
      [
        e.make("step_completed", { step: step("evaluate_candidates"), data: { durationS: 4.0 } }),
        e.make("step_started", { step: step("confirm_and_select"), data: { name: "confirm_and_select", uiMode: "candidate_selection" } }),
        selection,
      ],
      "TASK_STATE_INPUT_REQUIRED",
      {
        input: {
          schemaVersion: 1,
          kind: "candidate_selection",
          requestTaskId: turn.taskId,
          contextId: turn.contextId,
          inputId,
          prompt: "Pick a plan",
          required: true,
          options: PLANS.map((p, k) => ({ id: String(k), label: p.name })),
        },
      },
    ),
  );
  return { frames, wait: { contextId: turn.contextId, inputId, nextSequence: e.last } };
}

/** The turn after the selection: deployment with stack progress, then completion and its acks. */
export function pipelineAnswerTurn(turn: TurnContext, sessionId: string, wait: PipelineWait, answer: string): A2AStreamResponse[] {
  const e = new Envelopes(turn, sessionId, wait.nextSequence);
  const chosen = PLANS.findIndex((p, k) => p.name === answer || String(k) === answer || String(k + 1) === answer);
  const plan = PLANS[chosen < 0 ? 0 : chosen]!;
  const stack = { toolUseId: `call_${turn.taskId.slice(0, 8)}_deploy`, stackId: `stk-${turn.taskId.slice(0, 6)}`, stackName: "demo-vswitch" };
  const progress = (status: string, pct: number) =>
    e.one(e.make("stack_progress", { step: step("deploying"), data: { ...stack, status, progressPercentage: pct, resources: [], elapsedSeconds: pct / 10 } }));
  const frames: A2AStreamResponse[] = [
    e.batch([
      e.make("input_received", { step: step("confirm_and_select"), data: { kind: "candidate_selection", selectedValue: plan.name, selectedIndex: chosen } }),
      e.make("candidate_selected", { step: step("confirm_and_select"), data: { candidateName: plan.name, candidateIndex: chosen } }),
      e.make("step_completed", { step: step("confirm_and_select"), data: { durationS: 0.5 } }),
      e.make("step_started", { step: step("deploying"), data: { name: "deploying" } }),
    ]),
    e.one(e.make("text_delta", { step: step("deploying"), data: { text: `Deploying ${plan.name}. ` } })),
    progress("CREATE_IN_PROGRESS", 50),
    progress("CREATE_COMPLETE", 100),
    e.one(e.make("step_completed", { step: step("deploying"), data: { durationS: 9.0 } })),
  ];
  // Terminal publication: committed copies go out live, each acked; the second ack overtakes its frame.
  e.make("pipeline_completed", { scope: "pipeline", status: "completed", visibility: "pending_backup" });
  e.make("pipeline_handoff_ready", { scope: "pipeline", status: "completed", visibility: "pending_backup" });
  const completed = e.make("pipeline_completed", { scope: "pipeline", status: "completed", visibility: "committed", data: { totalSteps: STEPS.length } });
  const handoff = e.make("pipeline_handoff_ready", {
    scope: "pipeline",
    status: "completed",
    visibility: "committed",
    data: { action: "switch_to_normal", targetMode: "normal", outcome: "completed", summary: `${plan.name} deployed.` },
  });
  const ack = (of: JsonObject) =>
    e.make("backup_committed", { scope: "pipeline", status: "completed", data: { committedEventId: of.eventId, committedEventType: of.eventType, committedSequence: of.sequence } });
  const ackCompleted = ack(completed);
  const ackHandoff = ack(handoff);
  frames.push(
    e.one(completed, "TASK_STATE_COMPLETED"),
    e.one(ackCompleted, "TASK_STATE_COMPLETED"),
    e.one(handoff, "TASK_STATE_COMPLETED"),
    e.one(ackHandoff, "TASK_STATE_COMPLETED"),
  );
  return frames;
}

export function wantsPipeline(metadata: JsonObject | undefined): boolean {
  const iac = metadata?.iac_code as JsonObject | undefined;
  return iac?.run_mode === "pipeline" || iac?.runMode === "pipeline";
}
