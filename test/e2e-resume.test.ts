// Interrupt and resume round trips end to end: an in-process gateway in front of the scripted A2A 1.0
// upstream, every run read through the real @ag-ui/client HttpAgent (schema-checked and verified). The seeds'
// rules (Interrupção, Retomada, Extensão de cancelamento, Desconexões) and reference-adapter §4.4–4.7, §6, §8.
import { buildResumeArray, type Interrupt, type RunAgentInput } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject } from "../operators/types.js";
import {
  TurnRejectedError,
  startScriptedA2AServer,
  type ScriptItem,
  type ScriptedA2AServer,
  type TurnContext,
  type TurnScript,
} from "../src/demo/index.js";
import {
  allowOnce,
  cancelCount,
  dataPartsTo,
  demoScript,
  iacCodeOf,
  interruptsOf,
  messagesToTask,
  postCancel,
  resumeInput,
  runErrorOf,
  startDurableStack,
    type ResumeEntry,
} from "./helpers/durable.js";
import {
  frame,
  ofType,
  openSse,
  postRaw,
  promptOf,
  runWithHttpAgent,
  sessionEventOf,
  startStack,
  typesOf,
  waitFor,
  type HttpAgentRun,
  type Stack,
  type WireEvent,
} from "./helpers/e2e.js";
import { permissionInput } from "./helpers/frames.js";
import { SHIPPED_PACING } from "./helpers/pacing.js";

const SESSION_ID = "session-resume-e2e";
const PERMISSION_KEYS = ["decision", "inputId", "kind", "requestTaskId", "schemaVersion", "toolUseId"];

// ---- the upstream: hand-written openers, the demo agent for "deploy", answer handlers per task ----------

type AnswerHandler = (turn: TurnContext, attempt: number) => Iterable<ScriptItem>;
const answerHandlers = new Map<string, { attempts: number; handle: AnswerHandler }>();
let slowAnswerDone = false;


function questionInput(turn: TurnContext, inputId: string, toolUseId: string): JsonObject {
  return {
    schemaVersion: 1,
    kind: "ask_user_question",
    requestTaskId: turn.taskId,
    contextId: turn.contextId,
    inputId,
    toolUseId,
    prompt: "Which plan should I use?",
    options: [
      { id: "plan-a", label: "Plan A" },
      { id: "plan-b", label: "Plan B" },
    ],
    allowFreeText: true,
    freeTextPrompt: "Or describe your own plan",
    language: "en",
    required: true,
  };
}

function toolStarted(toolUseId: string, name: string): ScriptItem[] {
  return [
    frame.working({ iac: { tool: { status: "started", toolUseId, name } } }),
    frame.working({ iac: { tool: { status: "input_complete", toolUseId, name, toolInput: { question: "plan" } } } }),
  ];
}

/** Parks the turn on `inputs`; the next messages to this task go to `handle`. */
function park(turn: TurnContext, iac: JsonObject, handle: AnswerHandler, preface: ScriptItem[] = []): ScriptItem[] {
  answerHandlers.set(turn.taskId, { attempts: 0, handle });
  return [
    frame.working({ sessionId: SESSION_ID }),
    frame.working({ text: "I need your input.", messageId: `m-ask-${turn.taskId}` }),
    ...preface,
    frame.status("TASK_STATE_INPUT_REQUIRED", { sessionId: SESSION_ID, iac }),
  ];
}

/** iac-code's end of a turn that went well: text, then INPUT_REQUIRED without an input. */
function finish(turn: TurnContext, text: string): ScriptItem[] {
  return [
    frame.working({ iac: { inputReceived: { kind: "answer" } } }),
    frame.working({ text, messageId: `m-answer-${turn.taskId}-${turn.turnIndex}` }),
    frame.status("TASK_STATE_INPUT_REQUIRED", { sessionId: SESSION_ID }),
  ];
}

/** Answers arrive one message each; the turn ends once every expected id was answered. */
function collectAnswers(expected: string[], textAnswerId?: string): AnswerHandler {
  const answered = new Set<string>();
  return function* (turn) {
    for (const part of turn.userMessage.parts ?? []) {
      const data = part.data as JsonObject | undefined;
      if (data && typeof data.inputId === "string") answered.add(data.inputId);
      else if (typeof part.text === "string" && textAnswerId) answered.add(textAnswerId);
    }
    if (expected.every((id) => answered.has(id))) yield* finish(turn, `All ${expected.length} answers received.`);
    else yield frame.working({ iac: { inputReceived: { kind: "partial" } } });
  };
}

const OPENERS: Record<string, (turn: TurnContext) => ScriptItem[]> = {
  // Same session id as the parked turns: the kernel keeps one session per context, and a change is A2A_PROTOCOL_ERROR.
  "complete plainly": (turn) => [
    frame.working({ sessionId: SESSION_ID }),
    frame.working({ text: "Done.", messageId: `m-plain-${turn.taskId}` }),
    frame.status("TASK_STATE_COMPLETED", { sessionId: SESSION_ID }),
  ],
  "ask permission": (turn) =>
    park(turn, { input: permissionInput(turn, `permission-${turn.taskId}`, "call_plain") }, function* (t) {
      yield* finish(t, "Permission handled.");
    }),
  "ask a question": (turn) =>
    park(turn, { input: questionInput(turn, "ask-call_q1", "call_q1") }, function* (t) {
      yield* finish(t, `You answered: ${promptOf(t)}`);
    }, toolStarted("call_q1", "ask_user_question")),
  "pick a candidate": (turn) =>
    park(
      turn,
      {
        input: {
          schemaVersion: 1,
          kind: "candidate_selection",
          requestTaskId: turn.taskId,
          contextId: turn.contextId,
          inputId: "input-evt-7",
          prompt: "Pick a candidate",
          options: [
            { id: "cand-0", label: "Small VPC" },
            { id: "cand-1", label: "HA VPC" },
          ],
          required: true,
        },
      },
      function* (t) {
        yield* finish(t, `Selected: ${promptOf(t)}`);
      },
    ),
  "ask two permissions": (turn) =>
    park(
      turn,
      { pendingPermissions: [permissionInput(turn, "permission-two-a", "call_two_a"), permissionInput(turn, "permission-two-b", "call_two_b")] },
      collectAnswers(["permission-two-a", "permission-two-b"]),
    ),
  "ask a permission and a question": (turn) =>
    park(
      turn,
      {
        input: questionInput(turn, "ask-call_q2", "call_q2"),
        pendingPermissions: [permissionInput(turn, "permission-mixed", "call_mixed")],
      },
      collectAnswers(["ask-call_q2", "permission-mixed"], "ask-call_q2"),
      toolStarted("call_q2", "ask_user_question"),
    ),
  "reject the first answer": (turn) =>
    park(turn, { input: permissionInput(turn, "permission-reject", "call_reject") }, function* (t, attempt) {
      if (attempt === 0) {
        throw new TurnRejectedError({ code: -32602, message: "permission_resume_invalid: pending permission not active" });
      }
      yield* finish(t, "Accepted on the second try.");
    }),
  // The answer is accepted (first frame), then the turn keeps working until someone cancels it.
  "accept then keep working": (turn) =>
    park(turn, { input: permissionInput(turn, "permission-busy", "call_busy") }, function* () {
      yield frame.working({ iac: { inputReceived: { kind: "permission", inputId: "permission-busy" } } });
      yield frame.working({ text: "Deploying, this takes a while...", messageId: "m-busy" });
      yield { waitForCancel: true };
    }),
  "answer slowly once": (turn) =>
    park(turn, { input: permissionInput(turn, "permission-slow", "call_slow") }, function* (t, attempt) {
      try {
        if (attempt === 0) yield { delayMs: 1_500 };
        yield* finish(t, `Answer handled (attempt ${attempt + 1}).`);
      } finally {
        if (attempt === 0) slowAnswerDone = true;
      }
    }),
};

function routedScript(): TurnScript {
  const demo = demoScript();
  return (turn) => {
    const waiting = turn.existingTask ? answerHandlers.get(turn.taskId) : undefined;
    if (waiting) return waiting.handle(turn, waiting.attempts++);
    return OPENERS[promptOf(turn)]?.(turn) ?? demo(turn);
  };
}

// ---- shared helpers ----------------------------------------------------------------------------

let stack: Stack<ScriptedA2AServer>;

beforeAll(async () => {
  stack = await startStack({ script: routedScript() });
});

afterAll(async () => {
  await stack.close();
});

interface Parked {
  input: RunAgentInput;
  run: HttpAgentRun;
  interrupts: Interrupt[];
  taskId: string;
  contextId: string;
  executionId: string;
}

/** A first turn that ends at its interrupt(s). */
async function parkedTurn(url: string, input: RunAgentInput): Promise<Parked> {
  const run = await runWithHttpAgent(url, input);
  const interrupts = interruptsOf(run.events);
  const session = sessionEventOf(run.events);
  return {
    input,
    run,
    interrupts,
    taskId: session["taskId"] as string,
    contextId: session["contextId"] as string,
    executionId: session["executionId"] as string,
  };
}

/** A resume through the agent of the parked run (its pendingInterrupts must be covered). */
function resumeWith(url: string, parked: Parked, resume: ResumeEntry[]): Promise<HttpAgentRun> {
  return runWithHttpAgent(url, resumeInput(parked.input, resume), { agent: parked.run.agent });
}

/** A resume from a client that holds no pending interrupts (so HttpAgent sends whatever it is given). */
function resumeRaw(url: string, parked: Parked, resume: ResumeEntry[], overrides: Partial<RunAgentInput> = {}): Promise<HttpAgentRun> {
  return runWithHttpAgent(url, resumeInput(parked.input, resume, overrides));
}

/** The refused-resume shape: exactly RUN_STARTED then RUN_ERROR with `code`, no session event. */
function expectRefused(run: HttpAgentRun, code: string): void {
  expect(typesOf(run.events)).toEqual(["RUN_STARTED", "RUN_ERROR"]);
  expect(runErrorOf(run.events).code).toBe(code);
}

function expectSuccess(run: HttpAgentRun): void {
  expect(run.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
}

function textOf(events: readonly WireEvent[]): string {
  return ofType(events, "TEXT_MESSAGE_CONTENT")
    .map((e) => e["delta"] as string)
    .join("");
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- permission round trips --------------------------------------------------------------------

describe(`a permission interrupt and its resume (demo kernel at ${SHIPPED_PACING ? "its shipped" : "0 ms"} pacing)`, () => {
  it("deploy ends at a tool_call interrupt that HttpAgent holds; allow_once reaches the same task and finishes", async () => {
    const before = Date.now();
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "deploy the demo VPC" }));
    const after = Date.now();
    expect(parked.interrupts).toHaveLength(1);
    const interrupt = parked.interrupts[0]!;
    const metadata = interrupt.metadata as JsonObject;
    // The interrupt is the A2A input: its id is the kernel's inputId, its tool call the kernel's toolUseId.
    expect(interrupt.id).toMatch(/^permission-[0-9a-f]{32}$/);
    expect(metadata.inputId).toBe(interrupt.id);
    expect(interrupt.reason).toBe("tool_call");
    expect(interrupt.toolCallId).toBe(metadata.toolUseId);
    expect(ofType(parked.run.events, "TOOL_CALL_START").map((e) => e["toolCallId"])).toContain(interrupt.toolCallId);
    expect(interrupt.responseSchema).toEqual({
      type: "object",
      properties: { decision: { type: "string", enum: ["allow_once", "deny"] } },
      required: ["decision"],
      additionalProperties: false,
    });
    expect(metadata).toMatchObject({
      title: "Deploy ROS stack",
      toolName: "ros_deploy",
      standardOptions: [
        { id: "allow_once", title: "Allow once" },
        { id: "deny", title: "Deny" },
      ],
    });
    const ttlMs = 540_000;
    const expiresAt = Date.parse(interrupt.expiresAt!);
    expect(new Date(expiresAt).toISOString()).toBe(interrupt.expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(before + ttlMs - 1_000);
    expect(expiresAt).toBeLessThanOrEqual(after + ttlMs + 1_000);
    expect(parked.run.agent.pendingInterrupts).toEqual(parked.interrupts);

    const resume = buildResumeArray(parked.run.agent.pendingInterrupts, {
      [interrupt.id]: { status: "resolved", payload: { decision: "allow_once" } },
    }) as ResumeEntry[];
    const resumed = await resumeWith(stack.gateway.url, parked, resume);

    const answers = messagesToTask(stack.upstream, parked.taskId);
    expect(answers).toHaveLength(1);
    const message = answers[0]!.message;
    expect(message.taskId).toBe(parked.taskId);
    expect(message.contextId).toBe(parked.contextId);
    expect(message.role).toBe("ROLE_USER");
    expect(message.parts).toHaveLength(1);
    expect(message.parts![0]!.mediaType).toBe("application/json");
    const data = message.parts![0]!.data as JsonObject;
    expect(Object.keys(data).sort()).toEqual(PERMISSION_KEYS);
    expect(data).toEqual({
      schemaVersion: 1,
      kind: "permission",
      requestTaskId: parked.taskId,
      inputId: interrupt.id,
      toolUseId: interrupt.toolCallId,
      decision: "allow_once",
    });

    const types = typesOf(resumed.events);
    expect(types[0]).toBe("RUN_STARTED");
    expect(types[1]).toBe("CUSTOM");
    const session = sessionEventOf(resumed.events);
    expect(session).toMatchObject({ taskId: parked.taskId, contextId: parked.contextId, executionId: parked.executionId });
    const result = ofType(resumed.events, "TOOL_CALL_RESULT");
    expect(result).toHaveLength(1);
    expect(result[0]).toMatchObject({ toolCallId: interrupt.toolCallId, role: "tool" });
    expect(result[0]!["content"]).toContain("CREATE_COMPLETE");
    expect(types).toContain("TEXT_MESSAGE_START");
    expect(textOf(resumed.events)).toContain("is deployed");
    expectSuccess(resumed);
    expect(resumed.agent.pendingInterrupts).toEqual([]);
    expect(cancelCount(stack.upstream, parked.taskId)).toBe(0);
  });

  it("deny is delivered as decision deny and the tool is not run", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "deploy but I will refuse" }));
    const id = parked.interrupts[0]!.id;
    const resumed = await resumeWith(stack.gateway.url, parked, [{ interruptId: id, status: "resolved", payload: { decision: "deny" } }]);
    expect(dataPartsTo(stack.upstream, parked.taskId)).toEqual([expect.objectContaining({ inputId: id, decision: "deny" })]);
    expect(textOf(resumed.events)).toContain("did not deploy");
    expect(ofType(resumed.events, "TOOL_CALL_RESULT")[0]!["content"]).toContain("Permission denied");
    expectSuccess(resumed);
  });

  it("cancelled on a permission is delivered as deny, without cancelling the task", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "deploy and then cancel the question" }));
    const id = parked.interrupts[0]!.id;
    const resumed = await resumeWith(stack.gateway.url, parked, [{ interruptId: id, status: "cancelled" }]);
    const data = dataPartsTo(stack.upstream, parked.taskId);
    expect(data).toHaveLength(1);
    expect(Object.keys(data[0]!).sort()).toEqual(PERMISSION_KEYS);
    expect(data[0]).toMatchObject({ inputId: id, decision: "deny" });
    expect(cancelCount(stack.upstream, parked.taskId)).toBe(0);
    expectSuccess(resumed);
  });
});

// ---- questions and selections ------------------------------------------------------------------

describe("questions and selections", () => {
  it("a question's interrupt has one selectedId branch per option plus a freeText branch", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "ask a question" }));
    expect(parked.interrupts).toHaveLength(1);
    const interrupt = parked.interrupts[0]!;
    expect(interrupt).toMatchObject({ id: "ask-call_q1", reason: "input_required", toolCallId: "call_q1" });
    const schema = interrupt.responseSchema as { oneOf: JsonObject[] };
    const consts = schema.oneOf.map((b) => (b.properties as Record<string, JsonObject>).selectedId?.const).filter((c) => c !== undefined);
    expect(consts).toEqual(["plan-a", "plan-b"]);
    expect(schema.oneOf.some((b) => (b.required as string[]).includes("freeText"))).toBe(true);
    expect(interrupt.message).toContain("Which plan should I use?");
  });

  it('{selectedId:"plan-b"} sends the option label as one text part to the same task', async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "ask a question" }));
    const resumed = await resumeWith(stack.gateway.url, parked, [
      { interruptId: "ask-call_q1", status: "resolved", payload: { selectedId: "plan-b" } },
    ]);
    const answers = messagesToTask(stack.upstream, parked.taskId);
    expect(answers).toHaveLength(1);
    expect(answers[0]!.message).toMatchObject({ taskId: parked.taskId, contextId: parked.contextId });
    expect(answers[0]!.message.parts).toEqual([{ text: "Plan B" }]);
    expect(ofType(resumed.events, "TOOL_CALL_RESULT")).toEqual([
      expect.objectContaining({ toolCallId: "call_q1", content: "Plan B" }),
    ]);
    expect(textOf(resumed.events)).toContain("You answered: Plan B");
    expectSuccess(resumed);
  });

  it("{freeText} is sent verbatim", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "ask a question" }));
    const freeText = "Use two zones, and keep  the spacing.";
    const resumed = await resumeWith(stack.gateway.url, parked, [{ interruptId: "ask-call_q1", status: "resolved", payload: { freeText } }]);
    expect(messagesToTask(stack.upstream, parked.taskId).map((a) => a.message.parts)).toEqual([[{ text: freeText }]]);
    expectSuccess(resumed);
  });

  it("a candidate selection has const branches only and its answer is the candidate's label", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "pick a candidate" }));
    const interrupt = parked.interrupts[0]!;
    expect(interrupt).toMatchObject({ id: "input-evt-7", reason: "input_required" });
    expect(interrupt.toolCallId).toBeUndefined();
    const branches = (interrupt.responseSchema as { oneOf: JsonObject[] }).oneOf;
    expect(branches.map((b) => (b.properties as Record<string, JsonObject>).selectedId?.const)).toEqual(["cand-0", "cand-1"]);
    const resumed = await resumeWith(stack.gateway.url, parked, [
      { interruptId: "input-evt-7", status: "resolved", payload: { selectedId: "cand-1" } },
    ]);
    expect(messagesToTask(stack.upstream, parked.taskId).map((a) => a.message.parts)).toEqual([[{ text: "HA VPC" }]]);
    expectSuccess(resumed);
  });

  it("a free-text answer to a candidate selection is RESUME_PAYLOAD_INVALID (no freeText branch when options exist)", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "pick a candidate" }));
    const refused = await resumeRaw(stack.gateway.url, parked, [
      { interruptId: "input-evt-7", status: "resolved", payload: { freeText: "something else" } },
    ]);
    expectRefused(refused, "RESUME_PAYLOAD_INVALID");
    expect(messagesToTask(stack.upstream, parked.taskId)).toEqual([]);
  });

  // HttpAgent 1.0 declares protocolVersion 1.0: the cancelled run ends RUN_FINISHED cancelled (RUN_ERROR CANCELLED undeclared).
  it("cancelled on a question cancels the A2A task: RUN_FINISHED outcome cancelled, pending cleared", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "ask a question" }));
    const resumed = await resumeWith(stack.gateway.url, parked, [{ interruptId: "ask-call_q1", status: "cancelled" }]);
    expect(resumed.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
    expect(ofType(resumed.events, "CUSTOM").filter((e) => e["name"] === "iac-code.session.v1")).toEqual([]);
    expect(cancelCount(stack.upstream, parked.taskId)).toBe(1);
    expect(messagesToTask(stack.upstream, parked.taskId)).toEqual([]);
    // Nothing is pending any more: a plain new turn is admitted.
    const next = await runWithHttpAgent(stack.gateway.url, stack.input({ threadId: parked.input.threadId, prompt: "complete plainly" }));
    expectSuccess(next);
  });
});

// ---- several interrupts at once ----------------------------------------------------------------

describe("two interrupts answered together", () => {
  it("two pending permissions: both answers reach the upstream, each once", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "ask two permissions" }));
    expect(parked.interrupts.map((i) => i.id)).toEqual(["permission-two-a", "permission-two-b"]);
    const resumed = await resumeWith(stack.gateway.url, parked, [
      allowOnce("permission-two-a"),
      { interruptId: "permission-two-b", status: "resolved", payload: { decision: "deny" } },
    ]);
    const data = dataPartsTo(stack.upstream, parked.taskId);
    expect(data.map((d) => [d.inputId, d.decision])).toEqual([
      ["permission-two-a", "allow_once"],
      ["permission-two-b", "deny"],
    ]);
    for (const d of data) expect(Object.keys(d).sort()).toEqual(PERMISSION_KEYS);
    // (Sideband answers go by SendMessage and the run then follows the task; this script's task had already
    // finished by then, so only its final snapshot, without text, is left to show.)
    expectSuccess(resumed);
  });

  it("a question and a permission: the label and the decision both reach the upstream", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "ask a permission and a question" }));
    expect(parked.interrupts.map((i) => i.id).sort()).toEqual(["ask-call_q2", "permission-mixed"]);
    const resumed = await resumeWith(stack.gateway.url, parked, [
      allowOnce("permission-mixed"),
      { interruptId: "ask-call_q2", status: "resolved", payload: { selectedId: "plan-a" } },
    ]);
    const parts = messagesToTask(stack.upstream, parked.taskId).flatMap((a) => a.message.parts ?? []);
    expect(parts.filter((p) => p.text !== undefined)).toEqual([{ text: "Plan A" }]);
    expect(parts.flatMap((p) => (p.data ? [p.data] : []))).toEqual([expect.objectContaining({ inputId: "permission-mixed", decision: "allow_once" })]);
    expectSuccess(resumed);
  });
});

// ---- every refusal, and the interrupt stays retryable ------------------------------------------

describe("refused resumes are [RUN_STARTED, RUN_ERROR] and the interrupt stays retryable", () => {
  const cases: [string, string, string, (ids: string[]) => ResumeEntry[]][] = [
    ["INCOMPLETE_RESUME", "one of two pending interrupts answered", "ask two permissions", (ids) => [allowOnce(ids[0]!)]],
    ["INCOMPLETE_RESUME", "the same interrupt id twice", "deploy it", (ids) => [allowOnce(ids[0]!), allowOnce(ids[0]!)]],
    ["UNKNOWN_INTERRUPT", "an id nobody asked", "deploy it", (ids) => [allowOnce(ids[0]!), allowOnce("permission-nobody-asked")]],
    [
      "RESUME_PAYLOAD_INVALID",
      "a decision outside the enum",
      "deploy it",
      (ids) => [{ interruptId: ids[0]!, status: "resolved", payload: { decision: "allow_always" } }],
    ],
    ["RESUME_PAYLOAD_INVALID", "resolved without a payload", "deploy it", (ids) => [{ interruptId: ids[0]!, status: "resolved" }]],
    [
      "RESUME_PAYLOAD_INVALID",
      "an extra key next to the decision",
      "deploy it",
      (ids) => [{ interruptId: ids[0]!, status: "resolved", payload: { decision: "allow_once", remember: true } }],
    ],
  ];

  it.each(cases)("%s: %s", async (code, _what, prompt, badResume) => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt }));
    const ids = parked.interrupts.map((i) => i.id);
    const refused = await resumeRaw(stack.gateway.url, parked, badResume(ids));
    expectRefused(refused, code);
    expect(messagesToTask(stack.upstream, parked.taskId), "nothing was sent upstream").toEqual([]);
    expect(cancelCount(stack.upstream, parked.taskId)).toBe(0);

    const corrected = await resumeWith(stack.gateway.url, parked, ids.map(allowOnce));
    expectSuccess(corrected);
    expect(dataPartsTo(stack.upstream, parked.taskId).map((d) => d.inputId)).toEqual(ids);
  });

  it("RESUME_ALREADY_APPLIED: the same answer after success is never executed again", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "deploy once only" }));
    const answer = [allowOnce(parked.interrupts[0]!.id)];
    expectSuccess(await resumeWith(stack.gateway.url, parked, answer));
    const replay = await resumeRaw(stack.gateway.url, parked, answer);
    expectRefused(replay, "RESUME_ALREADY_APPLIED");
    const again = await resumeRaw(stack.gateway.url, parked, answer);
    expectRefused(again, "RESUME_ALREADY_APPLIED");
    expect(dataPartsTo(stack.upstream, parked.taskId)).toHaveLength(1);
  });

  it("a different answer after success is EXECUTION_LOST (nothing is pending) and is not sent", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "deploy then change my mind" }));
    const id = parked.interrupts[0]!.id;
    expectSuccess(await resumeWith(stack.gateway.url, parked, [allowOnce(id)]));
    const changed = await resumeRaw(stack.gateway.url, parked, [{ interruptId: id, status: "resolved", payload: { decision: "deny" } }]);
    expectRefused(changed, "EXECUTION_LOST");
    expect(dataPartsTo(stack.upstream, parked.taskId).map((d) => d.decision)).toEqual(["allow_once"]);
  });

  it("the same runId again is 409 DUPLICATE_RUN_ID before SSE, and never replayed", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "deploy with a reused run id" }));
    const input = resumeInput(parked.input, [allowOnce(parked.interrupts[0]!.id)]);
    const first = await postRaw(stack.gateway.url, input);
    expect(first.status).toBe(200);
    const again = await postRaw(stack.gateway.url, input);
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({ error: { code: "DUPLICATE_RUN_ID" } });
    expect(dataPartsTo(stack.upstream, parked.taskId)).toHaveLength(1);
  });

  it("a resume refused for its payload under the interrupted run's id leaves that id to the corrected retry", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "deploy, then mistype the answer" }));
    const id = parked.interrupts[0]!.id;
    const sameRunId = { runId: parked.input.runId };
    const mistyped = await resumeRaw(stack.gateway.url, parked, [{ interruptId: id, status: "resolved", payload: { decision: "maybe" } }], sameRunId);
    expectRefused(mistyped, "RESUME_PAYLOAD_INVALID");
    expect(dataPartsTo(stack.upstream, parked.taskId)).toEqual([]);
    const corrected = await resumeRaw(stack.gateway.url, parked, [allowOnce(id)], sameRunId);
    expectSuccess(corrected);
    expect(dataPartsTo(stack.upstream, parked.taskId).map((d) => d.decision)).toEqual(["allow_once"]);
    // Spent now: the id names the interrupted turn again, and this body is not that turn's.
    expect((await postRaw(stack.gateway.url, resumeInput(parked.input, [allowOnce(id)], sameRunId))).json).toMatchObject({ error: { code: "RUN_ID_CONFLICT" } });
  });

  it("a rejected answer (JSON-RPC -32602) is RUN_ERROR A2A_UNAVAILABLE and a retry succeeds", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "reject the first answer" }));
    const answer = [allowOnce("permission-reject")];
    const rejected = await resumeRaw(stack.gateway.url, parked, answer);
    expectRefused(rejected, "A2A_UNAVAILABLE");
    expect(cancelCount(stack.upstream, parked.taskId)).toBe(0);
    // Still pending: a normal turn is refused, the same answer with a new runId goes through.
    const normal = await postRaw(stack.gateway.url, stack.input({ threadId: parked.input.threadId }));
    expect(normal.json).toMatchObject({ error: { code: "RESUME_REQUIRED" } });
    const retried = await resumeWith(stack.gateway.url, parked, answer);
    expectSuccess(retried);
    expect(textOf(retried.events)).toContain("Accepted on the second try.");
    expect(dataPartsTo(stack.upstream, parked.taskId)).toHaveLength(2);
  });
});

describe("resumes refused before SSE", () => {
  it("a resume of a thread the gateway never saw is 409 EXECUTION_LOST", async () => {
    const reply = await postRaw(stack.gateway.url, { ...stack.input(), resume: [allowOnce("permission-x")] });
    expect(reply.status).toBe(409);
    expect(reply.json).toMatchObject({ error: { code: "EXECUTION_LOST" } });
  });

  it("a resume with another rosInvocationId is 409 EXECUTION_LOST; the right one then succeeds", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "deploy under invocation-1" }));
    const wrong = resumeInput(parked.input, [allowOnce(parked.interrupts[0]!.id)]);
    iacCodeOf(wrong).rosInvocationId = "invocation-other";
    const reply = await postRaw(stack.gateway.url, wrong);
    expect(reply.status).toBe(409);
    expect(reply.json).toMatchObject({ error: { code: "EXECUTION_LOST" } });
    expectSuccess(await resumeWith(stack.gateway.url, parked, [allowOnce(parked.interrupts[0]!.id)]));
  });

  it("a normal message while an interrupt is pending is 409 RESUME_REQUIRED", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "deploy and wait" }));
    const reply = await postRaw(stack.gateway.url, stack.input({ threadId: parked.input.threadId, prompt: "something else" }));
    expect(reply.status).toBe(409);
    expect(reply.json).toMatchObject({ error: { code: "RESUME_REQUIRED" } });
    expect(messagesToTask(stack.upstream, parked.taskId)).toEqual([]);
  });
});

describe("EXECUTION_LOST in the stream", () => {
  it("an upstream that no longer knows the task (a fresh kernel) ends the resume with EXECUTION_LOST; pending is cleared", async () => {
    const durable = await startDurableStack({ script: routedScript() });
    const fresh = await startScriptedA2AServer({ script: routedScript() });
    try {
      const parked = await parkedTurn(durable.gateway.url, durable.input({ prompt: "ask permission" }));
      const gateway = await durable.restart({ a2aUrl: fresh.url });
      const lost = await resumeRaw(gateway.url, parked, [allowOnce(parked.interrupts[0]!.id)]);
      expectRefused(lost, "EXECUTION_LOST");
      expect(messagesToTask(fresh, parked.taskId)).toEqual([]);
      const next = await runWithHttpAgent(gateway.url, durable.input({ threadId: parked.input.threadId, prompt: "complete plainly" }));
      expectSuccess(next);
    } finally {
      await durable.close();
      await fresh.close();
    }
  });
});

// ---- the cancel extension ----------------------------------------------------------------------

describe("the cancel extension", () => {
  it("cancels an interrupted execution, clears pending, and answers already_terminal / 404 afterwards", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "deploy then cancel it" }));
    const threadId = parked.input.threadId;

    const wrongInvocation = await postCancel(stack.gateway.url, parked.executionId, { threadId, rosInvocationId: "invocation-other" });
    expect(wrongInvocation.status).toBe(404);
    expect(wrongInvocation.json).toMatchObject({ error: { code: "EXECUTION_NOT_FOUND" } });
    expect(cancelCount(stack.upstream, parked.taskId)).toBe(0);

    const unknown = await postCancel(stack.gateway.url, "execution-nobody-knows", { threadId, rosInvocationId: "invocation-1" });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toMatchObject({ error: { code: "EXECUTION_NOT_FOUND" } });

    const cancelled = await postCancel(stack.gateway.url, parked.executionId, { threadId, rosInvocationId: "invocation-1" });
    expect(cancelled).toEqual({ status: 200, json: { executionId: parked.executionId, status: "cancelled" } });
    expect(cancelCount(stack.upstream, parked.taskId)).toBe(1);

    const again = await postCancel(stack.gateway.url, parked.executionId, { threadId, rosInvocationId: "invocation-1" });
    expect(again).toEqual({ status: 200, json: { executionId: parked.executionId, status: "already_terminal" } });
    expect(cancelCount(stack.upstream, parked.taskId)).toBe(1);

    // The pending interrupt is gone: a resume finds nothing, a normal turn is admitted.
    const resume = await resumeRaw(stack.gateway.url, parked, [allowOnce(parked.interrupts[0]!.id)]);
    expectRefused(resume, "EXECUTION_LOST");
    const next = await runWithHttpAgent(stack.gateway.url, stack.input({ threadId, prompt: "after the cancel" }));
    expectSuccess(next);
    expect(sessionEventOf(next.events)["executionId"]).not.toBe(parked.executionId);
    const old = await postCancel(stack.gateway.url, parked.executionId, { threadId, rosInvocationId: "invocation-1" });
    expect(old.json).toMatchObject({ status: "already_terminal" });
  });

  it("an unknown thread is 404 EXECUTION_NOT_FOUND", async () => {
    const reply = await postCancel(stack.gateway.url, "execution-1", { threadId: "thread-nobody-knows", rosInvocationId: "invocation-1" });
    expect(reply.status).toBe(404);
    expect(reply.json).toMatchObject({ error: { code: "EXECUTION_NOT_FOUND" } });
  });

  it("an upstream that is down during the cancel gives the JSON envelope A2A_UNAVAILABLE, never a bare 500", async () => {
    const own = await startStack();
    try {
      const parked = await parkedTurn(own.gateway.url, own.input({ prompt: "deploy and lose the kernel" }));
      await own.upstream.close();
      const reply = await postCancel(own.gateway.url, parked.executionId, {
        threadId: parked.input.threadId,
        rosInvocationId: "invocation-1",
      });
      expect(reply.status).not.toBe(500);
      expect(reply.status).toBeGreaterThanOrEqual(500);
      expect(reply.json).toEqual({ error: { code: "A2A_UNAVAILABLE", message: expect.any(String) } });
    } finally {
      await own.close();
    }
  });
});

// ---- expiry ------------------------------------------------------------------------------------

describe("interrupt expiry (interruptTtlSeconds: 1)", () => {
  let short: Stack<ScriptedA2AServer>;

  beforeAll(async () => {
    short = await startStack({ gateway: { interruptTtlSeconds: 1 } });
  });

  afterAll(async () => {
    await short.close();
  });

  it("a resume after the deadline is RUN_ERROR EXECUTION_EXPIRED, the task is cancelled and pending is gone", async () => {
    const before = Date.now();
    const parked = await parkedTurn(short.gateway.url, short.input({ prompt: "deploy before it expires" }));
    const expiresAt = Date.parse(parked.interrupts[0]!.expiresAt!);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 1_000 - 50);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 1_000 + 50);
    await sleep(Math.max(0, expiresAt - Date.now()) + 200);
    // HttpAgent itself refuses to answer an expired interrupt with anything but cancelled.
    await expect(
      parked.run.agent.runAgent({ runId: "run-expired-client-side", forwardedProps: parked.input.forwardedProps, resume: [allowOnce(parked.interrupts[0]!.id)] }),
    ).rejects.toThrow(/expired/);

    const expired = await resumeRaw(short.gateway.url, parked, [allowOnce(parked.interrupts[0]!.id)]);
    expectRefused(expired, "EXECUTION_EXPIRED");
    expect(cancelCount(short.upstream, parked.taskId)).toBe(1);
    expect(dataPartsTo(short.upstream, parked.taskId)).toEqual([]);
    const next = await runWithHttpAgent(short.gateway.url, short.input({ threadId: parked.input.threadId, prompt: "a new question" }));
    expectSuccess(next);
  });

  it("after the deadline a plain new turn is accepted without a resume, and the parked task is cancelled", async () => {
    const parked = await parkedTurn(short.gateway.url, short.input({ prompt: "deploy and forget it" }));
    await sleep(Math.max(0, Date.parse(parked.interrupts[0]!.expiresAt!) - Date.now()) + 200);
    const next = await runWithHttpAgent(short.gateway.url, short.input({ threadId: parked.input.threadId, prompt: "never mind" }));
    expectSuccess(next);
    expect(sessionEventOf(next.events)["taskId"]).not.toBe(parked.taskId);
    expect(await waitFor(() => cancelCount(short.upstream, parked.taskId) === 1)).toBe(true);
  });
});

// ---- disconnects -------------------------------------------------------------------------------

describe("disconnects", () => {
  it("a client that leaves right after the interrupt does not cancel the task; the resume still works", async () => {
    const input = stack.input({ prompt: "deploy and hang up" });
    const live = await openSse(stack.gateway.url, input);
    const session = await live.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
    const finished = await live.until((e) => e.type === "RUN_FINISHED");
    live.abort();
    const taskId = (session!["value"] as { taskId: string }).taskId;
    const interrupts = (finished!["outcome"] as { interrupts: Interrupt[] }).interrupts;
    expect(await waitFor(() => stack.gateway.runs.activeRunCount === 0)).toBe(true);
    await sleep(150);
    expect(cancelCount(stack.upstream, taskId)).toBe(0);
    const resumed = await runWithHttpAgent(stack.gateway.url, resumeInput(input, [allowOnce(interrupts[0]!.id)]));
    expectSuccess(resumed);
  });

  it("a resume dropped before the upstream accepted it cancels nothing and leaves the interrupt pending", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "answer slowly once" }));
    const live = await openSse(stack.gateway.url, resumeInput(parked.input, [allowOnce("permission-slow")]));
    expect(live.status).toBe(200);
    await live.until((e) => e.type === "RUN_STARTED");
    // The answer is on its way, but the kernel has not sent its first frame yet.
    expect(await waitFor(() => messagesToTask(stack.upstream, parked.taskId).length === 1)).toBe(true);
    live.abort();
    expect(live.events.map((e) => e.type)).toEqual(["RUN_STARTED"]);
    expect(await waitFor(() => stack.gateway.runs.activeRunCount === 0)).toBe(true);
    await sleep(150);
    expect(cancelCount(stack.upstream, parked.taskId)).toBe(0);
    const normal = await postRaw(stack.gateway.url, stack.input({ threadId: parked.input.threadId }));
    expect(normal.status).toBe(409);
    expect(normal.json).toMatchObject({ error: { code: "RESUME_REQUIRED" } });
    // The kernel went on to apply that answer after the client left. A retry must not apply it again: the
    // task's history shows the answer, so the retry is "already applied" and the thread is free again.
    expect(await waitFor(() => slowAnswerDone, 5_000)).toBe(true);
    const retried = await resumeWith(stack.gateway.url, parked, [allowOnce("permission-slow")]);
    expect(retried.events.map((e) => e.type)).toEqual(["RUN_STARTED", "RUN_ERROR"]);
    expect(retried.events.at(-1)).toMatchObject({ code: "RESUME_ALREADY_APPLIED" });
    expect(messagesToTask(stack.upstream, parked.taskId)).toHaveLength(1);
    const next = await postRaw(stack.gateway.url, stack.input({ threadId: parked.input.threadId }));
    expect(next.status).toBe(200);
  });

  it("a resume dropped after the upstream accepted it is an active run left behind: its task is cancelled", async () => {
    const parked = await parkedTurn(stack.gateway.url, stack.input({ prompt: "accept then keep working" }));
    const live = await openSse(stack.gateway.url, resumeInput(parked.input, [allowOnce("permission-busy")]));
    // The session event is the sign that the kernel took the answer.
    expect(await live.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1")).toBeDefined();
    await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    live.abort();
    expect(await waitFor(() => cancelCount(stack.upstream, parked.taskId) === 1)).toBe(true);
    expect(await waitFor(() => stack.gateway.runs.activeRunCount === 0)).toBe(true);
    // Nothing is pending: the thread takes a normal turn.
    const next = await runWithHttpAgent(stack.gateway.url, stack.input({ threadId: parked.input.threadId, prompt: "complete plainly" }));
    expectSuccess(next);
  });
});
