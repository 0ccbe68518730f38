// The SDK AgentExecutor that runs a TurnScript: script items become bus events, a missing opening Task is
// supplied, a cancel aborts the script, and a rejection before the first frame is left for the HTTP layer.
import { Message, StreamResponse, Task, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import {
  AgentEvent,
  JsonRpcTransportHandler,
  type AgentExecutionEvent,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from "@a2a-js/sdk/server";
import { A2AError } from "@a2a-js/sdk/errors";
import type { A2AMessage, A2AStreamResponse, JsonObject } from "../../operators/types.js";
import {
  REJECTION_KEY,
  SYNTHETIC_RESUME_FRAME_KEY,
  TurnRejectedError,
  type RpcError,
  type ScriptItem,
  type TurnContext,
  type TurnRegistry,
  type TurnScript,
} from "./turns.js";

function rpcErrorOf(err: unknown): RpcError | undefined {
  if (err instanceof TurnRejectedError) return err.rpcError;
  if (err instanceof A2AError) return JsonRpcTransportHandler.mapToJSONRPCError(err);
  return undefined;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

function toAsyncIterator<T>(source: AsyncIterable<T> | Iterable<T>): AsyncIterator<T> | Iterator<T> {
  return Symbol.asyncIterator in source
    ? (source as AsyncIterable<T>)[Symbol.asyncIterator]()
    : (source as Iterable<T>)[Symbol.iterator]();
}

/** Fills ids the script left out so scripts can stay short. */
function withTurnIds(item: A2AStreamResponse, turn: TurnContext): A2AStreamResponse {
  if ("statusUpdate" in item) {
    return { statusUpdate: { taskId: turn.taskId, contextId: turn.contextId, ...item.statusUpdate } };
  }
  if ("artifactUpdate" in item) {
    return { artifactUpdate: { taskId: turn.taskId, contextId: turn.contextId, ...item.artifactUpdate } };
  }
  if ("task" in item) return { task: { id: turn.taskId, contextId: turn.contextId, ...item.task } };
  return item;
}

function toAgentEvent(item: A2AStreamResponse): AgentExecutionEvent {
  const payload = StreamResponse.fromJSON(item).payload;
  switch (payload?.$case) {
    case "task":
      return AgentEvent.task(payload.value);
    case "message":
      return AgentEvent.message(payload.value);
    case "statusUpdate":
      return AgentEvent.statusUpdate(payload.value);
    case "artifactUpdate":
      return AgentEvent.artifactUpdate(payload.value);
    default:
      throw new Error(`script item is not a StreamResponse: ${JSON.stringify(item)}`);
  }
}

export class ScriptedExecutor implements AgentExecutor {
  constructor(
    private readonly script: TurnScript,
    private readonly turns: TurnRegistry,
  ) {}

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = ctx;
    const controller = new AbortController();
    const signal = controller.signal;
    this.turns.active.set(taskId, controller);
    this.turns.contextIds.set(taskId, contextId);
    const turn: TurnContext = {
      taskId,
      contextId,
      userMessage: Message.toJSON(ctx.userMessage) as A2AMessage,
      existingTask: ctx.task !== undefined,
      turnIndex: this.turns.turnCounts.get(taskId) ?? 0,
      signal,
    };
    let published = false;
    const publish = (event: AgentExecutionEvent): void => {
      if (!published && event.kind !== "task" && event.kind !== "message") {
        // The SDK rejects a stream that does not open with a Task (or Message).
        this.publishOpeningTask(ctx, bus);
      }
      published = true;
      if (event.kind === "statusUpdate") this.noteStatus(taskId, event.data);
      bus.publish(event);
    };

    this.turns.record(taskId, ctx.userMessage);
    const aborted = untilAborted(signal).then(() => undefined);
    const iterator = toAsyncIterator(this.script(turn));
    try {
      for (;;) {
        let step: IteratorResult<ScriptItem>;
        try {
          const next = Promise.resolve(iterator.next());
          // A script stuck in its own await must not outlive a cancel.
          const raced = await Promise.race([next, aborted]);
          if (raced === undefined) {
            next.catch(() => undefined);
            break;
          }
          step = raced;
        } catch (err) {
          const rejection = published ? undefined : rpcErrorOf(err);
          if (rejection === undefined) throw err;
          ctx.context.state.set(REJECTION_KEY, rejection);
          return;
        }
        if (signal.aborted || step.done) break;
        const item = step.value;
        if ("delayMs" in item) await sleep(item.delayMs, signal);
        else if ("waitForCancel" in item) await untilAborted(signal);
        else publish(toAgentEvent(withTurnIds(item, turn)));
      }
      if (!published && !signal.aborted) this.publishOpeningTask(ctx, bus);
    } finally {
      if (signal.aborted) void Promise.resolve(iterator.return?.()).catch(() => undefined);
      if (this.turns.active.get(taskId) === controller) this.turns.active.delete(taskId);
      if (published) this.turns.turnCounts.set(taskId, turn.turnIndex + 1);
    }
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    this.turns.active.get(taskId)?.abort(new Error("task canceled"));
    const contextId = this.turns.contextIds.get(taskId) ?? "";
    const sessionId = this.turns.sessionIds.get(taskId);
    const update = TaskStatusUpdateEvent.fromJSON({
      taskId,
      contextId,
      status: {
        state: "TASK_STATE_CANCELED",
        timestamp: new Date().toISOString(),
        message: {
          messageId: `${taskId}-5`,
          contextId,
          taskId,
          role: "ROLE_AGENT",
          parts: [{ text: "The task was canceled." }],
        },
      },
      ...(sessionId ? { metadata: { iac_code: { iacCodeSessionId: sessionId } } } : {}),
    });
    this.noteStatus(taskId, update);
    bus.publish(AgentEvent.statusUpdate(update));
  };

  private publishOpeningTask(ctx: RequestContext, bus: ExecutionEventBus): void {
    if (ctx.task) {
      ctx.context.state.set(SYNTHETIC_RESUME_FRAME_KEY, true);
      bus.publish(AgentEvent.task(ctx.task));
      return;
    }
    const task = Task.fromJSON({
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: { state: "TASK_STATE_SUBMITTED" },
      history: [Message.toJSON(ctx.userMessage)],
    });
    bus.publish(AgentEvent.task(task));
  }

  private noteStatus(taskId: string, update: TaskStatusUpdateEvent): void {
    const sessionId = (update.metadata?.iac_code as JsonObject | undefined)?.iacCodeSessionId;
    if (typeof sessionId === "string") this.turns.sessionIds.set(taskId, sessionId);
    if (update.status?.message) this.turns.record(taskId, update.status.message);
  }
}

