// Structure-aware upstream fuzzing (fast-check, fixed seed), aimed at the shapes that once ended the process
// (issue 14): nesting far past any limit wherever metadata is copied, interrupts amplified in count and size,
// odd keys around the result's payload, numbers past 2^53, ids that are not ids. Frames are built as JSON
// text (JSON.stringify itself overflows on the deep ones) and played by a raw kernel, on SSE and protobuf.
// Every run ends with one balanced terminal event; nothing reaches rxjs's last-resort hook, nothing large
// leaves the gateway or reaches its state, and the process and /health carry on.
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RawA2AServer } from "../src/demo/index.js";
import { startStack, type Stack } from "./helpers/e2e.js";
import { RUN_ERROR_CODES, httpCall, mapPool, postJson, sseEvents, streamProblems, type Event } from "./helpers/faults.js";
import { TASK, completed, deepJson, hostileHandler, protoEvents, status, working, type Case } from "./helpers/hostile.js";

const CASES = 80;
const PID = process.pid;

const nesting = fc.oneof(fc.integer({ min: 100, max: 200 }), fc.integer({ min: 1_000, max: 8_000 })).map((depth) => deepJson(depth));
const hugeNumber = fc.constantFrom("9007199254740993", "9223372036854775808", "1e19", "1.7e308", "-1", "2.5", '"12"', "true", "null");
const oddId = fc.oneof(
  fc.constantFrom("__proto__", "constructor", "toString", "hasOwnProperty", "", "x\\ud800", "\\udc00y"),
  fc.integer({ min: 200, max: 20_000 }).map((n) => "i".repeat(n)),
);
const bigString = fc.integer({ min: 0, max: 300_000 }).map((n) => `"${"s".repeat(n)}"`);
const options = fc.integer({ min: 0, max: 20_000 }).map((n) => `[${Array.from({ length: n }, (_, i) => `{"id":"o${i}","label":"L${i}"}`).join(",")}]`);

/** One hostile frame for context `c`, as result JSON text. */
const hostileFrame = fc.oneof(
  // Deep JSON wherever the gateway copies metadata.
  fc.tuple(nesting, fc.constantFrom("artifact", "progress", "pipeline", "batch", "snapshot", "part", "interrupt", "task")).map(
    ([deep, where]) => (c: string) =>
      ({
        artifact: `{"artifactUpdate":{"taskId":"${TASK}","contextId":"${c}","artifact":{"artifactId":"a","metadata":${deep}}}}`,
        progress: status(c, `{"tool":{"status":"progress","toolUseId":"t","x":${deep}}}`),
        pipeline: status(c, `{"pipeline":{"eventType":"stack_progress","eventId":"e","data":${deep}}}`),
        batch: status(c, `{"pipelineBatch":{"events":[{"eventType":"stack_progress","data":${deep}}]}}`),
        snapshot: status(c, `{"pipelineSnapshot":{"x":${deep}}}`),
        part: `{"statusUpdate":{"taskId":"${TASK}","contextId":"${c}","status":{"state":"TASK_STATE_WORKING","message":{"role":"ROLE_AGENT","parts":[{"text":"t","metadata":${deep}}]}}}}`,
        interrupt: status(c, `{"input":{"required":true,"inputId":"i","kind":"input_required","deploymentSummary":${deep}}}`, "TASK_STATE_INPUT_REQUIRED"),
        task: `{"task":{"id":"${TASK}","contextId":"${c}","metadata":${deep}}}`,
      })[where]!,
  ),
  // Amplified interrupts.
  fc.tuple(options, bigString, oddId, fc.integer({ min: 1, max: 300 }), fc.constantFrom("input_required", "deployment_confirmation", "permission")).map(
    ([opts, prompt, id, count, kind]) => (c: string) =>
      count === 1
        ? status(c, `{"input":{"required":true,"inputId":"${id}","kind":"${kind}","prompt":${prompt},"options":${opts}}}`, "TASK_STATE_INPUT_REQUIRED")
        : status(
            c,
            `{"pendingPermissions":[${Array.from({ length: count }, (_, i) => `{"required":true,"inputId":"${id}${i}","kind":"permission","prompt":${prompt.length > 2_000 ? '"p"' : prompt}}`).join(",")}]}`,
            "TASK_STATE_INPUT_REQUIRED",
          ),
  ),
  // Odd keys before and after the payload.
  fc.tuple(fc.constantFrom("null", '"text"', "1", "[]", "{}", "false"), fc.boolean()).map(
    ([value, before]) => (c: string) => {
      const payload = `"statusUpdate":{"taskId":"${TASK}","contextId":"${c}","metadata":{"iac_code":{"pipelineBatch":{"events":[{"eventType":"pipeline_started","eventId":"e1"},{"eventType":"pipeline_started","eventId":"e1"}]}}}}`;
      return before ? `{"odd":${value},${payload}}` : `{${payload},"odd":${value}}`;
    },
  ),
  // Numbers past what int64 and JSON integers carry.
  fc.tuple(hugeNumber, fc.constantFrom("inputTokens", "outputTokens", "totalTokens", "cachedInputTokens", "sequence", "lastSequence")).map(
    ([n, field]) => (c: string) =>
      field === "sequence"
        ? status(c, `{"pipeline":{"eventType":"pipeline_started","sequence":${n}}}`)
        : field === "lastSequence"
          ? status(c, `{"pipelineSnapshot":{"lastSequence":${n}}}`)
          : status(c, `{"usage":{"${field}":${n}}}`),
  ),
  // Ids the gateway would keep.
  oddId.map((id) => (c: string) => status(c, `{"iacCodeSessionId":"${id}"}`)),
  oddId.map((id) => (c: string) => `{"task":{"id":"${id}","contextId":"${c}","status":{"state":"TASK_STATE_WORKING"}}}`),
);

const turn = fc.record({
  frames: fc.array(hostileFrame, { minLength: 1, maxLength: 3 }),
  repeat: fc.integer({ min: 1, max: 2 }),
  proto: fc.boolean(),
});

const cases: Record<string, Case> = {};
let stack: Stack<RawA2AServer>;
let stateDir: string;

beforeAll(async () => {
  stateDir = await mkdtemp(path.join(tmpdir(), "agui-fuzz-upstream-"));
  stack = await startStack({ raw: hostileHandler(cases), gateway: { stateDir, interruptTtlSeconds: 0 } });
});

afterAll(async () => {
  await stack?.close();
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

describe("structure-aware upstream fuzz", () => {
  it(`${CASES} hostile turns, 4 at a time, on SSE and protobuf: one balanced terminal each, nothing escapes`, async () => {
    const sampled = fc.sample(turn, { numRuns: CASES, seed: 0x14_ba_d0 });
    const problems = await mapPool(sampled, 4, async (t, i) => {
      const name = `fuzz-${i}`;
      cases[name] = (c) => [working(c), ...Array.from({ length: t.repeat }, () => t.frames.map((f) => f(c))).flat(), completed(c)];
      const reply = await postJson(stack.gateway.url, stack.input({ prompt: name }), { Accept: t.proto ? "application/vnd.ag-ui.event+proto" : "text/event-stream" });
      const out: string[] = [];
      if (reply.status !== 200) return [`${name}: status ${reply.status}`];
      let events: Event[];
      if (t.proto) events = protoEvents(reply.body);
      else {
        const parsed = sseEvents(reply.text);
        out.push(...parsed.problems);
        events = parsed.events;
        out.push(...streamProblems(events));
      }
      const last = events.at(-1);
      if (last?.type !== "RUN_FINISHED" && last?.type !== "RUN_ERROR") out.push(`ends with ${last?.type}`);
      if (last?.type === "RUN_ERROR" && !RUN_ERROR_CODES.has(String(last["code"]))) out.push(`code ${String(last["code"])}`);
      if (reply.body.length > 2_000_000) out.push(`${reply.body.length} bytes out`);
      return out.map((p) => `${name}: ${p}`);
    });
    expect(problems.flat().slice(0, 20)).toEqual([]);
    const sizes = await Promise.all((await readdir(path.join(stateDir, "threads"))).map(async (n) => (await stat(path.join(stateDir, "threads", n))).size));
    expect(Math.max(...sizes)).toBeLessThan(2 * 1024 * 1024);
    // Neither last resort was needed: the limits at decode time caught every case.
    expect((await stack.gateway.metrics.unhandledErrors.get()).values.reduce((n, v) => n + v.value, 0)).toBe(0);
    expect((await stack.gateway.metrics.streamWriteFailures.get()).values.reduce((n, v) => n + v.value, 0)).toBe(0);
    expect(process.pid).toBe(PID);
    expect((await httpCall(new URL("/health", stack.gateway.url).href, { method: "GET", timeoutMs: 5_000 })).status).toBe(200);
  }, 120_000);
});
