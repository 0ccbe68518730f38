// projectPipeline: envelopes → span and usage parts, STEP_* events, the pipeline signal and the cursor and open-steps
// facts; durable steps reopened on subscribe; a recovery snapshot → ACTIVITY_SNAPSHOT.
import { describe, expect, it } from "vitest";
import { fact } from "../../operators/facts.js";
import { projectPipeline, stepKeyOf, stepName } from "../../operators/projection/project-pipeline.js";
import { runMarbles } from "../harness.js";

const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);
const envelope = (time: number, body: Record<string, unknown>) => ({ type: "A2A_PIPELINE_ENVELOPE", time, envelope: body });
const pipelineSignal = (time: number, body: Record<string, unknown>) => ({ type: "IAC_CODE_SIGNAL", namespace: "pipeline", value: body, timestamp: time });

describe("projectPipeline", () => {
  it("a step opens and finishes, with the cursor and the durable set as facts; text becomes a part in the step's message", () => {
    const started = { eventType: "step_started", sequence: 1, step: { id: "plan" } };
    const text = { eventType: "text_delta", sequence: 2, step: { id: "plan" }, data: { text: "Hi" } };
    const done = { eventType: "step_completed", sequence: 3, step: { id: "plan" } };
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = cold("a 9ms b 9ms c", { a: envelope(0, started), b: envelope(10, text), c: envelope(20, done) });
      expectObservable(src.pipe(projectPipeline({ threadId: "t" }))).toBe("(1SO2) 4ms (34p) 5ms (5FP6)", {
        1: fact("pipelineCursor", { sequence: 1 }),
        S: { type: "STEP_STARTED", stepName: "plan", timestamp: 0 },
        O: fact("openSteps", { openSteps: ["step:plan"] }),
        2: pipelineSignal(0, started),
        3: fact("pipelineCursor", { sequence: 2 }),
        4: { type: "A2A_TEXT", time: 10, delta: "Hi", messageId: "pipeline-message:pipeline-t:pipeline:plan", parallel: true },
        p: pipelineSignal(10, text),
        5: fact("pipelineCursor", { sequence: 3 }),
        P: fact("openSteps", { openSteps: [] }),
        F: { type: "STEP_FINISHED", stepName: "plan", timestamp: 20 },
        6: pipelineSignal(20, done),
      });
    });
  });

  it("reopens durable steps on subscribe; other parts pass untouched", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const state = { type: "A2A_STATE", time: 1, state: "completed" };
      const out = cold("----s", { s: state }).pipe(projectPipeline({ threadId: "t", openSteps: ["step:b", "step:a"] }));
      expectObservable(out).toBe("(AB)s", {
        A: { type: "STEP_STARTED", stepName: "a", timestamp: 0 },
        B: { type: "STEP_STARTED", stepName: "b", timestamp: 0 },
        s: state,
      });
    });
  });

  it("a recovery snapshot: one ACTIVITY_SNAPSHOT under its pipeline run, and its last sequence as the cursor", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const snapshot = { pipelineRunId: "pr-9", lastSequence: 12 };
      const out = cold("a", { a: { type: "A2A_PIPELINE_SNAPSHOT", time: 0, snapshot } }).pipe(projectPipeline({ threadId: "t" }));
      expectObservable(out).toBe("(vc)", {
        v: { type: "ACTIVITY_SNAPSHOT", messageId: "pipeline:pr-9", activityType: "iac-code.pipeline.v1", content: { schemaVersion: 1, pipelineRunId: "pr-9", snapshot }, replace: true, timestamp: 0 },
        c: fact("pipelineCursor", { sequence: 12 }),
      });
    });
  });

  it("step keys: top-level by id, candidates by run id", () => {
    expect(stepKeyOf({ step: { id: "deploying" } })).toBe("step:deploying");
    expect(stepKeyOf({ candidate: { runId: "c-1", id: "c" }, candidateStep: { id: "plan" } })).toBe("candidate:c-1:plan");
    expect(stepKeyOf({ step: { id: "" } })).toBeUndefined();
    expect(stepName("step:deploying")).toBe("deploying");
    expect(stepName("candidate:c-1:plan")).toBe("candidate:c-1:plan");
  });
});
