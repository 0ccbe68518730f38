import { verifyEvents } from "@ag-ui/client";
import type { BaseEvent } from "@ag-ui/core";
import { from } from "rxjs";
import { describe, expect, it } from "vitest";
import { aguiRunOutcomes, END_OF_STREAM, verifyAguiStream } from "../operators/verify/index.js";

type Ev = { type: string; [k: string]: unknown };

/** Builds events with strictly increasing integer timestamps, as the gateway stamps them. */
function stream(...events: Array<[string, Record<string, unknown>?]>): Ev[] {
  return events.map(([type, fields], i) => ({ type, timestamp: 1_700_000_000_000 + i, ...fields }));
}

const START: [string, Record<string, unknown>] = ["RUN_STARTED", { threadId: "t1", runId: "r1" }];
const FINISH: [string, Record<string, unknown>] = ["RUN_FINISHED", { threadId: "t1", runId: "r1" }];

/** Runs @ag-ui/client's own verifyEvents operator; `from(array)` with of/throwError inside is synchronous. */
function clientRejects(events: readonly Ev[]): boolean {
  let rejected = false;
  let completed = false;
  from(events as unknown as BaseEvent[])
    .pipe(verifyEvents(false))
    .subscribe({ error: () => (rejected = true), complete: () => (completed = true) });
  expect(rejected || completed, "verifyEvents must settle synchronously").toBe(true);
  return rejected;
}

const GOOD = stream(
  START,
  ["STEP_STARTED", { stepName: "plan" }],
  ["REASONING_START", { messageId: "reasoning-m1" }],
  ["REASONING_MESSAGE_START", { messageId: "reasoning-m1", role: "reasoning" }],
  ["REASONING_MESSAGE_CONTENT", { messageId: "reasoning-m1", delta: "Checking the template." }],
  ["REASONING_MESSAGE_END", { messageId: "reasoning-m1" }],
  ["REASONING_END", { messageId: "reasoning-m1" }],
  ["TEXT_MESSAGE_START", { messageId: "m1", role: "assistant" }],
  ["TEXT_MESSAGE_CONTENT", { messageId: "m1", delta: "Deploying the stack." }],
  ["TOOL_CALL_START", { toolCallId: "tc1", toolCallName: "ros_deploy", parentMessageId: "m1" }],
  ["TOOL_CALL_ARGS", { toolCallId: "tc1", delta: '{"stack":"demo"}' }],
  ["TOOL_CALL_END", { toolCallId: "tc1" }],
  ["TOOL_CALL_RESULT", { messageId: "tool-result-tc1", toolCallId: "tc1", content: "ok", role: "tool" }],
  ["TEXT_MESSAGE_END", { messageId: "m1" }],
  ["CUSTOM", { name: "iac-code.session.v1", value: { schemaVersion: 1, sessionId: "s1" } }],
  ["STEP_FINISHED", { stepName: "plan" }],
  [
    "RUN_FINISHED",
    {
      threadId: "t1",
      runId: "r1",
      outcome: { type: "interrupt", interrupts: [{ id: "i1", reason: "input_required", message: "Input required" }] },
    },
  ],
);

describe("verifyAguiStream: valid streams", () => {
  it("accepts a full run with text, reasoning, a tool with result, steps, custom and an interrupt outcome", () => {
    expect(verifyAguiStream(GOOD)).toEqual([]);
    expect(clientRejects(GOOD)).toBe(false);
  });

  it.each<[string, Ev[]]>([
    ["a lone RUN_ERROR", stream(["RUN_ERROR", { message: "The gateway is shutting down.", code: "SHUTDOWN" }])],
    ["a success run without outcome", stream(START, FINISH)],
    ["a cancelled outcome", stream(START, ["RUN_FINISHED", { threadId: "t1", runId: "r1", outcome: { type: "cancelled" } }])],
    ["RUN_ERROR after balanced spans", stream(START, ["STEP_STARTED", { stepName: "a" }], ["STEP_FINISHED", { stepName: "a" }], ["RUN_ERROR", { message: "x" }])],
    ["a CUSTOM event whose required value is null", stream(START, ["CUSTOM", { name: "n", value: null }], FINISH)],
    [
      "a tool result before TOOL_CALL_END (reference §5.5)",
      stream(
        START,
        ["TOOL_CALL_START", { toolCallId: "tc1", toolCallName: "t" }],
        ["TOOL_CALL_RESULT", { messageId: "tr1", toolCallId: "tc1", content: "done" }],
        ["TOOL_CALL_END", { toolCallId: "tc1" }],
        FINISH,
      ),
    ],
    [
      "the result of a tool call started in the run a resume continues",
      stream(START, ["TOOL_CALL_RESULT", { messageId: "tool-result-tc0", toolCallId: "tc0", content: "exit 0", role: "tool" }], FINISH),
    ],
    [
      "a reasoning id reopened after it closed",
      stream(
        START,
        ["REASONING_START", { messageId: "r" }],
        ["REASONING_END", { messageId: "r" }],
        ["REASONING_START", { messageId: "r" }],
        ["REASONING_END", { messageId: "r" }],
        FINISH,
      ),
    ],
    [
      "the same step name under two owners",
      stream(
        START,
        ["SUBAGENT_STARTED", { subagentRunId: "s1", name: "helper" }],
        ["STEP_STARTED", { stepName: "tools" }],
        ["STEP_STARTED", { stepName: "tools", subagentRunId: "s1" }],
        ["STEP_FINISHED", { stepName: "tools", subagentRunId: "s1" }],
        ["SUBAGENT_FINISHED", { subagentRunId: "s1" }],
        ["STEP_FINISHED", { stepName: "tools" }],
        FINISH,
      ),
    ],
  ])("accepts %s", (_name, events) => {
    expect(verifyAguiStream(events)).toEqual([]);
    expect(clientRejects(events)).toBe(false);
  });
});

interface BadCase {
  name: string;
  events: Ev[];
  /** A substring of the problem our verifier must report. */
  problem: string;
  /** What @ag-ui/client's verifyEvents does with the same stream; pinned so a divergence is visible. */
  client: "rejects" | "accepts";
  /** A rule of the gateway's contract only: strict mode reports it, the spec (default mode) allows it. */
  strict?: true;
}

const text = (id: string): Array<[string, Record<string, unknown>]> => [
  ["TEXT_MESSAGE_START", { messageId: id }],
  ["TEXT_MESSAGE_CONTENT", { messageId: id, delta: "hi" }],
  ["TEXT_MESSAGE_END", { messageId: id }],
];

const BAD: BadCase[] = [
  // ── verifyEvents rules (§2.2) ──
  { name: "first event is not RUN_STARTED", events: stream(...text("m1"), START, FINISH), problem: "first event must be RUN_STARTED", client: "rejects" },
  { name: "an event after RUN_ERROR", events: stream(START, ["RUN_ERROR", { message: "x" }], ["CUSTOM", { name: "n", value: 1 }]), problem: "CUSTOM after RUN_ERROR at index 1", client: "rejects" },
  { name: "an event after RUN_FINISHED", events: stream(START, FINISH, ...text("m1")), problem: "TEXT_MESSAGE_START after RUN_FINISHED at index 1", client: "rejects" },
  { name: "RUN_STARTED inside an active run", events: stream(START, START, FINISH), problem: "RUN_STARTED while a run is active", client: "rejects" },
  { name: "TEXT_MESSAGE_START for an open message", events: stream(START, ["TEXT_MESSAGE_START", { messageId: "m1" }], ["TEXT_MESSAGE_START", { messageId: "m1" }], ["TEXT_MESSAGE_END", { messageId: "m1" }], FINISH), problem: "TEXT_MESSAGE_START for already open message m1", client: "rejects" },
  { name: "TEXT_MESSAGE_CONTENT for an unknown message", events: stream(START, ["TEXT_MESSAGE_CONTENT", { messageId: "m9", delta: "x" }], FINISH), problem: "TEXT_MESSAGE_CONTENT for unknown message m9", client: "rejects" },
  { name: "TEXT_MESSAGE_END for a closed message", events: stream(START, ...text("m1"), ["TEXT_MESSAGE_END", { messageId: "m1" }], FINISH), problem: "TEXT_MESSAGE_END for closed message m1", client: "rejects" },
  { name: "TOOL_CALL_START for an open tool call", events: stream(START, ["TOOL_CALL_START", { toolCallId: "tc1", toolCallName: "t" }], ["TOOL_CALL_START", { toolCallId: "tc1", toolCallName: "t" }], ["TOOL_CALL_END", { toolCallId: "tc1" }], FINISH), problem: "TOOL_CALL_START for already open tool call tc1", client: "rejects" },
  { name: "TOOL_CALL_ARGS for an unknown tool call", events: stream(START, ["TOOL_CALL_ARGS", { toolCallId: "tc9", delta: "{}" }], FINISH), problem: "TOOL_CALL_ARGS for unknown tool call tc9", client: "rejects" },
  { name: "TOOL_CALL_ARGS after TOOL_CALL_END", events: stream(START, ["TOOL_CALL_START", { toolCallId: "tc1", toolCallName: "t" }], ["TOOL_CALL_END", { toolCallId: "tc1" }], ["TOOL_CALL_ARGS", { toolCallId: "tc1", delta: "{}" }], FINISH), problem: "TOOL_CALL_ARGS for closed tool call tc1", client: "rejects" },
  { name: "TOOL_CALL_END without TOOL_CALL_START", events: stream(START, ["TOOL_CALL_END", { toolCallId: "tc1" }], FINISH), problem: "TOOL_CALL_END for unknown tool call tc1", client: "rejects" },
  { name: "REASONING_END without REASONING_START", events: stream(START, ["REASONING_END", { messageId: "r1" }], FINISH), problem: "REASONING_END for unknown reasoning span r1", client: "rejects" },
  { name: "REASONING_START for an open span", events: stream(START, ["REASONING_START", { messageId: "r1" }], ["REASONING_START", { messageId: "r1" }], ["REASONING_END", { messageId: "r1" }], FINISH), problem: "REASONING_START for already open reasoning span r1", client: "rejects" },
  { name: "REASONING_MESSAGE_CONTENT for an unknown reasoning message", events: stream(START, ["REASONING_START", { messageId: "r1" }], ["REASONING_MESSAGE_CONTENT", { messageId: "r1", delta: "x" }], ["REASONING_END", { messageId: "r1" }], FINISH), problem: "REASONING_MESSAGE_CONTENT for unknown reasoning message r1", client: "rejects" },
  { name: "REASONING_MESSAGE_END for a closed reasoning message", events: stream(START, ["REASONING_MESSAGE_START", { messageId: "r1", role: "reasoning" }], ["REASONING_MESSAGE_END", { messageId: "r1" }], ["REASONING_MESSAGE_END", { messageId: "r1" }], FINISH), problem: "REASONING_MESSAGE_END for closed reasoning message r1", client: "rejects" },
  { name: "STEP_FINISHED for a step that was not started", events: stream(START, ["STEP_STARTED", { stepName: "a" }], ["STEP_FINISHED", { stepName: "b" }], ["STEP_FINISHED", { stepName: "a" }], FINISH), problem: 'STEP_FINISHED for step "b" that was not started', client: "rejects" },
  { name: "STEP_STARTED for an active step", events: stream(START, ["STEP_STARTED", { stepName: "a" }], ["STEP_STARTED", { stepName: "a" }], ["STEP_FINISHED", { stepName: "a" }], FINISH), problem: 'STEP_STARTED for already active step "a"', client: "rejects" },
  { name: "STEP_FINISHED under the wrong owner", events: stream(START, ["SUBAGENT_STARTED", { subagentRunId: "s1", name: "x" }], ["STEP_STARTED", { stepName: "a" }], ["STEP_FINISHED", { stepName: "a", subagentRunId: "s1" }], ["SUBAGENT_FINISHED", { subagentRunId: "s1" }], FINISH), problem: 'STEP_FINISHED for step "a" of subagent s1, but it is open under the parent agent', client: "rejects" },
  { name: "RUN_FINISHED while a text message is open", events: stream(START, ["TEXT_MESSAGE_START", { messageId: "m1" }], FINISH), problem: "RUN_FINISHED while message m1 is open", client: "rejects" },
  { name: "RUN_FINISHED while a tool call is open", events: stream(START, ["TOOL_CALL_START", { toolCallId: "tc1", toolCallName: "t" }], FINISH), problem: "RUN_FINISHED while tool call tc1 is open", client: "rejects" },
  { name: "RUN_FINISHED while a reasoning span is open", events: stream(START, ["REASONING_START", { messageId: "r1" }], FINISH), problem: "RUN_FINISHED while reasoning span r1 is open", client: "rejects" },
  { name: "RUN_FINISHED while a reasoning message is open", events: stream(START, ["REASONING_MESSAGE_START", { messageId: "r1", role: "reasoning" }], FINISH), problem: "RUN_FINISHED while reasoning message r1 is open", client: "rejects" },
  { name: "RUN_FINISHED while a step is active", events: stream(START, ["STEP_STARTED", { stepName: "deploy" }], FINISH), problem: 'RUN_FINISHED while step "deploy" is open', client: "rejects" },
  { name: "RUN_FINISHED while a subagent is active", events: stream(START, ["SUBAGENT_STARTED", { subagentRunId: "s1", name: "x" }], FINISH), problem: "RUN_FINISHED while subagent s1 is open", client: "rejects" },
  { name: "SUBAGENT_FINISHED for an unknown subagent", events: stream(START, ["SUBAGENT_FINISHED", { subagentRunId: "s9" }], FINISH), problem: "SUBAGENT_FINISHED for subagent s9, which was never announced", client: "rejects" },
  { name: "a reused subagentRunId", events: stream(START, ["SUBAGENT_STARTED", { subagentRunId: "s1", name: "x" }], ["SUBAGENT_FINISHED", { subagentRunId: "s1" }], ["SUBAGENT_STARTED", { subagentRunId: "s1", name: "x" }], ["SUBAGENT_FINISHED", { subagentRunId: "s1" }], FINISH), problem: "SUBAGENT_STARTED reuses subagent s1, which already finished", client: "rejects" },
  { name: "subagentRunId: null", events: stream(START, ["TEXT_MESSAGE_START", { messageId: "m1", subagentRunId: null }], ["TEXT_MESSAGE_END", { messageId: "m1" }], FINISH), problem: "subagentRunId is null", client: "rejects" },

  // ── rules verifyEvents does not check (strict: true marks the gateway's own contract) ──
  { name: "RUN_ERROR after RUN_FINISHED (verifyEvents allows it)", events: stream(START, FINISH, ["RUN_ERROR", { message: "x" }]), problem: "RUN_ERROR after the terminal RUN_FINISHED at index 1", client: "accepts", strict: true },
  { name: "a second run in the same stream", events: stream(START, FINISH, ["RUN_STARTED", { threadId: "t1", runId: "r2" }], ["RUN_FINISHED", { threadId: "t1", runId: "r2" }]), problem: "a second run in the stream", client: "accepts", strict: true },
  { name: "a stream without a terminal event", events: stream(START, ...text("m1")), problem: "ends without RUN_FINISHED or RUN_ERROR", client: "accepts" },
  { name: "an empty stream", events: [], problem: "the stream is empty", client: "accepts" },
  { name: "RUN_ERROR while a text message is open", events: stream(START, ["TEXT_MESSAGE_START", { messageId: "m1" }], ["RUN_ERROR", { message: "x" }]), problem: "RUN_ERROR while message m1 is open", client: "accepts", strict: true },
  { name: "RUN_ERROR while a step is active", events: stream(START, ["STEP_STARTED", { stepName: "deploy" }], ["RUN_ERROR", { message: "x" }]), problem: 'RUN_ERROR while step "deploy" is open', client: "accepts", strict: true },
  { name: "a top-level interrupts field", events: stream(START, ["RUN_FINISHED", { threadId: "t1", runId: "r1", interrupts: [{ id: "i1", reason: "input_required" }] }]), problem: "top-level interrupts", client: "accepts", strict: true },
  { name: "interrupts on a non-terminal event", events: stream(START, ["CUSTOM", { name: "n", value: 1, interrupts: [] }], FINISH), problem: "top-level interrupts", client: "accepts", strict: true },
  { name: "an interrupt outcome with an empty array", events: stream(START, ["RUN_FINISHED", { threadId: "t1", runId: "r1", outcome: { type: "interrupt", interrupts: [] } }]), problem: "interrupt outcome without interrupts", client: "accepts" },
  { name: "interrupts in a success outcome", events: stream(START, ["RUN_FINISHED", { threadId: "t1", runId: "r1", outcome: { type: "success", interrupts: [{ id: "i1", reason: "r" }] } }]), problem: "interrupts in a success outcome", client: "accepts" },
  { name: "an unknown outcome type", events: stream(START, ["RUN_FINISHED", { threadId: "t1", runId: "r1", outcome: { type: "paused" } }]), problem: "outcome has unknown type paused", client: "accepts" },
  { name: "duplicate interrupt ids", events: stream(START, ["RUN_FINISHED", { threadId: "t1", runId: "r1", outcome: { type: "interrupt", interrupts: [{ id: "i1", reason: "a" }, { id: "i1", reason: "b" }] } }]), problem: "duplicate interrupt id i1", client: "accepts" },
  { name: "a missing timestamp", events: [{ type: "RUN_STARTED", threadId: "t1", runId: "r1" }, ...stream(FINISH)], problem: "missing timestamp", client: "accepts", strict: true },
  { name: "a fractional timestamp", events: stream(START, ["CUSTOM", { name: "n", value: 1, timestamp: 1.5 }], FINISH), problem: "timestamp 1.5 is not a safe integer", client: "accepts" },
  { name: "a null optional field", events: stream(["RUN_STARTED", { threadId: "t1", runId: "r1", parentRunId: null }], FINISH), problem: "parentRunId is null", client: "accepts" },
  { name: "a null RUN_FINISHED result", events: stream(START, ["RUN_FINISHED", { threadId: "t1", runId: "r1", result: null }]), problem: "result is null", client: "accepts" },
  { name: "an empty TEXT_MESSAGE_CONTENT delta", events: stream(START, ["TEXT_MESSAGE_START", { messageId: "m1" }], ["TEXT_MESSAGE_CONTENT", { messageId: "m1", delta: "" }], ["TEXT_MESSAGE_END", { messageId: "m1" }], FINISH), problem: "TEXT_MESSAGE_CONTENT with an empty delta for message m1", client: "accepts", strict: true },
  { name: "a second TOOL_CALL_RESULT for one tool call", events: stream(START, ["TOOL_CALL_START", { toolCallId: "tc1", toolCallName: "t" }], ["TOOL_CALL_END", { toolCallId: "tc1" }], ["TOOL_CALL_RESULT", { messageId: "a", toolCallId: "tc1", content: "x" }], ["TOOL_CALL_RESULT", { messageId: "b", toolCallId: "tc1", content: "x" }], FINISH), problem: "second TOOL_CALL_RESULT for tool call tc1", client: "accepts", strict: true },
  { name: "RUN_FINISHED for another run id", events: stream(START, ["RUN_FINISHED", { threadId: "t1", runId: "r2" }]), problem: "RUN_FINISHED runId r2 differs from RUN_STARTED r1", client: "accepts" },
];

describe("verifyAguiStream: one case per rule", () => {
  it.each(BAD.map((c) => [c.name, c] as const))("catches %s", (_name, c) => {
    const problems = verifyAguiStream(c.events, { strict: c.strict === true });
    expect(problems.map((p) => p.problem).join("\n")).toContain(c.problem);
    // A strict-only rule is the gateway's contract, not the spec's: default mode must not report it.
    const defaults = verifyAguiStream(c.events).map((p) => p.problem).join("\n");
    if (c.strict) expect(defaults).not.toContain(c.problem);
    else expect(defaults).toContain(c.problem);
  });

  it.each(BAD.map((c) => [c.name, c] as const))("@ag-ui/client verifyEvents on %s", (_name, c) => {
    const rejected = clientRejects(c.events);
    expect(rejected ? "rejects" : "accepts").toBe(c.client);
    // Where the client rejects, we must too: never looser than the reference consumer.
    if (rejected) expect(verifyAguiStream(c.events)).not.toEqual([]);
  });

  it("covers every verifyEvents rule the client actually enforces with a rejecting case", () => {
    expect(BAD.filter((c) => c.client === "rejects").length).toBeGreaterThanOrEqual(20);
  });
});

describe("verifyAguiStream: problem reports", () => {
  it("names the index, type and id of the offending event", () => {
    const events = stream(START, ["TEXT_MESSAGE_CONTENT", { messageId: "m9", delta: "x" }], FINISH);
    expect(verifyAguiStream(events)).toEqual([
      { index: 1, type: "TEXT_MESSAGE_CONTENT", rule: "open-before-continue", problem: "TEXT_MESSAGE_CONTENT for unknown message m9" },
    ]);
  });

  it("reports end-of-stream problems past the last index", () => {
    const events = stream(START, ["TOOL_CALL_START", { toolCallId: "tc1", toolCallName: "t" }]);
    expect(verifyAguiStream(events)).toEqual([
      { index: 2, type: END_OF_STREAM, rule: "truncated-run", problem: "the stream ends without RUN_FINISHED or RUN_ERROR (open: tool call tc1)" },
    ]);
  });

  it("reports every problem, not only the first", () => {
    const events = stream(
      ["TEXT_MESSAGE_END", { messageId: "m1" }],
      ["TOOL_CALL_ARGS", { toolCallId: "tc1", delta: "{}" }],
      ["STEP_STARTED", { stepName: "s" }],
      ["RUN_ERROR", { message: "boom" }],
      ["CUSTOM", { name: "n", value: 1 }],
    );
    expect(verifyAguiStream(events).map((p) => p.index)).toEqual([0, 0, 1, 4]);
    // Strict mode adds the step left open at RUN_ERROR.
    expect(verifyAguiStream(events, { strict: true }).map((p) => p.index)).toEqual([0, 0, 1, 3, 4]);
  });

  it("never throws, whatever it is given", () => {
    const hostile = { type: "RUN_STARTED" } as Ev;
    Object.defineProperty(hostile, "threadId", { enumerable: true, get: () => { throw new Error("boom"); } });
    const inputs: unknown[] = [[null], [42], [{}], [{ type: 7 }], [[]], [hostile], [{ type: "TEXT_MESSAGE_START" }]];
    for (const input of inputs) {
      const problems = verifyAguiStream(input as Ev[]);
      expect(problems.length).toBeGreaterThan(0);
    }
    expect(verifyAguiStream([hostile])[0]?.problem).toContain("could not read");
  });
});

describe("aguiRunOutcomes", () => {
  it("reads each run's ending: a late RUN_ERROR fails the run it follows, a run without terminal is truncated", () => {
    const events = [
      ...stream(START, FINISH, ["RUN_ERROR", { message: "flush failed" }]),
      ...stream(["RUN_STARTED", { threadId: "t1", runId: "r2" }], ["RUN_FINISHED", { threadId: "t1", runId: "r2", outcome: { type: "interrupt", interrupts: [{ id: "i1", reason: "r" }] } }]),
      ...stream(["RUN_STARTED", { threadId: "t1", runId: "r3" }], ["RUN_FINISHED", { threadId: "t1", runId: "r3", outcome: { type: "cancelled" } }]),
      ...stream(["RUN_STARTED", { threadId: "t1", runId: "r4" }]),
    ];
    expect(verifyAguiStream(events).map((p) => p.rule)).toEqual(["truncated-run"]);
    expect(aguiRunOutcomes(events)).toEqual([
      { index: 0, threadId: "t1", runId: "r1", outcome: "failed" },
      { index: 3, threadId: "t1", runId: "r2", outcome: "interrupt" },
      { index: 5, threadId: "t1", runId: "r3", outcome: "cancelled" },
      { index: 7, threadId: "t1", runId: "r4", outcome: "truncated" },
    ]);
  });

  it("never throws either: what is not a list reads as no runs, a hostile event ends the reading", () => {
    const hostile = { type: "RUN_FINISHED" } as Ev;
    Object.defineProperty(hostile, "outcome", { enumerable: true, get: () => { throw new Error("boom"); } });
    for (const input of [null, undefined, "RUN_STARTED", 42, {}]) expect(aguiRunOutcomes(input as unknown as Ev[])).toEqual([]);
    expect(aguiRunOutcomes([...stream(START), hostile])).toEqual([{ index: 0, threadId: "t1", runId: "r1", outcome: "truncated" }]);
  });

  it("counts a RUN_ERROR before any run as a run that failed before it began", () => {
    expect(aguiRunOutcomes(stream(["RUN_ERROR", { message: "unreachable" }], START, FINISH))).toEqual([
      { index: 0, outcome: "failed" },
      { index: 1, threadId: "t1", runId: "r1", outcome: "success" },
    ]);
  });
});
