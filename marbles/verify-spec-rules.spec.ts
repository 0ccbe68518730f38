// One accepting and at least one rejecting stream per verifier rule, each written from the AG-UI 1.1 spec text
// (docs/spec/1.1: events/lifecycle, basic/transports, basic/patterns/streaming, basic/patterns/interrupt-resume,
// basic/processing, events/text-messages, tool-calls, reasoning, subagents, activity, schema) or, for strict/*,
// from the gateway's contract. Every rule in AGUI_RULES must appear here.
import { transformChunks, verifyEvents } from "@ag-ui/client";
import type { BaseEvent } from "@ag-ui/core";
import { from } from "rxjs";
import { describe, expect, it } from "vitest";
import { AGUI_RULES, END_OF_STREAM, verifyAguiStream, type AguiRule } from "../operators/verify/index.js";

type Ev = { type: string; [k: string]: unknown };

const ev = (type: string, fields: Record<string, unknown> = {}): Ev => ({ type, ...fields });
const started = (runId = "r1", threadId = "t1"): Ev => ev("RUN_STARTED", { threadId, runId });
const finished = (outcome?: Record<string, unknown>, runId = "r1", threadId = "t1"): Ev =>
  ev("RUN_FINISHED", { threadId, runId, ...(outcome && { outcome }) });
const failed = (message = "boom"): Ev => ev("RUN_ERROR", { message });
/** One run r1 on thread t1 around `body`. */
const run = (...body: Ev[]): Ev[] => [started(), ...body, finished()];
/** Integer timestamps, as the gateway stamps every event (strict mode requires them). */
const stamped = (events: Ev[]): Ev[] => events.map((e, i) => ({ timestamp: 1_700_000_000_000 + i, ...e }));

const textStart = (messageId: string, fields: Record<string, unknown> = {}) => ev("TEXT_MESSAGE_START", { messageId, ...fields });
const textContent = (messageId: string, delta = "hi", fields: Record<string, unknown> = {}) =>
  ev("TEXT_MESSAGE_CONTENT", { messageId, delta, ...fields });
const textEnd = (messageId: string, fields: Record<string, unknown> = {}) => ev("TEXT_MESSAGE_END", { messageId, ...fields });
const text = (messageId: string, fields: Record<string, unknown> = {}) => [
  textStart(messageId, fields),
  textContent(messageId, "hi", fields),
  textEnd(messageId, fields),
];
const toolStart = (toolCallId: string, toolCallName = "search", fields: Record<string, unknown> = {}) =>
  ev("TOOL_CALL_START", { toolCallId, toolCallName, ...fields });
const toolEnd = (toolCallId: string) => ev("TOOL_CALL_END", { toolCallId });
const toolResult = (toolCallId: string, fields: Record<string, unknown> = {}) =>
  ev("TOOL_CALL_RESULT", { messageId: `result-${toolCallId}`, toolCallId, content: "3 results found.", ...fields });
const subStarted = (subagentRunId: string, fields: Record<string, unknown> = {}) =>
  ev("SUBAGENT_STARTED", { subagentRunId, name: "researcher", ...fields });
const subFinished = (subagentRunId: string, fields: Record<string, unknown> = {}) => ev("SUBAGENT_FINISHED", { subagentRunId, ...fields });
const chunk = (fields: Record<string, unknown>) => ev("TEXT_MESSAGE_CHUNK", fields);
const toolChunk = (fields: Record<string, unknown>) => ev("TOOL_CALL_CHUNK", fields);
const interrupt = (id: string, fields: Record<string, unknown> = {}) => ({ id, reason: "approval", ...fields });

interface Case {
  name: string;
  events: Ev[];
}
interface Rejection extends Case {
  /** Index of the event the problem is reported at (events.length for the end of the stream). */
  at: number;
}
interface RuleCases {
  accept: Case[];
  reject: Rejection[];
}

const RULES: Record<AguiRule, RuleCases> = {
  "event-shape": {
    accept: [{ name: "events that are objects with a string type", events: run(ev("CUSTOM", { name: "n", value: 1 })) }],
    reject: [{ name: "a number where an event belongs", events: [started(), 42 as unknown as Ev, finished()], at: 1 }],
  },
  "stream-begins-with-run": {
    accept: [
      { name: "a stream that opens with RUN_STARTED", events: run() },
      { name: "a run that fails before it begins: RUN_ERROR first", events: [failed("agent unreachable")] },
    ],
    reject: [
      { name: "a CUSTOM event before any run", events: [ev("CUSTOM", { name: "n", value: 1 }), finished()], at: 0 },
      { name: "an empty stream", events: [], at: 0 },
    ],
  },
  "no-nested-run": {
    accept: [{ name: "two runs in sequence (a replayed thread)", events: [...run(), started("r2"), finished(undefined, "r2")] }],
    reject: [{ name: "RUN_STARTED while r1 is still active", events: [started(), started("r2"), finished()], at: 1 }],
  },
  "nothing-after-run-finished": {
    accept: [
      { name: "RUN_ERROR after RUN_FINISHED: a late failure, the run counts as failed", events: [...run(), failed("flush failed")] },
      { name: "RUN_STARTED after RUN_FINISHED: a new run", events: [...run(), started("r2"), finished(undefined, "r2")] },
    ],
    reject: [{ name: "a message after the run finished", events: [...run(), ...text("m1")], at: 2 }],
  },
  "nothing-after-run-error": {
    accept: [{ name: "RUN_ERROR, then a new run", events: [started(), failed(), started("r2"), finished(undefined, "r2")] }],
    reject: [
      { name: "RUN_FINISHED after RUN_ERROR", events: [started(), failed(), finished()], at: 2 },
      { name: "a second RUN_ERROR", events: [started(), failed(), failed()], at: 2 },
    ],
  },
  "run-ids-agree": {
    accept: [{ name: "each RUN_FINISHED names the run its RUN_STARTED opened", events: [...run(), started("r2"), finished(undefined, "r2")] }],
    reject: [
      { name: "RUN_FINISHED for another runId", events: [started("r1"), finished(undefined, "r2")], at: 1 },
      { name: "RUN_FINISHED for another threadId", events: [started("r1", "t1"), finished(undefined, "r1", "t2")], at: 1 },
    ],
  },
  "one-thread-per-stream": {
    accept: [{ name: "two runs of thread t1", events: [...run(), started("r2"), finished(undefined, "r2")] }],
    reject: [{ name: "a second run on thread t2", events: [...run(), started("r2", "t2"), finished(undefined, "r2", "t2")], at: 2 }],
  },
  "truncated-run": {
    accept: [{ name: "a run that reaches RUN_FINISHED", events: run(...text("m1")) }],
    reject: [
      { name: "the stream ends mid-message", events: [started(), textStart("m1"), textContent("m1")], at: 3 },
      { name: "the second run never ends", events: [...run(), started("r2")], at: 3 },
    ],
  },
  "required-fields": {
    accept: [{ name: "an empty delta is still a string (the schema allows it)", events: run(textStart("m1"), textContent("m1", ""), textEnd("m1")) }],
    reject: [
      { name: "TEXT_MESSAGE_CONTENT without delta", events: run(textStart("m1"), ev("TEXT_MESSAGE_CONTENT", { messageId: "m1" }), textEnd("m1")), at: 2 },
      { name: "RUN_ERROR without message", events: [started(), ev("RUN_ERROR", { code: "X" })], at: 1 },
      { name: "TOOL_CALL_START without toolCallName", events: run(ev("TOOL_CALL_START", { toolCallId: "c1" }), toolEnd("c1")), at: 1 },
    ],
  },
  "no-null-optionals": {
    accept: [{ name: "CUSTOM value null: a required any-JSON field", events: run(ev("CUSTOM", { name: "n", value: null })) }],
    reject: [
      { name: "subagentRunId spelled null", events: run(...text("m1", { subagentRunId: null })), at: 1 },
      { name: "RUN_FINISHED result null", events: [started(), ev("RUN_FINISHED", { threadId: "t1", runId: "r1", result: null })], at: 1 },
    ],
  },
  "timestamp-integer": {
    accept: [{ name: "no timestamps at all: the field is optional", events: run(...text("m1")) }],
    reject: [{ name: "a fractional timestamp", events: run(ev("CUSTOM", { name: "n", value: 1, timestamp: 1.5 })), at: 1 }],
  },
  "open-before-continue": {
    accept: [{ name: "start, content, end", events: run(...text("m1"), toolStart("c1"), ev("TOOL_CALL_ARGS", { toolCallId: "c1", delta: "{}" }), toolEnd("c1")) }],
    reject: [
      { name: "content for a message nothing opened", events: run(textContent("m9")), at: 1 },
      { name: "TOOL_CALL_END for a call nothing opened", events: run(toolEnd("c9")), at: 1 },
      {
        name: "a reasoning fragment naming a span: spans and messages are separate namespaces",
        events: run(ev("REASONING_START", { messageId: "r1" }), ev("REASONING_MESSAGE_CONTENT", { messageId: "r1", delta: "x" }), ev("REASONING_END", { messageId: "r1" })),
        at: 2,
      },
      { name: "STEP_FINISHED for a step never opened", events: run(ev("STEP_FINISHED", { stepName: "plan" })), at: 1 },
    ],
  },
  "no-reopen-while-open": {
    accept: [{ name: "a closed message reopened: further content appends", events: run(...text("m1"), ...text("m1")) }],
    reject: [
      { name: "TEXT_MESSAGE_START for an open message", events: run(textStart("m1"), textStart("m1"), textEnd("m1")), at: 2 },
      { name: "STEP_STARTED for an open step", events: run(ev("STEP_STARTED", { stepName: "a" }), ev("STEP_STARTED", { stepName: "a" }), ev("STEP_FINISHED", { stepName: "a" })), at: 2 },
    ],
  },
  "reopen-agrees": {
    accept: [{ name: "a reopening start with the same role (absent means assistant)", events: run(...text("m1", { role: "assistant" }), ...text("m1")) }],
    reject: [
      { name: "a message reopened with another role", events: run(...text("m1"), textStart("m1", { role: "user" }), textEnd("m1")), at: 4 },
      { name: "a tool call reopened with another toolCallName", events: run(toolStart("c1", "search"), toolEnd("c1"), toolStart("c1", "fetch"), toolEnd("c1")), at: 3 },
    ],
  },
  "closed-before-run-finished": {
    accept: [
      { name: "everything closed before RUN_FINISHED", events: run(ev("STEP_STARTED", { stepName: "a" }), ...text("m1"), ev("STEP_FINISHED", { stepName: "a" })) },
      { name: "RUN_ERROR ends whatever is still open", events: [started(), textStart("m1"), ev("STEP_STARTED", { stepName: "a" }), failed()] },
    ],
    reject: [
      { name: "RUN_FINISHED while a message is open", events: run(textStart("m1")), at: 2 },
      { name: "RUN_FINISHED while a subagent is active", events: run(subStarted("s1")), at: 2 },
      { name: "RUN_FINISHED while a reasoning span is open", events: run(ev("REASONING_START", { messageId: "r1" })), at: 2 },
    ],
  },
  "role-closed-set": {
    accept: [
      { name: "a developer text message", events: run(...text("m1", { role: "developer" })) },
      {
        name: "a snapshot with every message role",
        events: run(
          ev("MESSAGES_SNAPSHOT", {
            messages: [
              { id: "u", role: "user", content: "hi" },
              { id: "a", role: "assistant", content: "hello" },
              { id: "t", role: "tool", content: "ok", toolCallId: "c1" },
              { id: "v", role: "activity", activityType: "search", content: {} },
              { id: "r", role: "reasoning", content: "thinking" },
            ],
          }),
        ),
      },
    ],
    reject: [
      { name: "a streamed text message with role tool (TOOL_CALL_RESULT carries those)", events: run(...text("m1", { role: "tool" })), at: 1 },
      { name: "a snapshot message with role robot", events: run(ev("MESSAGES_SNAPSHOT", { messages: [{ id: "x", role: "robot", content: "beep" }] })), at: 1 },
      { name: "TOOL_CALL_RESULT with role assistant", events: run(toolResult("c0", { role: "assistant" })), at: 1 },
    ],
  },
  "reasoning-role": {
    accept: [
      {
        name: "REASONING_MESSAGE_START with role reasoning",
        events: run(ev("REASONING_MESSAGE_START", { messageId: "r1", role: "reasoning" }), ev("REASONING_MESSAGE_END", { messageId: "r1" })),
      },
    ],
    reject: [
      { name: "role assistant", events: run(ev("REASONING_MESSAGE_START", { messageId: "r1", role: "assistant" }), ev("REASONING_MESSAGE_END", { messageId: "r1" })), at: 1 },
      { name: "role absent: required, not defaulted", events: run(ev("REASONING_MESSAGE_START", { messageId: "r1" }), ev("REASONING_MESSAGE_END", { messageId: "r1" })), at: 1 },
    ],
  },
  "chunk-first-fields": {
    accept: [
      { name: "a first text chunk with messageId, continued without it", events: run(chunk({ messageId: "m1", delta: "Hel" }), chunk({ delta: "lo" })) },
      { name: "a first tool chunk with toolCallId and toolCallName", events: run(toolChunk({ toolCallId: "c1", toolCallName: "search", delta: "{}" })) },
    ],
    reject: [
      { name: "a first TEXT_MESSAGE_CHUNK without messageId", events: run(chunk({ delta: "hi" })), at: 1 },
      { name: "a first TOOL_CALL_CHUNK without toolCallName", events: run(toolChunk({ toolCallId: "c1", delta: "{}" })), at: 1 },
      { name: "a first REASONING_MESSAGE_CHUNK without messageId", events: run(ev("REASONING_MESSAGE_CHUNK", { delta: "hmm" })), at: 1 },
    ],
  },
  "chunk-conflicting-repeat": {
    accept: [
      { name: "a continuation repeating the same role", events: run(chunk({ messageId: "m1", role: "user", delta: "a" }), chunk({ role: "user", delta: "b" })) },
      { name: "a continuation repeating the same toolCallName", events: run(toolChunk({ toolCallId: "c1", toolCallName: "search" }), toolChunk({ toolCallName: "search", delta: "{}" })) },
    ],
    reject: [
      { name: "a message opened without role (assistant) continued as user", events: run(chunk({ messageId: "m1", delta: "a" }), chunk({ role: "user", delta: "b" })), at: 2 },
      { name: "a tool chunk changing toolCallName", events: run(toolChunk({ toolCallId: "c1", toolCallName: "search" }), toolChunk({ toolCallName: "fetch", delta: "{}" })), at: 2 },
      {
        name: "a tool chunk changing parentMessageId",
        events: run(toolChunk({ toolCallId: "c1", toolCallName: "search", parentMessageId: "m1" }), toolChunk({ parentMessageId: "m2" })),
        at: 2,
      },
    ],
  },
  "chunk-lane-closed": {
    accept: [
      {
        name: "RAW, ACTIVITY_SNAPSHOT and REASONING_ENCRYPTED_VALUE stand aside from assembly",
        events: run(
          chunk({ messageId: "m1", delta: "a" }),
          ev("RAW", { event: { provider: "x" } }),
          ev("ACTIVITY_SNAPSHOT", { messageId: "act-1", activityType: "search", content: {} }),
          ev("REASONING_ENCRYPTED_VALUE", { subtype: "message", entityId: "m1", encryptedValue: "opaque" }),
          chunk({ delta: "b" }),
        ),
      },
    ],
    reject: [
      { name: "a CUSTOM event ends the chunk stream; an id-less chunk then continues nothing", events: run(chunk({ messageId: "m1", delta: "a" }), ev("CUSTOM", { name: "n", value: 1 }), chunk({ delta: "b" })), at: 3 },
      { name: "a STATE_DELTA ends a tool chunk stream", events: run(toolChunk({ toolCallId: "c1", toolCallName: "search" }), ev("STATE_DELTA", { delta: [] }), toolChunk({ delta: "{}" })), at: 3 },
    ],
  },
  "chunk-forms-do-not-mix": {
    accept: [{ name: "a chunk item closed by RUN_FINISHED (its end is synthesized)", events: run(chunk({ messageId: "m1", delta: "a" }), chunk({ messageId: "m1", delta: "b" })) }],
    reject: [
      { name: "an explicit TEXT_MESSAGE_END for a chunk item", events: run(chunk({ messageId: "m1", delta: "a" }), textEnd("m1")), at: 2 },
      { name: "TOOL_CALL_ARGS for a call opened by a chunk", events: run(toolChunk({ toolCallId: "c1", toolCallName: "search" }), ev("TOOL_CALL_ARGS", { toolCallId: "c1", delta: "{}" })), at: 2 },
      { name: "a chunk continuing a message opened by TEXT_MESSAGE_START", events: run(textStart("m1"), chunk({ messageId: "m1", delta: "a" }), textEnd("m1")), at: 2 },
    ],
  },
  "chunk-ambiguous-continuation": {
    accept: [
      {
        name: "an untagged continuation goes to the parent's open stream",
        events: run(subStarted("s1"), chunk({ messageId: "m1", delta: "a" }), chunk({ messageId: "m2", subagentRunId: "s1", delta: "x" }), chunk({ delta: "b" }), subFinished("s1")),
      },
      {
        name: "parallel subagents that attribute their continuations",
        events: run(
          subStarted("s1"),
          subStarted("s2"),
          chunk({ messageId: "m1", subagentRunId: "s1", delta: "a" }),
          chunk({ messageId: "m2", subagentRunId: "s2", delta: "b" }),
          chunk({ subagentRunId: "s1", delta: "c" }),
          subFinished("s1"),
          subFinished("s2"),
        ),
      },
    ],
    reject: [
      {
        name: "an untagged id-less chunk while two subagents have open messages",
        events: run(
          subStarted("s1"),
          subStarted("s2"),
          chunk({ messageId: "m1", subagentRunId: "s1", delta: "a" }),
          chunk({ messageId: "m2", subagentRunId: "s2", delta: "b" }),
          chunk({ delta: "c" }),
          subFinished("s1"),
          subFinished("s2"),
        ),
        at: 5,
      },
    ],
  },
  "owner-agrees": {
    accept: [
      { name: "untagged continuations of a tagged opener", events: run(subStarted("s1"), textStart("m1", { subagentRunId: "s1" }), textContent("m1"), textEnd("m1"), subFinished("s1")) },
      {
        name: "a parent and a subagent each close their own step of the same name",
        events: run(subStarted("s1"), ev("STEP_STARTED", { stepName: "plan" }), ev("STEP_STARTED", { stepName: "plan", subagentRunId: "s1" }), ev("STEP_FINISHED", { stepName: "plan", subagentRunId: "s1" }), ev("STEP_FINISHED", { stepName: "plan" }), subFinished("s1")),
      },
    ],
    reject: [
      {
        name: "content tagged with another subagent than the opener's",
        events: run(subStarted("s1"), subStarted("s2"), textStart("m1", { subagentRunId: "s1" }), textContent("m1", "x", { subagentRunId: "s2" }), textEnd("m1"), subFinished("s1"), subFinished("s2")),
        at: 4,
      },
      {
        name: "a closer tagged with another subagent than the opener's",
        events: run(subStarted("s1"), subStarted("s2"), toolStart("c1", "search", { subagentRunId: "s1" }), ev("TOOL_CALL_END", { toolCallId: "c1", subagentRunId: "s2" }), subFinished("s1"), subFinished("s2")),
        at: 4,
      },
      { name: "a tool call tagged s1 inside a message of the parent agent", events: run(subStarted("s1"), textStart("m1"), toolStart("c1", "search", { parentMessageId: "m1", subagentRunId: "s1" }), toolEnd("c1"), textEnd("m1"), subFinished("s1")), at: 3 },
      { name: "a subagent finishing the parent's step", events: run(subStarted("s1"), ev("STEP_STARTED", { stepName: "plan" }), ev("STEP_FINISHED", { stepName: "plan", subagentRunId: "s1" }), ev("STEP_FINISHED", { stepName: "plan" }), subFinished("s1")), at: 3 },
      {
        name: "an activity delta tagged with another owner than its snapshot",
        events: run(subStarted("s1"), ev("ACTIVITY_SNAPSHOT", { messageId: "act-1", activityType: "search", content: {} }), ev("ACTIVITY_DELTA", { messageId: "act-1", activityType: "search", patch: [], subagentRunId: "s1" }), subFinished("s1")),
        at: 3,
      },
      {
        name: "a chunk naming an open message of another lane",
        events: run(subStarted("s1"), subStarted("s2"), chunk({ messageId: "m1", subagentRunId: "s1", delta: "a" }), chunk({ messageId: "m1", subagentRunId: "s2", delta: "b" }), subFinished("s1"), subFinished("s2")),
        at: 4,
      },
    ],
  },
  "subagent-required-fields": {
    accept: [{ name: "SUBAGENT_STARTED with name, SUBAGENT_ERROR with message", events: run(subStarted("s1"), ev("SUBAGENT_ERROR", { subagentRunId: "s1", message: "tool crashed" })) }],
    reject: [
      { name: "SUBAGENT_STARTED without name", events: run(ev("SUBAGENT_STARTED", { subagentRunId: "s1" }), subFinished("s1")), at: 1 },
      { name: "SUBAGENT_ERROR without message", events: run(subStarted("s1"), ev("SUBAGENT_ERROR", { subagentRunId: "s1" })), at: 2 },
    ],
  },
  "subagent-id-unique": {
    accept: [
      { name: "two invocations of one subagent, two ids", events: run(subStarted("s1"), subFinished("s1"), subStarted("s2"), subFinished("s2")) },
      {
        name: "a suspended invocation continued under the same id in a later run",
        events: [
          started(),
          subStarted("s1"),
          subFinished("s1", { outcome: { type: "suspended", interruptIds: ["i1"] } }),
          finished({ type: "interrupt", interrupts: [interrupt("i1", { subagentRunId: "s1" })] }),
          started("r2"),
          subStarted("s1"),
          subFinished("s1"),
          finished(undefined, "r2"),
        ],
      },
    ],
    reject: [
      { name: "an id announced while already active", events: run(subStarted("s1"), subStarted("s1"), subFinished("s1")), at: 2 },
      { name: "an id reused after it finished in this run", events: run(subStarted("s1"), subFinished("s1"), subStarted("s1")), at: 3 },
    ],
  },
  "subagent-announced-first": {
    accept: [{ name: "attributed events with no announcement at all", events: run(...text("m1", { subagentRunId: "s1" })) }],
    reject: [{ name: "an announcement after events attributed to it", events: run(ev("CUSTOM", { name: "n", value: 1, subagentRunId: "s1" }), subStarted("s1"), subFinished("s1")), at: 2 }],
  },
  "subagent-parent-announced": {
    accept: [{ name: "a nested invocation naming an announced parent", events: run(subStarted("s1"), subStarted("s2", { parentSubagentRunId: "s1" }), subFinished("s2"), subFinished("s1")) }],
    reject: [{ name: "parentSubagentRunId never announced", events: run(subStarted("s2", { parentSubagentRunId: "s9" }), subFinished("s2")), at: 1 }],
  },
  "subagent-closer-matches": {
    accept: [{ name: "SUBAGENT_ERROR closes the invocation it names", events: run(subStarted("s1"), ev("SUBAGENT_ERROR", { subagentRunId: "s1", message: "x" })) }],
    reject: [
      { name: "SUBAGENT_FINISHED for an id never announced", events: run(subFinished("s9")), at: 1 },
      { name: "SUBAGENT_FINISHED twice", events: run(subStarted("s1"), subFinished("s1"), subFinished("s1")), at: 3 },
    ],
  },
  "subagent-outcome": {
    accept: [
      { name: "success without interrupt ids", events: run(subStarted("s1"), subFinished("s1", { outcome: { type: "success" } })) },
      { name: "suspended with no interrupt ids (a descendant interrupted)", events: run(subStarted("s1"), subFinished("s1", { outcome: { type: "suspended" } })) },
    ],
    reject: [
      { name: "an outcome the schema does not describe", events: run(subStarted("s1"), subFinished("s1", { outcome: { type: "failed" } })), at: 2 },
      { name: "interrupt ids on a success outcome", events: run(subStarted("s1"), subFinished("s1", { outcome: { type: "success", interruptIds: ["i1"] } })), at: 2 },
    ],
  },
  "subagent-interrupts-raised": {
    accept: [
      {
        name: "a suspended subagent naming the interrupt it raised",
        events: [started(), subStarted("s1"), subFinished("s1", { outcome: { type: "suspended", interruptIds: ["i1"] } }), finished({ type: "interrupt", interrupts: [interrupt("i1", { subagentRunId: "s1" })] })],
      },
    ],
    reject: [
      {
        name: "an interrupt id the run does not end with",
        events: [started(), subStarted("s1"), subFinished("s1", { outcome: { type: "suspended", interruptIds: ["i9"] } }), finished({ type: "interrupt", interrupts: [interrupt("i1")] })],
        at: 3,
      },
      {
        name: "an interrupt another subagent raised",
        events: [
          started(),
          subStarted("s1"),
          subStarted("s2"),
          subFinished("s1", { outcome: { type: "suspended", interruptIds: ["i1"] } }),
          subFinished("s2"),
          finished({ type: "interrupt", interrupts: [interrupt("i1", { subagentRunId: "s2" })] }),
        ],
        at: 5,
      },
    ],
  },
  "run-outcome": {
    accept: [
      { name: "the cancelled outcome", events: [started(), finished({ type: "cancelled" })] },
      { name: "an interrupt outcome with one interrupt", events: [started(), finished({ type: "interrupt", interrupts: [interrupt("i1")] })] },
    ],
    reject: [
      { name: "an outcome the schema does not describe", events: [started(), finished({ type: "paused" })], at: 1 },
      { name: "an interrupt outcome with nothing to answer", events: [started(), finished({ type: "interrupt", interrupts: [] })], at: 1 },
      { name: "a success outcome carrying interrupts", events: [started(), finished({ type: "success", interrupts: [interrupt("i1")] })], at: 1 },
      { name: "an interrupt without reason", events: [started(), finished({ type: "interrupt", interrupts: [{ id: "i1" }] })], at: 1 },
    ],
  },
  "interrupt-ids-unique": {
    accept: [
      {
        name: "a still-open interrupt raised again by the resuming run",
        events: [started(), finished({ type: "interrupt", interrupts: [interrupt("i1")] }), started("r2"), finished({ type: "interrupt", interrupts: [interrupt("i1")] }, "r2")],
      },
    ],
    reject: [{ name: "two interrupts with one id", events: [started(), finished({ type: "interrupt", interrupts: [interrupt("i1"), interrupt("i1")] })], at: 1 }],
  },
  "pending-tool-calls-agree": {
    accept: [
      { name: "the frontend call left unanswered is named", events: [started(), toolStart("c1"), toolEnd("c1"), toolStart("c2"), toolEnd("c2"), toolResult("c2"), finished({ type: "success", pendingToolCallIds: ["c1"] })] },
    ],
    reject: [
      { name: "a call that got its result named as pending", events: [started(), toolStart("c1"), toolEnd("c1"), toolResult("c1"), finished({ type: "success", pendingToolCallIds: ["c1"] })], at: 4 },
      { name: "a call never started named as pending", events: [started(), finished({ type: "success", pendingToolCallIds: ["c9"] })], at: 1 },
    ],
  },

  // ── the gateway's contract: rejected only in strict mode ──
  "strict/one-run": {
    accept: [{ name: "one run", events: stamped(run(...text("m1"))) }, { name: "one RUN_ERROR alone", events: stamped([failed()]) }],
    reject: [
      { name: "two runs", events: stamped([...run(), started("r2"), finished(undefined, "r2")]), at: 2 },
      { name: "RUN_ERROR after RUN_FINISHED", events: stamped([...run(), failed()]), at: 2 },
    ],
  },
  "strict/closed-before-run-error": {
    accept: [{ name: "spans closed before RUN_ERROR", events: stamped([started(), ...text("m1"), failed()]) }],
    reject: [{ name: "RUN_ERROR while a message is open", events: stamped([started(), textStart("m1"), failed()]), at: 2 }],
  },
  "strict/non-empty-delta": {
    accept: [{ name: "a non-empty text delta", events: stamped(run(...text("m1"))) }],
    reject: [
      { name: "an empty text delta", events: stamped(run(textStart("m1"), textContent("m1", ""), textEnd("m1"))), at: 2 },
      { name: "an empty text chunk delta", events: stamped(run(chunk({ messageId: "m1", delta: "" }))), at: 1 },
    ],
  },
  "strict/timestamp-required": {
    accept: [{ name: "every event stamped", events: stamped(run(...text("m1"))) }],
    reject: [{ name: "one event without timestamp", events: [...stamped([started()]), { type: "CUSTOM", name: "n", value: 1 }, ...stamped([finished()])], at: 1 }],
  },
  "strict/one-result-per-tool-call": {
    accept: [{ name: "one result", events: stamped(run(toolStart("c1"), toolEnd("c1"), toolResult("c1"))) }],
    reject: [{ name: "two results for one call", events: stamped(run(toolStart("c1"), toolEnd("c1"), toolResult("c1"), toolResult("c1", { messageId: "again" }))), at: 4 }],
  },
  "strict/interrupts-in-outcome": {
    accept: [{ name: "interrupts inside the outcome", events: stamped([started(), finished({ type: "interrupt", interrupts: [interrupt("i1")] })]) }],
    reject: [
      { name: "top-level interrupts on RUN_FINISHED", events: stamped([started(), ev("RUN_FINISHED", { threadId: "t1", runId: "r1", interrupts: [interrupt("i1")] })]), at: 1 },
    ],
  },
};

/** @ag-ui/client 1.0.0 as a consumer: chunk expansion, then its verifier. Synchronous for `from(array)`. */
function clientRejects(events: readonly Ev[]): boolean {
  let rejected = false;
  let completed = false;
  from(events as unknown as BaseEvent[])
    .pipe(transformChunks(false), verifyEvents(false))
    .subscribe({ error: () => (rejected = true), complete: () => (completed = true) });
  expect(rejected || completed, "the client must settle synchronously").toBe(true);
  return rejected;
}

// Rejections the reference consumer does not make: producer duties the spec states but does not ask a consumer to
// check (run ids, one thread, truncation, reopening, pending calls, closed sets it strips), and the gateway's own contract.
const CLIENT_ACCEPTS = new Set<string>([
  "stream-begins-with-run: an empty stream",
  "run-ids-agree: RUN_FINISHED for another runId",
  "run-ids-agree: RUN_FINISHED for another threadId",
  "one-thread-per-stream: a second run on thread t2",
  "truncated-run: the stream ends mid-message",
  "truncated-run: the second run never ends",
  "reopen-agrees: a message reopened with another role",
  "reopen-agrees: a tool call reopened with another toolCallName",
  "subagent-announced-first: an announcement after events attributed to it",
  "pending-tool-calls-agree: a call that got its result named as pending",
  "pending-tool-calls-agree: a call never started named as pending",
  "run-outcome: an outcome the schema does not describe",
  "run-outcome: an interrupt outcome with nothing to answer",
  "run-outcome: a success outcome carrying interrupts",
  "run-outcome: an interrupt without reason",
  "interrupt-ids-unique: two interrupts with one id",
  "timestamp-integer: a fractional timestamp",
  "no-null-optionals: RUN_FINISHED result null",
  "required-fields: TEXT_MESSAGE_CONTENT without delta",
  "required-fields: RUN_ERROR without message",
  "required-fields: TOOL_CALL_START without toolCallName",
  "role-closed-set: a streamed text message with role tool (TOOL_CALL_RESULT carries those)",
  "role-closed-set: a snapshot message with role robot",
  "role-closed-set: TOOL_CALL_RESULT with role assistant",
  "reasoning-role: role assistant",
  "reasoning-role: role absent: required, not defaulted",
  "event-shape: a number where an event belongs",
  "subagent-outcome: interrupt ids on a success outcome",
  "subagent-interrupts-raised: an interrupt id the run does not end with",
  "subagent-interrupts-raised: an interrupt another subagent raised",
]);

describe.each(Object.entries(RULES))("rule %s", (name, cases) => {
  const rule = name as AguiRule;
  const strict = AGUI_RULES[rule].strict;

  it.each(cases.accept.map((c) => [c.name, c] as const))("accepts: %s", (_n, c) => {
    expect(verifyAguiStream(c.events, { strict })).toEqual([]);
    if (!strict) expect(clientRejects(c.events), "@ag-ui/client accepts what the spec allows").toBe(false);
  });

  it.each(cases.reject.map((c) => [c.name, c] as const))("rejects: %s", (_n, c) => {
    const problems = verifyAguiStream(c.events, { strict });
    expect(problems.length, JSON.stringify(problems)).toBeGreaterThan(0);
    expect(problems.map((p) => p.rule)).toEqual(problems.map(() => rule));
    expect(problems[0]?.index).toBe(c.at);
    if (c.at === c.events.length) expect(problems[0]?.type).toBe(END_OF_STREAM);
    if (strict) {
      expect(verifyAguiStream(c.events), "a strict-only rule is not the spec's").toEqual([]);
    } else {
      const expected = CLIENT_ACCEPTS.has(`${rule}: ${c.name}`) ? "accepts" : "rejects";
      expect(clientRejects(c.events) ? "rejects" : "accepts", "@ag-ui/client 1.0.0 on the same stream").toBe(expected);
    }
  });
});

describe("rule catalogue", () => {
  it("has an accepting and a rejecting stream for every rule", () => {
    for (const rule of Object.keys(AGUI_RULES) as AguiRule[]) {
      expect(RULES[rule].accept.length, rule).toBeGreaterThan(0);
      expect(RULES[rule].reject.length, rule).toBeGreaterThan(0);
    }
    expect(Object.keys(RULES).sort()).toEqual(Object.keys(AGUI_RULES).sort());
  });

  it("lists only client verdicts that belong to a rejecting case", () => {
    const names = new Set(Object.entries(RULES).flatMap(([rule, c]) => c.reject.map((r) => `${rule}: ${r.name}`)));
    for (const entry of CLIENT_ACCEPTS) expect(names.has(entry), entry).toBe(true);
  });
});
