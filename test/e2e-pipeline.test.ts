// Pipeline mode end to end: two candidates, a selection interrupt, the gateway restarted between the
// interrupt and the resume. Every stream goes through HttpAgent and is schema-checked and verified.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIPELINE_CUSTOM_EVENT_TYPES } from "../operators/index.js";
import { startGateway, type RunningGateway } from "../src/gateway.js";
import { runWithHttpAgent, silentLogger, startStack, type Stack, type WireEvent } from "./helpers/e2e.js";
import { SHIPPED_PACING } from "./helpers/pacing.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";

let stack: Stack<ScriptedA2AServer>;
let stateDir: string;
const gateways: RunningGateway[] = [];

beforeAll(async () => {
  stateDir = await mkdtemp(path.join(tmpdir(), "agui-pipeline-state-"));
  stack = await startStack({ gateway: { stateDir } });
});
afterAll(async () => {
  for (const g of gateways) await g.close();
  await stack.close();
  await rm(stateDir, { recursive: true, force: true });
});

const of = (events: WireEvent[], type: string) => events.filter((e) => e.type === type);
const field = (events: WireEvent[], type: string, key: string) => of(events, type).map((e) => e[key] as string);

describe(`pipeline mode through the gateway (demo kernel at ${SHIPPED_PACING ? "its shipped" : "0 ms"} pacing)`, () => {
  it("projects steps, parallel candidates and CUSTOM events; a selection interrupt survives a gateway restart", async () => {
    const input = stack.input({ prompt: "Create a vswitch in an existing VPC", iacCode: { runMode: "pipeline", pipelineName: "selling" } });
    const first = await runWithHttpAgent(stack.gateway.url, input);
    const request = stack.upstream.requests.find((r) => r.method === "SendStreamingMessage")!;
    const metadata = (request.params as { message: { metadata: { iac_code: Record<string, unknown> } } }).message.metadata.iac_code;
    expect(metadata).toMatchObject({ run_mode: "pipeline", pipeline_name: "selling", cleanupOnly: false });

    const steps = field(first.events, "STEP_STARTED", "stepName");
    expect(steps).toEqual([
      "intent_parsing",
      "evaluate_candidates",
      "candidate:candidate-evaluate-0-1:template_generating",
      "candidate:candidate-evaluate-1-1:template_generating",
      "confirm_and_select",
    ]);
    // Two candidate texts stream at once and never merge.
    const candidateMessages = field(first.events, "TEXT_MESSAGE_START", "messageId").filter((id) => id.includes("candidate-evaluate"));
    expect(new Set(candidateMessages).size).toBe(2);
    const textOf = (id: string) => of(first.events, "TEXT_MESSAGE_CONTENT").filter((e) => e.messageId === id).map((e) => e.delta).join("");
    expect(candidateMessages.map(textOf).sort()).toEqual(["Plan A: one vswitch in a single zone. ", "Plan B: two vswitches across two zones. "]);

    const customs = of(first.events, "CUSTOM").filter((e) => e.name === "iac-code.pipeline.v1");
    for (const c of customs) expect(PIPELINE_CUSTOM_EVENT_TYPES.has((c.value as { eventType: string }).eventType)).toBe(true);
    expect(customs.map((c) => (c.value as { eventType: string }).eventType)).toEqual(
      expect.arrayContaining(["pipeline_started", "candidate_started", "candidate_detail_shown", "candidate_completed"]),
    );
    const finished = first.events.at(-1)!;
    expect(finished.type).toBe("RUN_FINISHED");
    const [interrupt] = (finished.outcome as { type: string; interrupts: { id: string; responseSchema: unknown; message: string }[] }).interrupts;
    expect(interrupt!.message).toBe("Pick a plan\n- 0: Plan A\n- 1: Plan B");
    expect(first.agent.pendingInterrupts.map((i) => i.id)).toEqual([interrupt!.id]);

    // The gateway goes away; a fresh one on the same state dir takes the resume.
    await stack.gateway.close();
    const second = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: stack.upstream.url, allowedRoots: [stack.root], stateDir, logger: silentLogger });
    gateways.push(second);
    const resume = await runWithHttpAgent(second.url, {
      ...input,
      runId: `${input.runId}-resume`,
      resume: [{ interruptId: interrupt!.id, status: "resolved", payload: { selectedId: "1" } }],
    });
    const answer = stack.upstream.requests.filter((r) => r.method === "SendStreamingMessage").at(-1)!;
    expect((answer.params as { message: { taskId: string; parts: unknown[] } }).message.parts).toEqual([{ text: "Plan B" }]);

    // The step parked at the interrupt reopens right after RUN_STARTED, then finishes for real.
    expect(resume.events.slice(0, 2).map((e) => [e.type, e.stepName])).toEqual([["RUN_STARTED", undefined], ["STEP_STARTED", "confirm_and_select"]]);
    expect(field(resume.events, "STEP_FINISHED", "stepName")).toEqual(["confirm_and_select", "deploying"]);
    const resumed = of(resume.events, "CUSTOM").filter((e) => e.name === "iac-code.pipeline.v1").map((e) => (e.value as { eventType: string }).eventType);
    expect(resumed).toEqual(expect.arrayContaining(["candidate_selected", "stack_progress", "pipeline_completed"]));
    expect(resume.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });

    // Every envelope was delivered once across both runs.
    const ids = [...first.events, ...resume.events]
      .filter((e) => e.type === "CUSTOM" && e.name === "iac-code.pipeline.v1")
      .map((e) => (e.value as { eventId: string }).eventId);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
