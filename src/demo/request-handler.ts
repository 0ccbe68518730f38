// The SDK request handler with iac-code's differences (a2a-upstream §5): idle-task cancel and subscribe
// rules, and GetTask and ListTasks answering with the full history.
import {
  TaskState,
  type AgentCard,
  type CancelTaskRequest,
  type GetTaskRequest,
  type ListTasksRequest,
  type ListTasksResponse,
  type SendMessageRequest,
  type StreamResponse,
  type SubscribeToTaskRequest,
  type Task,
} from "@a2a-js/sdk";
import {
  DefaultRequestHandler,
  type AgentExecutor,
  type DefaultExecutionEventBusManager,
  type InMemoryTaskStore,
  type ServerCallContext,
} from "@a2a-js/sdk/server";
import { TaskNotCancelableError, TaskNotFoundError } from "@a2a-js/sdk/errors";
import type { JsonObject } from "../../operators/types.js";
import type { TurnRegistry } from "./turns.js";

/** iac-code's idle-task rules (a2a-upstream §5.1–5.3) and full history on top of the SDK handler. */
export class ScriptedRequestHandler extends DefaultRequestHandler {
  constructor(
    card: AgentCard,
    private readonly store: InMemoryTaskStore,
    executor: AgentExecutor,
    private readonly buses: DefaultExecutionEventBusManager,
    private readonly turns: TurnRegistry,
  ) {
    super(card, store, executor, buses);
  }

  override async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const wasActive = this.turns.active.has(params.id);
    const task = params.id ? await this.store.load(params.id, context) : undefined;
    if (task && !wasActive && task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED && !waitsForInput(task)) {
      throw new TaskNotCancelableError(`Task ${params.id} is not running; its turn already finished`);
    }
    // A parked task has no running executor: give the SDK a bus so the cancel still goes through our
    // executor (same CANCELED frame as a live cancel), and release that bus afterwards.
    if (!wasActive && params.id) this.buses.createOrGetByTaskId(params.id, context);
    try {
      return this.withFullHistory(await super.cancelTask(params, context), undefined);
    } finally {
      if (!wasActive && params.id) {
        this.buses.getByTaskId(params.id, context)?.finished();
        this.buses.cleanupByTaskId(params.id, context);
      }
    }
  }

  /**
   * The turn's stream, read to its end whether or not its client still listens: iac-code goes on with a turn whose
   * client left and keeps the task's stored state current (what GetTask and SubscribeToTask show), while the SDK
   * stores a task's updates only as its client reads them.
   */
  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const source = super.sendMessageStream(params, context);
    const queue: StreamResponse[] = [];
    let listening = true;
    let ended: { failure?: unknown } | undefined;
    let wake: (() => void) | undefined;
    void (async () => {
      try {
        for await (const item of source) if (listening) (queue.push(item), wake?.());
        ended = {};
      } catch (failure) {
        ended = { failure };
      }
      wake?.();
    })();
    try {
      for (;;) {
        while (queue.length > 0) yield queue.shift()!;
        if (ended) {
          if (ended.failure !== undefined) throw ended.failure;
          return;
        }
        await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      listening = false;
      queue.length = 0;
    }
  }

  override async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    return this.withFullHistory(await super.getTask(params, context), params.historyLength);
  }

  // A context's tasks newest first by creation, each with its full history: the SDK's own list sorts by status time
  // (which a working or input-required status may lack), and its store keeps one message per id, so a turn's text
  // deltas (one id) would collapse into the first. The turn registry has every task, in the order they began.
  override async listTasks(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const tasks: Task[] = [];
    for (const id of [...this.turns.history.keys()].reverse()) {
      const task = await this.store.load(id, context);
      if (task && (!params.contextId || task.contextId === params.contextId)) tasks.push(task);
    }
    const offset = /^[0-9]{1,9}$/.test(params.pageToken ?? "") ? Number(params.pageToken) : 0;
    const pageSize = Math.min(Math.max(params.pageSize || 50, 1), 100);
    const page = tasks.slice(offset, offset + pageSize);
    return {
      tasks: page.map((task) => this.withFullHistory(task, params.historyLength)),
      nextPageToken: offset + pageSize < tasks.length ? String(offset + pageSize) : "",
      pageSize,
      totalSize: tasks.length,
    };
  }

  override async *resubscribe(
    params: SubscribeToTaskRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    if (!this.turns.active.has(params.id)) {
      throw new TaskNotFoundError(`Task ${params.id} is not active`);
    }
    yield* super.resubscribe(params, context);
  }

  private withFullHistory(task: Task, historyLength: number | undefined): Task {
    const log = this.turns.history.get(task.id);
    if (!log) return task;
    const all = structuredClone(log);
    const history = historyLength === undefined ? all : historyLength <= 0 ? [] : all.slice(-historyLength);
    return { ...task, history };
  }
}

/** An idle INPUT_REQUIRED task is still cancelable while it waits for an answer or a retry (§5.1). */
function waitsForInput(task: Task): boolean {
  const iac = task.metadata?.iac_code as JsonObject | undefined;
  const input = iac?.input as JsonObject | undefined;
  const error = iac?.error as JsonObject | undefined;
  return input?.required === true || error?.retryable === true;
}

