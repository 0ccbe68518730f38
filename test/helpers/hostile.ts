// Hostile-kernel material shared by the hostile-upstream suite, the writer test and the upstream fuzz: raw
// result texts (built as text, since JSON.stringify itself overflows on 5,000 levels), a raw-server handler
// that plays them by prompt, and a reader for length-prefixed protobuf bodies.
import { decode } from "@ag-ui/proto";
import type { RawExchange, RawResponder } from "../../src/demo/index.js";
import type { WireEvent as Event } from "./sse.js";

export const TASK = "hostile-task";

/** JSON text nested `depth` levels deep, built as text: JSON.stringify itself overflows on it. */
export function deepJson(depth: number, leaf = "1"): string {
  return '{"a":'.repeat(depth) + leaf + "}".repeat(depth);
}

/** Result texts (the JSON-RPC `result`, as raw JSON) of a hostile turn, by prompt. */
export type Case = (contextId: string) => string[];

export const status = (contextId: string, iac: string, state = "TASK_STATE_WORKING") =>
  `{"statusUpdate":{"taskId":"${TASK}","contextId":"${contextId}","status":{"state":"${state}"},"metadata":{"iac_code":${iac}}}}`;
export const working = (contextId: string) => status(contextId, '{"iacCodeSessionId":"hostile-session"}');
export const completed = (contextId: string) => status(contextId, "{}", "TASK_STATE_COMPLETED");
const DEEP = 5_000;

const options = (n: number) => `[${Array.from({ length: n }, (_, i) => `{"id":"o${i}","label":"Option ${i}"}`).join(",")}]`;
const input = (extra: string) => `{"input":{"required":true,"inputId":"in-1","kind":"input_required","prompt":"Pick"${extra}}}`;

export const HOSTILE_CASES: Record<string, Case> = {
  "deep artifact metadata": (c) => [
    working(c),
    `{"artifactUpdate":{"taskId":"${TASK}","contextId":"${c}","artifact":{"artifactId":"a1","parts":[],"metadata":${deepJson(DEEP)}}}}`,
    completed(c),
  ],
  "deep tool progress": (c) => [working(c), status(c, `{"tool":{"status":"progress","toolUseId":"t1","detail":${deepJson(DEEP)}}}`), completed(c)],
  "deep pipeline envelope": (c) => [working(c), status(c, `{"pipeline":{"eventType":"pipeline_started","eventId":"e1","data":${deepJson(DEEP)}}}`), completed(c)],
  "deep pipeline batch": (c) => [working(c), status(c, `{"pipelineBatch":{"events":[{"eventType":"stack_progress","eventId":"e1","data":${deepJson(DEEP)}}]}}`), completed(c)],
  "deep pipeline snapshot": (c) => [working(c), status(c, `{"pipelineSnapshot":${deepJson(DEEP)}}`), completed(c)],
  "deep interrupt": (c) => [working(c), status(c, input(`,"displayParameters":${deepJson(DEEP)}`), "TASK_STATE_INPUT_REQUIRED")],
  "deep status message metadata": (c) => [
    working(c),
    `{"statusUpdate":{"taskId":"${TASK}","contextId":"${c}","status":{"state":"TASK_STATE_WORKING","message":{"role":"ROLE_AGENT","parts":[{"text":"x","metadata":${deepJson(DEEP)}}]}}}}`,
    completed(c),
  ],
  "200k interrupt options": (c) => [working(c), status(c, input(`,"options":${options(200_000)}`), "TASK_STATE_INPUT_REQUIRED")],
  "many pending permissions": (c) => [
    working(c),
    status(c, `{"pendingPermissions":[${Array.from({ length: 5_000 }, (_, i) => `{"required":true,"inputId":"p${i}","kind":"permission"}`).join(",")}]}`, "TASK_STATE_INPUT_REQUIRED"),
  ],
  "huge interrupt prompt": (c) => [working(c), status(c, `{"input":{"required":true,"inputId":"in-1","prompt":"${"p".repeat(2_000_000)}"}}`, "TASK_STATE_INPUT_REQUIRED")],
  "huge interrupt id": (c) => [working(c), status(c, `{"input":{"required":true,"inputId":"${"i".repeat(5_000)}","prompt":"Pick"}}`, "TASK_STATE_INPUT_REQUIRED")],
  "null first result key": (c) => [
    working(c),
    `{"odd":null,"statusUpdate":{"taskId":"${TASK}","contextId":"${c}","metadata":{"iac_code":{"pipelineBatch":{"events":[{"eventType":"pipeline_started","eventId":"e1"},{"eventType":"pipeline_started","eventId":"e1"}]}}}}}`,
    completed(c),
  ],
  "string first result key": (c) => [
    working(c),
    `{"odd":"text","statusUpdate":{"taskId":"${TASK}","contextId":"${c}","metadata":{"iac_code":{"pipelineBatch":{"events":[{"eventType":"pipeline_started","eventId":"e1"},{"eventType":"pipeline_started","eventId":"e1"}]}}}}}`,
    completed(c),
  ],
  "usage 2^63": (c) => [working(c), status(c, '{"usage":{"inputTokens":9223372036854775808,"outputTokens":1e19,"totalTokens":1e300}}'), completed(c)],
  "usage sum to infinity": (c) => [
    working(c),
    status(c, '{"usage":{"inputTokens":1.7e308,"totalTokens":1.7e308}}'),
    status(c, '{"usage":{"inputTokens":1.7e308,"totalTokens":1.7e308}}'),
    completed(c),
  ],
  "huge task id": (c) => [`{"task":{"id":"${"t".repeat(5_000)}","contextId":"${c}","status":{"state":"TASK_STATE_SUBMITTED"}}}`, completed(c)],
  "huge session id": (c) => [status(c, `{"iacCodeSessionId":"${"s".repeat(5_000)}"}`), completed(c)],
  "lone surrogate session id": (c) => [status(c, '{"iacCodeSessionId":"s\\ud800"}'), completed(c)],
  "thousand open steps": (c) => [
    working(c),
    status(c, `{"pipelineBatch":{"events":[${Array.from({ length: 1_000 }, (_, i) => `{"eventType":"step_started","eventId":"s${i}","step":{"id":"step-${i}"}}`).join(",")}]}}`),
    completed(c),
  ],
  // Ids the projection keeps until the run ends (dedupe, tool and message pairing): one long id per frame
  // would otherwise add up to a record's size to the run's memory, frame after frame.
  "huge pipeline event id": (c) => [working(c), status(c, `{"pipeline":{"eventType":"stack_progress","eventId":"${"e".repeat(5_000)}"}}`), completed(c)],
  "huge tool use id": (c) => [working(c), status(c, `{"tool":{"status":"completed","toolUseId":"${"t".repeat(5_000)}","name":"x"}}`), completed(c)],
  "huge pipeline tool use id": (c) => [
    working(c),
    status(c, `{"pipelineBatch":{"events":[{"eventType":"tool_result","eventId":"e1","data":{"toolUseId":"${"t".repeat(5_000)}","result":"r"}}]}}`),
    completed(c),
  ],
  "huge message id": (c) => [
    working(c),
    `{"statusUpdate":{"taskId":"${TASK}","contextId":"${c}","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"${"m".repeat(5_000)}","role":"ROLE_AGENT","parts":[{"text":"x"}]}}}}`,
    completed(c),
  ],
  "huge pipeline scope": (c) => [working(c), status(c, `{"pipeline":{"eventType":"text_delta","eventId":"e1","scope":"${"s".repeat(5_000)}","data":{"text":"x"}}}`), completed(c)],
  "sequence 1e308": (c) => [working(c), status(c, '{"pipeline":{"eventType":"pipeline_started","sequence":1e308}}'), completed(c)],
};

export function hostileHandler(cases: Record<string, Case>) {
  return async (ex: RawExchange, res: RawResponder): Promise<void> => {
    if (ex.method !== "SendStreamingMessage") {
      res.json(200, { jsonrpc: "2.0", id: ex.id, result: { id: String(ex.params?.id ?? TASK), status: { state: "TASK_STATE_CANCELED" } } });
      return;
    }
    const contextId = String(ex.params?.message?.contextId ?? "");
    const prompt = ((ex.params?.message?.parts ?? []) as { text?: string }[]).map((p) => p.text ?? "").join("");
    const play = cases[prompt];
    res.sseStart();
    if (prompt === "slow") {
      // An ordinary turn that takes a while: it must finish whatever the hostile turns beside it do.
      res.sseRaw(`data: {"jsonrpc":"2.0","id":${JSON.stringify(ex.id)},"result":${working(contextId)}}\n\n`);
      await new Promise((resolve) => setTimeout(resolve, 800));
      res.sseRaw(`data: {"jsonrpc":"2.0","id":${JSON.stringify(ex.id)},"result":${completed(contextId)}}\n\n`);
      return res.end();
    }
    if (!play) {
      // An ordinary turn: proves the gateway still serves after each hostile one.
      res.sseRaw(`data: {"jsonrpc":"2.0","id":${JSON.stringify(ex.id)},"result":${working(contextId)}}\n\n`);
      res.sseRaw(`data: {"jsonrpc":"2.0","id":${JSON.stringify(ex.id)},"result":${completed(contextId)}}\n\n`);
      return res.end();
    }
    for (const result of play(contextId)) res.sseRaw(`data: {"jsonrpc":"2.0","id":${JSON.stringify(ex.id)},"result":${result}}\n\n`);
    res.end();
  };
}

/** Length-prefixed protobuf records (4-byte big-endian length) → events. */
export function protoEvents(body: Buffer): Event[] {
  const events: Event[] = [];
  let at = 0;
  while (at + 4 <= body.length) {
    const length = body.readUInt32BE(at);
    events.push(decode(body.subarray(at + 4, at + 4 + length)) as unknown as Event);
    at += 4 + length;
  }
  return events;
}

