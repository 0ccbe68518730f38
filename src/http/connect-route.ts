// POST /connect: a client that has nothing (a reloaded page, a restarted runtime) gets the thread as a client that
// never left has it, in one run under the connect's run id: RUN_STARTED, the conversation as MESSAGES_SNAPSHOT, then
// either the live run's events from its first one (kept for reconnects, here or in the shared store) to its terminal
// event, or RUN_FINISHED carrying the interrupts that wait for an answer, or a plain RUN_FINISHED.
import { EventType } from "@ag-ui/core";
import type { Context } from "koa";
import { from } from "rxjs";
import type { Caller } from "../runs/caller.js";
import { parseConnectInput } from "../runs/input.js";
import { connectRun } from "../runs/service.js";
import { normalizeLanguage, type Language } from "../i18n/index.js";
import { ATTR, NO_SPAN, type TraceSpan } from "../ops/trace.js";
import type { AppOptions } from "./app.js";
import { countedResponse } from "./run-route.js";
import { acceptsProto, encodeInto, eventIdKey, type RecordTarget, type SseResponse } from "./sse.js";

export const DEFAULT_HISTORY_MESSAGES = 200;

export async function connectThread(options: AppOptions, ctx: Context, body: Record<string, unknown>, language: Language, caller: Caller, span: TraceSpan = NO_SPAN): Promise<void> {
  const input = parseConnectInput(body);
  const { threadId, runId } = input;
  span.set({ [ATTR.threadId]: threadId, [ATTR.conversationId]: threadId, [ATTR.runId]: runId });
  const lang = normalizeLanguage(input.preferredLanguage) ?? language;
  const target = await options.runs.connect({ threadId, caller, language: lang, ...(input.rosInvocationId !== undefined && { rosInvocationId: input.rosInvocationId }) });
  // Protobuf framing carries no ids, and a live run's kept events are SSE records: a binary client gets the
  // conversation as the kernel has it so far, and follows the live run through the observer route.
  const proto = acceptsProto(ctx.get("Accept"));
  const live = target.liveRun && !proto ? await liveRun(options, threadId, target.liveRun) : undefined;
  const liveTaskId = live ? (target.record.execution.taskId ?? undefined) : undefined;
  span.set({ "agui.connect.live_run": live !== undefined, "agui.connect.interrupts": target.interrupts.length });
  const messages =
    (await options.runs.history(threadId, { maxMessages: options.historyMessages ?? DEFAULT_HISTORY_MESSAGES, language: lang, span, ...(liveTaskId !== undefined && { liveTaskId }) })) ?? [];
  const response = countedResponse(options, ctx, proto, span);
  const [started, snapshot, finished] = connectRun(threadId, runId, messages, target.interrupts);
  if (!live) {
    encodeInto(from([started!, snapshot!, finished!]), { record: (record) => response.write(record), heartbeat: () => {}, end: () => response.end() }, {
      language: lang,
      proto,
      ...(!proto && { idKey: eventIdKey(runId) }),
    });
    return;
  }
  const connected = new ConnectedRun(response, threadId, runId);
  connected.event(started!);
  connected.event(snapshot!);
  live(connected);
}

/**
 * The live run's records passed on as events of the connect's run: its RUN_STARTED left out (the connect's own came
 * first), its run id replaced by the connect's, each under the connect stream's own ids.
 */
class ConnectedRun implements RecordTarget {
  private seq = 0;
  private readonly key: string;

  constructor(
    private readonly response: SseResponse,
    private readonly threadId: string,
    private readonly runId: string,
  ) {
    this.key = eventIdKey(runId);
  }

  get res() {
    return this.response.res;
  }

  get gate() {
    return this.response.gate;
  }

  get backlog() {
    return this.response.backlog;
  }

  event(event: object): void {
    this.response.write(`id: ${this.key}:${++this.seq}\ndata: ${JSON.stringify(event)}\n\n`);
  }

  /** One record or several (a replay hands over the records of a tick together). */
  write(records: string | Uint8Array): void {
    const text = typeof records === "string" ? records : Buffer.from(records).toString("utf8");
    for (const [, data] of text.matchAll(/^data: (.*)$/gm)) {
      const event = JSON.parse(data!) as { type: string; threadId?: string; runId?: string };
      if (event.type === EventType.RUN_STARTED) continue;
      if (event.runId !== undefined) event.runId = this.runId;
      if (event.threadId !== undefined) event.threadId = this.threadId;
      this.event(event);
    }
  }

  heartbeat(): void {
    this.response.heartbeat();
  }

  end(): void {
    this.response.end();
  }
}

/**
 * How the connecting client follows the live run from its first event: this replica's feed (taking the run over
 * while it waits in its reconnect grace), or the shared store's copy; undefined when its first events are gone.
 */
async function liveRun(options: AppOptions, threadId: string, run: { runId: string; digest: string }): Promise<((target: RecordTarget) => void) | undefined> {
  const key = eventIdKey(run.runId);
  const feed = options.feeds.get(threadId, key, run.digest);
  if (feed) {
    if (!("records" in feed.log.after(0))) return undefined;
    return (target) => (feed.detached ? feed.own(target, 0) : feed.follow(target, 0));
  }
  const shared = await options.feeds.fromShared(threadId, key, run.digest, 0);
  return shared && "follow" in shared ? (target) => shared.follow(target) : undefined;
}
