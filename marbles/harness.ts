// Marble-test harness: builders for A2A 1.0 stream results in the shapes `iac-code a2a` sends, a
// one-letter alphabet for AG-UI events, and a TestScheduler helper that compares with any assertion lib.
import { map, type OperatorFunction } from "rxjs";
import { TestScheduler, type RunHelpers } from "rxjs/testing";
import type { A2AStreamResponse, AguiOutput, JsonObject } from "../operators/types.js";

/**
 * One letter per AG-UI event type (all 31 of AG-UI 1.0/1.1) and the gateway's heartbeat marker, so a marble line
 * shows the exact ordering of a stream. No letter is a marble syntax character (`-`, `|`, `#`, `(`, `)`, `^`, `!`, digits).
 */
export const ALPHABET: Readonly<Record<string, string>> = Object.freeze({
  RUN_STARTED: "a",
  RUN_FINISHED: "f",
  RUN_ERROR: "e",
  STEP_STARTED: "S",
  STEP_FINISHED: "F",
  TEXT_MESSAGE_START: "s",
  TEXT_MESSAGE_CONTENT: "t",
  TEXT_MESSAGE_END: "n",
  TEXT_MESSAGE_CHUNK: "k",
  REASONING_START: "r",
  REASONING_MESSAGE_START: "m",
  REASONING_MESSAGE_CONTENT: "c",
  REASONING_MESSAGE_END: "o",
  REASONING_MESSAGE_CHUNK: "q",
  REASONING_END: "z",
  REASONING_ENCRYPTED_VALUE: "y",
  TOOL_CALL_START: "T",
  TOOL_CALL_ARGS: "A",
  TOOL_CALL_END: "E",
  TOOL_CALL_CHUNK: "K",
  TOOL_CALL_RESULT: "X",
  STATE_SNAPSHOT: "b",
  STATE_DELTA: "d",
  MESSAGES_SNAPSHOT: "M",
  ACTIVITY_SNAPSHOT: "v",
  ACTIVITY_DELTA: "w",
  SUBAGENT_STARTED: "g",
  SUBAGENT_FINISHED: "G",
  SUBAGENT_ERROR: "j",
  CUSTOM: "u",
  RAW: "R",
  HEARTBEAT: "h",
});

export function letterOf(event: { type: string }): string {
  const letter = ALPHABET[event.type];
  if (letter === undefined) throw new Error(`no marble letter for ${event.type}`);
  return letter;
}

/** Maps each event to its letter: `expectObservable(out.pipe(letters())).toBe("(asT)--f|")`. */
export function letters(): OperatorFunction<AguiOutput | { type: string }, string> {
  return map(letterOf);
}

/** The letters of a list of events, concatenated: `"astnf"`. */
export function spell(events: readonly { type: string }[]): string {
  return events.map(letterOf).join("");
}

/** Runs `body` in virtual time; `assertEqual` is your library's deep equality (e.g. vitest's). */
export function runMarbles<T>(assertEqual: (actual: unknown, expected: unknown) => void, body: (helpers: RunHelpers) => T): T {
  return new TestScheduler(assertEqual).run(body);
}

export interface FrameIds {
  taskId?: string;
  contextId?: string;
  sessionId?: string;
}

/**
 * Builders of A2A stream results (the JSON-RPC `result` objects) for one task, following
 * `iac-code a2a`'s normal-mode wire: every status update carries the session id.
 */
export function a2aFrames(ids: FrameIds = {}) {
  const taskId = ids.taskId ?? "task-a1";
  const contextId = ids.contextId ?? "ctx-a1";
  const sessionId = ids.sessionId ?? "sess-a1";
  const iac = (extra: JsonObject = {}): JsonObject => ({ iac_code: { ...extra, iacCodeSessionId: sessionId } });
  const status = (state: string, extra: JsonObject = {}, message?: JsonObject): A2AStreamResponse => ({
    statusUpdate: {
      taskId,
      contextId,
      status: message ? { state: `TASK_STATE_${state}`, message } : { state: `TASK_STATE_${state}` },
      metadata: iac(extra),
    },
  });
  const agentMessage = (text: string, messageId: string) => ({
    messageId,
    contextId,
    taskId,
    role: "ROLE_AGENT",
    parts: [{ text }],
  });
  return {
    taskId,
    contextId,
    sessionId,
    task: (state = "SUBMITTED", extra: JsonObject = {}): A2AStreamResponse => ({
      task: { id: taskId, contextId, status: { state: `TASK_STATE_${state}` }, ...extra },
    }),
    status,
    working: (extra: JsonObject = {}) => status("WORKING", extra),
    text: (text: string, messageId = `${taskId}-message`) => status("WORKING", {}, agentMessage(text, messageId)),
    thinking: (text: string) => status("WORKING", { thinking: { type: "raw_thinking", text } }),
    toolStarted: (toolUseId: string, name: string) => status("WORKING", { tool: { status: "started", toolUseId, name } }),
    toolInput: (toolUseId: string, name: string, toolInput: JsonObject) =>
      status("WORKING", { tool: { status: "input_complete", toolUseId, name, toolInput } }),
    toolResult: (toolUseId: string, name: string, result: unknown, failed = false) =>
      status("WORKING", { tool: { status: failed ? "failed" : "completed", toolUseId, name, result } }),
    toolProgress: (toolUseId: string, name: string, progress: JsonObject) =>
      status("WORKING", { tool: { status: "progress", toolUseId, name, ...progress } }),
    usage: (usage: JsonObject) => status("WORKING", { usage }),
    /** The kernel's repeat of the whole answer after the deltas. */
    final: (text: string) => status("WORKING", { assistantFinal: { complete: true } }, agentMessage(text, `${taskId}-2`)),
    /** End of a normal turn: INPUT_REQUIRED with no input. */
    turnEnd: () => status("INPUT_REQUIRED"),
    permission: (inputId: string, toolUseId: string, toolName = "bash") =>
      status("INPUT_REQUIRED", {
        input: {
          schemaVersion: 1,
          kind: "permission",
          requestTaskId: taskId,
          contextId,
          inputId,
          toolUseId,
          toolName,
          title: `Run ${toolName}`,
          prompt: `Allow ${toolName}?`,
          isReadOnly: false,
          options: [
            { id: "allow_once", label: "Allow once" },
            { id: "deny", label: "Deny" },
          ],
          language: "en",
          required: true,
        },
      }),
    failed: (text = "boom") => status("FAILED", {}, agentMessage(text, `${taskId}-4`)),
    canceled: () => status("CANCELED", {}, agentMessage("canceled", `${taskId}-5`)),
    completed: () => status("COMPLETED"),
    artifact: (artifact: JsonObject): A2AStreamResponse => ({
      artifactUpdate: { taskId, contextId, artifact, lastChunk: true },
    }),
    pipeline: (envelope: JsonObject, state = "WORKING") => status(state, { pipeline: envelope }),
    pipelineBatch: (events: JsonObject[], state = "WORKING") =>
      status(state, { pipelineBatch: { schemaVersion: "1.0", events } }),
  };
}

/**
 * Subscribes `operator(scheduler)` to `items` — one item per virtual millisecond from 1 ms on, then completion — and
 * returns everything it emitted once virtual time has run out.
 */
export function collectInVirtualTime<T, R>(
  items: readonly T[],
  operator: (scheduler: TestScheduler) => OperatorFunction<T, R>,
  tail = "|",
): R[] {
  const scheduler = new TestScheduler(() => undefined);
  const values: Record<string, T> = {};
  let marble = "-"; // items start at 1 ms, so whatever is emitted on subscribe stands alone at 0
  items.forEach((item, i) => {
    const key = FRAME_KEYS[i];
    if (key === undefined) throw new Error(`at most ${FRAME_KEYS.length} items`);
    values[key] = item;
    marble += key;
  });
  const out: R[] = [];
  scheduler.run(({ cold }) => {
    cold(marble + tail, values).pipe(operator(scheduler)).subscribe((v) => out.push(v));
  });
  return out;
}

const FRAME_KEYS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/**
 * The letters of a stream grouped by event timestamp, groups separated by spaces:
 * with one A2A frame per virtual millisecond, each word is what one frame produced.
 */
export function trace(events: readonly { type: string; timestamp?: number }[]): string {
  let out = "";
  let last: number | undefined;
  for (const event of events) {
    if (out !== "" && event.timestamp !== last) out += " ";
    out += letterOf(event);
    last = event.timestamp;
  }
  return out;
}
