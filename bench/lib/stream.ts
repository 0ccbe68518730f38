// The upstream turn every throughput figure is measured on: a normal-mode `iac-code a2a` turn
// (a2a-upstream §3.2, §8a) made of model calls — thinking deltas, text deltas on `<taskId>-message`, one
// tool call (started / input_delta / input_complete / completed), usage — then the final repeat of the
// last answer and the INPUT_REQUIRED end of turn. Rendered once into the SSE bytes the kernel would send.

export interface TurnShape {
  /** Total frames in the turn, at least the fixed head and tail. */
  frames: number;
  contextId: string;
  taskId?: string;
  sessionId?: string;
  /** JSON-RPC id echoed in every record. */
  rpcId?: string;
  /** Text deltas per model call before its tool call. */
  textPerCall?: number;
  /** Thinking deltas at the start of each model call. */
  thinkingPerCall?: number;
  /** End with the INPUT_REQUIRED end of turn (off for an endless flood body). */
  end?: boolean;
}

type Result = Record<string, unknown>;

const WORDS = ["Creating ", "the VPC ", "template ", "with two ", "vSwitches ", "in zone ", "cn-hangzhou-h ", "and a ", "security group ", "that allows ", "port 443. ", "Next, ", "I will ", "check the ", "quota. "];

/** The StreamResponse objects of the turn, in order (what `result` holds in each record). */
export function* turnResults(shape: TurnShape): Generator<Result> {
  const taskId = shape.taskId ?? "task-bench-1";
  const contextId = shape.contextId;
  const sessionId = shape.sessionId ?? "8d2c7e1a-3b4f-4c5d-9e6f-0a1b2c3d4e5f";
  const textPerCall = shape.textPerCall ?? 1900;
  const thinkingPerCall = shape.thinkingPerCall ?? 50;
  const end = shape.end ?? true;
  const meta = (extra: Result = {}): Result => ({ iac_code: { ...extra, iacCodeSessionId: sessionId } });
  const working = (extra: Result, message?: Result): Result => ({
    statusUpdate: { taskId, contextId, status: { state: "TASK_STATE_WORKING", ...(message && { message }) }, metadata: meta(extra) },
  });
  const agentText = (messageId: string, text: string): Result => ({ messageId, contextId, taskId, role: "ROLE_AGENT", parts: [{ text }] });

  const tail = end ? 2 : 0;
  let left = shape.frames;
  const take = (): boolean => left-- > tail;

  yield {
    task: {
      id: taskId,
      contextId,
      status: { state: "TASK_STATE_SUBMITTED" },
      history: [{ messageId: "m1", contextId, taskId, role: "ROLE_USER", parts: [{ text: "Create a VPC template" }], metadata: { iac_code: { cwd: "/srv/ws/t1" } } }],
    },
  };
  left--;
  yield { statusUpdate: { taskId, contextId, status: { state: "TASK_STATE_SUBMITTED", timestamp: "2026-08-21T07:00:00.010Z" }, metadata: meta() } };
  left--;
  yield { statusUpdate: { taskId, contextId, status: { state: "TASK_STATE_WORKING", timestamp: "2026-08-21T07:00:00.020Z" }, metadata: meta() } };
  left--;

  let call = 0;
  let lastAnswer = "";
  let word = 0;
  while (left > tail) {
    call++;
    for (let i = 0; i < thinkingPerCall && take(); i++) {
      yield working({ thinking: { type: "raw_thinking", text: `Step ${i} of the plan: ${WORDS[i % WORDS.length]}` } });
    }
    lastAnswer = "";
    for (let i = 0; i < textPerCall && take(); i++) {
      const text = WORDS[word++ % WORDS.length]!;
      lastAnswer += text;
      yield working({}, agentText(`${taskId}-message`, text));
    }
    const toolUseId = `call_${call}`;
    const toolFrames: Result[] = [
      { tool: { status: "started", toolUseId, name: "bash" } },
      { tool: { status: "input_delta", toolUseId, partialJsonLength: 27.0 } },
      { tool: { status: "input_complete", toolUseId, name: "bash", inputSummary: { tool_name: "bash", fields: { command: { type: "str" } } } } },
      { tool: { status: "completed", toolUseId, name: "bash", result: "exit code 0" } },
      { usage: { inputTokens: 812.0 + call, outputTokens: 40.0, totalTokens: 852.0 + call } },
    ];
    for (const extra of toolFrames) {
      if (!take()) break;
      yield working(extra);
    }
  }
  if (!end) return;
  yield {
    statusUpdate: {
      taskId,
      contextId,
      status: { state: "TASK_STATE_WORKING", timestamp: "2026-08-21T07:00:07.000Z", message: agentText(`${taskId}-2`, lastAnswer || "Done.") },
      metadata: meta({ assistantFinal: { complete: true } }),
    },
  };
  yield endOfTurn(taskId, contextId, sessionId);
}

export function endOfTurn(taskId: string, contextId: string, sessionId = "8d2c7e1a-3b4f-4c5d-9e6f-0a1b2c3d4e5f"): Result {
  return {
    statusUpdate: {
      taskId,
      contextId,
      status: { state: "TASK_STATE_INPUT_REQUIRED", timestamp: "2026-08-21T07:00:07.100Z" },
      metadata: { iac_code: { iacCodeSessionId: sessionId } },
    },
  };
}

/** One SSE record as the kernel frames it (LF; eventsource-parser treats CRLF the same). */
export function sseRecord(result: unknown, rpcId = "bench-1"): string {
  return `data: ${JSON.stringify({ jsonrpc: "2.0", id: rpcId, result })}\n\n`;
}

export interface RenderedTurn {
  body: Buffer;
  frames: number;
}

export function renderTurn(shape: TurnShape): RenderedTurn {
  const parts: string[] = [];
  for (const result of turnResults(shape)) parts.push(sseRecord(result, shape.rpcId));
  return { body: Buffer.from(parts.join(""), "utf8"), frames: parts.length };
}

/** Text deltas only (no head, no end): the endless body a flood repeats. */
export function renderTextDeltas(contextId: string, count: number, taskId = "task-bench-1"): Buffer {
  const parts: string[] = [];
  for (const result of turnResults({ frames: count + 3, contextId, taskId, thinkingPerCall: 0, textPerCall: count, end: false })) {
    if ("statusUpdate" in result && JSON.stringify(result).includes(`"${taskId}-message"`)) parts.push(sseRecord(result));
  }
  return Buffer.from(parts.join(""), "utf8");
}
