// Pipeline mode through the whole pipeline (heartbeat off). Alphabet: a RUN_STARTED · S/F STEP_STARTED/FINISHED ·
// s/t/n TEXT_MESSAGE_* · T/A/E/X TOOL_CALL_* · r/m/c/o/z reasoning · u CUSTOM · v ACTIVITY_SNAPSHOT · f RUN_FINISHED.
import { beforeEach, describe, expect, it } from "vitest";
import { createAguiPipeline, isProjectionFact, type AguiPipelineOptions } from "../operators/index.js";
import type { A2AStreamResponse, AguiEvent } from "../operators/types.js";
import { a2aFrames, collectInVirtualTime, trace } from "./harness.js";
import { CA, CS, ST, envelope as E, resetSequence } from "./pipeline-fixtures.js";
import { verifyAguiStream } from "../operators/verify/index.js";

const f = a2aFrames();
const opts: AguiPipelineOptions = { threadId: "t1", runId: "r1", contextId: "ctx-a1", heartbeat: false, newId: () => "x" };

function run(frames: A2AStreamResponse[], extra: Partial<AguiPipelineOptions> = {}): AguiEvent[] {
  const events = collectInVirtualTime(frames, (scheduler) => createAguiPipeline({ ...opts, ...extra, scheduler })) as AguiEvent[];
  expect(verifyAguiStream(events, { strict: true })).toEqual([]);
  return events;
}
const names = (events: AguiEvent[], type: string) =>
  events.filter((e) => e.type === type).map((e) => (e as { stepName?: string; messageId?: string }).stepName ?? (e as { messageId: string }).messageId);

beforeEach(() => resetSequence());

describe("pipeline projection", () => {
  it("steps, a tool, and CUSTOM only for the documented event types", () => {
    const events = run([
      f.pipelineBatch([E("pipeline_started", { scope: "pipeline" }), E("step_started", { step: ST("intent_parsing", 1) })]),
      f.pipeline(E("text_delta", { step: ST("intent_parsing", 1), data: { text: "Understanding" } })),
      f.pipeline(E("tool_started", { step: ST("intent_parsing", 1), data: { toolName: "aliyun_api", toolUseId: "call_p1", input: { action: "DescribeVpcs" } } })),
      f.pipeline(E("tool_result", { step: ST("intent_parsing", 1), data: { toolName: "aliyun_api", toolUseId: "call_p1", isError: false, result: "{}" } })),
      f.pipelineBatch([E("step_completed", { step: ST("intent_parsing", 1) }), E("message_started", {}), E("pipeline_completed", { scope: "pipeline", status: "completed" })], "COMPLETED"),
    ]);
    expect(trace(events)).toBe("a uS st TAE X Funf"); // COMPLETED ends the run in the frame that says so
    expect(names(events, "STEP_STARTED")).toEqual(["intent_parsing"]);
    expect(names(events, "TEXT_MESSAGE_START")).toEqual(["pipeline-message:pipeline-t1:step:step-intent_parsing-1"]);
    const customs = events.filter((e) => e.type === "CUSTOM").map((e) => (e as { value: { eventType: string } }).value.eventType);
    expect(customs).toEqual(["pipeline_started", "pipeline_completed"]);
  });

  it("parallel candidates that share a step id get distinct step names and separate messages", () => {
    const c0 = { step: ST("evaluate_candidates", 3), candidate: CA(0), candidateStep: CS(0), scope: "candidate_step" };
    const c1 = { step: ST("evaluate_candidates", 3), candidate: CA(1), candidateStep: CS(1), scope: "candidate_step" };
    const events = run([
      f.pipelineBatch([E("candidate_step_started", c0), E("candidate_step_started", c1)]),
      f.pipelineBatch([E("text_delta", { ...c0, data: { text: "Plan A" } }), E("text_delta", { ...c1, data: { text: "Plan B" } })]),
      f.pipeline(E("text_delta", { ...c0, data: { text: ": one vswitch" } })),
      f.pipelineBatch([E("candidate_step_completed", c0), E("candidate_step_completed", c1)]),
      f.turnEnd(),
    ]);
    expect(trace(events)).toBe("a SS stst t FF nnf");
    expect(names(events, "STEP_STARTED")).toEqual([
      "candidate:candidate-evaluate-0-1:template_generating",
      "candidate:candidate-evaluate-1-1:template_generating",
    ]);
    const [m0, m1] = names(events, "TEXT_MESSAGE_START");
    expect(m0).not.toBe(m1);
    const text = (id: string | undefined) =>
      events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT" && (e as { messageId: string }).messageId === id).map((e) => (e as { delta: string }).delta).join("");
    expect(text(m0)).toBe("Plan A: one vswitch");
    expect(text(m1)).toBe("Plan B");
  });

  it("closes open steps before an interrupt ends the run, and keeps them durable", () => {
    let durable: string[] = [];
    const events = run(
      [
        f.pipeline(E("step_started", { step: ST("confirm_and_select", 4) })),
        f.status("INPUT_REQUIRED", {
          pipeline: E("input_required", { step: ST("confirm_and_select", 4), status: "input_required" }),
          input: { kind: "candidate_selection", inputId: "input-evt-2", prompt: "Pick a plan", required: true, options: [{ id: "0", label: "Plan A" }, { id: "1", label: "Plan B" }] },
        }),
      ],
      {
        commit: (item) => {
          if (isProjectionFact(item) && item.fact === "openSteps") durable = item.openSteps;
        },
      },
    );
    expect(trace(events)).toBe("a S Ff");
    expect(durable).toEqual(["step:confirm_and_select"]);
    const interrupt = (events.at(-1) as { outcome: { interrupts: { message: string; responseSchema: unknown }[] } }).outcome.interrupts[0]!;
    expect(interrupt.message).toBe("Pick a plan\n- 0: Plan A\n- 1: Plan B");
    expect(interrupt.responseSchema).toMatchObject({ oneOf: [{ properties: { selectedId: { const: "0" } } }, { properties: { selectedId: { const: "1" } } }] });
  });

  it("reopens durable steps right after RUN_STARTED of the resume; an orphan completion is a zero-length pair", () => {
    const events = run(
      [
        f.pipelineBatch([E("input_received", { step: ST("confirm_and_select", 4) }), E("step_completed", { step: ST("confirm_and_select", 4) })]),
        f.pipeline(E("step_completed", { step: ST("deploying", 5) })),
        f.turnEnd(),
      ],
      { openSteps: ["step:confirm_and_select", "step:deploying"], taskId: "task-a1" },
    );
    expect(trace(events)).toBe("aSS F F f");
    expect(names(events, "STEP_STARTED")).toEqual(["confirm_and_select", "deploying"]);
    const orphan = run([f.pipeline(E("step_completed", { step: ST("ghost", 9) })), f.turnEnd()]);
    expect(trace(orphan)).toBe("a SF f");
    expect(orphan[1]!.timestamp).toBe(orphan[2]!.timestamp);
  });

  it("a recovery snapshot becomes ACTIVITY_SNAPSHOT, then the missed events (new ids below the cursor fill the gap)", () => {
    resetSequence(20);
    const missed = [E("stack_progress", { step: ST("deploying", 5) }, "evt-late"), E("stack_progress", { step: ST("deploying", 5) }, null)];
    (missed[1] as { sequence: number }).sequence = 3; // id-less and below the cursor: already delivered
    const events = run(
      [
        f.status("WORKING", {
          pipelineSnapshot: { pipelineRunId: "ctx-p1", lastSequence: 24, status: "input_required" },
          pipelineBatch: { events: missed },
        }),
        f.turnEnd(),
      ],
      { pipelineSequence: 10 },
    );
    expect(trace(events)).toBe("a vu f");
    expect(events[1]).toMatchObject({
      type: "ACTIVITY_SNAPSHOT",
      messageId: "pipeline:ctx-p1",
      activityType: "iac-code.pipeline.v1",
      content: { schemaVersion: 1, pipelineRunId: "ctx-p1", snapshot: { lastSequence: 24 } },
      replace: true,
    });
    expect((events[2] as { value: { eventId: string } }).value.eventId).toBe("evt-late");
  });

  it("pipeline usage envelopes are summed into RUN_FINISHED.usage per provider and model", () => {
    const usage = (n: number) => E("usage", { data: { provider: "p", model: "m", inputTokens: n, outputTokens: 1, totalTokens: n + 1 } });
    const events = run([f.pipelineBatch([usage(10), usage(5)]), f.turnEnd()]);
    expect((events.at(-1) as { usage: unknown }).usage).toEqual([{ provider: "p", model: "m", inputTokens: 15, outputTokens: 2, totalTokens: 17, cachedInputTokens: 0 }]);
  });
});
