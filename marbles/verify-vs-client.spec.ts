// Generated streams judged by our verifier and by @ag-ui/client 1.0.0 (chunk expansion, then verifyEvents):
// whatever the reference consumer rejects, the spec-mode verifier rejects too; where it accepts, we report only
// producer duties the spec states without asking a consumer to check them.
import { transformChunks, verifyEvents } from "@ag-ui/client";
import type { BaseEvent } from "@ag-ui/core";
import fc from "fast-check";
import { from } from "rxjs";
import { describe, expect, it } from "vitest";
import { verifyAguiStream, type AguiRule } from "../operators/verify/index.js";

type Ev = { type: string; [k: string]: unknown };

function clientVerdict(events: readonly Ev[]): string | undefined {
  let error: string | undefined;
  from(events as unknown as BaseEvent[])
    .pipe(transformChunks(false), verifyEvents(false))
    .subscribe({ error: (e: unknown) => (error = String(e)) });
  return error;
}

const id = fc.constantFrom("m1", "m2");
const toolId = fc.constantFrom("c1", "c2");
const sub = fc.constantFrom("s1", "s2");
const tag = fc.option(sub, { nil: undefined });
const tagged = (fields: Record<string, unknown>, t: string | undefined) => (t === undefined ? fields : { ...fields, subagentRunId: t });

const event: fc.Arbitrary<Ev> = fc.oneof(
  fc.constant({ type: "RUN_STARTED", threadId: "t1", runId: "r1" }),
  fc.constant({ type: "RUN_FINISHED", threadId: "t1", runId: "r1" }),
  fc.constant({ type: "RUN_ERROR", message: "x" }),
  fc.tuple(id, tag).map(([m, t]) => ({ type: "TEXT_MESSAGE_START", ...tagged({ messageId: m }, t) })),
  fc.tuple(id, tag).map(([m, t]) => ({ type: "TEXT_MESSAGE_CONTENT", ...tagged({ messageId: m, delta: "d" }, t) })),
  fc.tuple(id, tag).map(([m, t]) => ({ type: "TEXT_MESSAGE_END", ...tagged({ messageId: m }, t) })),
  fc.tuple(fc.option(id, { nil: undefined }), tag, fc.option(fc.constantFrom("assistant", "user"), { nil: undefined })).map(([m, t, role]) => ({
    type: "TEXT_MESSAGE_CHUNK",
    ...tagged({ ...(m && { messageId: m }), ...(role && { role }), delta: "d" }, t),
  })),
  fc.tuple(fc.option(toolId, { nil: undefined }), tag, fc.option(fc.constantFrom("search", "fetch"), { nil: undefined })).map(([c, t, name]) => ({
    type: "TOOL_CALL_CHUNK",
    ...tagged({ ...(c && { toolCallId: c }), ...(name && { toolCallName: name }), delta: "{}" }, t),
  })),
  fc.tuple(toolId, tag, fc.option(id, { nil: undefined })).map(([c, t, parent]) => ({
    type: "TOOL_CALL_START",
    ...tagged({ toolCallId: c, toolCallName: "search", ...(parent && { parentMessageId: parent }) }, t),
  })),
  fc.tuple(toolId, tag).map(([c, t]) => ({ type: "TOOL_CALL_END", ...tagged({ toolCallId: c }, t) })),
  fc.tuple(id, tag).map(([m, t]) => ({ type: "REASONING_MESSAGE_START", ...tagged({ messageId: m, role: "reasoning" }, t) })),
  fc.tuple(id, tag).map(([m, t]) => ({ type: "REASONING_MESSAGE_END", ...tagged({ messageId: m }, t) })),
  fc.tuple(fc.option(id, { nil: undefined }), tag).map(([m, t]) => ({ type: "REASONING_MESSAGE_CHUNK", ...tagged({ ...(m && { messageId: m }), delta: "d" }, t) })),
  fc.tuple(fc.constantFrom("a", "b"), tag).map(([name, t]) => ({ type: "STEP_STARTED", ...tagged({ stepName: name }, t) })),
  fc.tuple(fc.constantFrom("a", "b"), tag).map(([name, t]) => ({ type: "STEP_FINISHED", ...tagged({ stepName: name }, t) })),
  fc.tuple(sub, fc.option(sub, { nil: undefined })).map(([s, parent]) => ({ type: "SUBAGENT_STARTED", subagentRunId: s, name: "n", ...(parent && { parentSubagentRunId: parent }) })),
  sub.map((s) => ({ type: "SUBAGENT_FINISHED", subagentRunId: s })),
  sub.map((s) => ({ type: "SUBAGENT_ERROR", subagentRunId: s, message: "x" })),
  tag.map((t) => ({ type: "CUSTOM", ...tagged({ name: "n", value: 1 }, t) })),
  fc.constant({ type: "RAW", event: {} }),
  fc.constant({ type: "MESSAGES_SNAPSHOT", messages: [] }),
);

const stream = fc.array(event, { minLength: 1, maxLength: 14 }).map((body) => [{ type: "RUN_STARTED", threadId: "t1", runId: "r1" }, ...body]);

// The client does not check that a stream ends, that a reopening start agrees, that a subagent is announced before
// its work, or that an explicit start does not take over a chunk item (it reads it as a reopening).
const PRODUCER_DUTIES = new Set<AguiRule>(["truncated-run", "reopen-agrees", "subagent-announced-first", "chunk-forms-do-not-mix"]);

describe("verifyAguiStream against @ag-ui/client 1.0.0", () => {
  it("where the client accepts, reports only producer duties the client does not check", () => {
    fc.assert(
      fc.property(stream, (events) => {
        if (clientVerdict(events) !== undefined) return true;
        const extra = verifyAguiStream(events).filter((p) => !PRODUCER_DUTIES.has(p.rule));
        expect(extra, JSON.stringify(events)).toEqual([]);
        return true;
      }),
      { numRuns: 3000, seed: 16 },
    );
  });

  it("rejects every generated stream the reference consumer rejects", () => {
    fc.assert(
      fc.property(stream, (events) => {
        const client = clientVerdict(events);
        if (client === undefined) return true;
        const ours = verifyAguiStream(events);
        expect(ours, `client: ${client}\n${JSON.stringify(events)}`).not.toEqual([]);
        return true;
      }),
      { numRuns: 3000, seed: 15 },
    );
  });
});
