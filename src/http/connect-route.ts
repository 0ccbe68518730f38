// POST /connect: a client that has nothing (a reloaded page, a restarted runtime) gets the thread as a client that
// never left has it, in one run under the connect's run id: RUN_STARTED, the conversation as MESSAGES_SNAPSHOT, then
// either the live run's events from its first one (kept for reconnects, here or in the shared store) to its terminal
// event, or RUN_FINISHED carrying the interrupts that wait for an answer, or a plain RUN_FINISHED.
import { EventType, type Message } from "@ag-ui/core";
import type { Context } from "koa";
import { from } from "rxjs";
import type { Caller } from "../runs/caller.js";
import { parseConnectInput } from "../runs/input.js";
import { connectRun } from "../runs/service.js";
import { normalizeLanguage, type Language } from "../i18n/index.js";
import { ATTR, NO_SPAN, type TraceSpan } from "../ops/trace.js";
import type { AppOptions } from "./app.js";
import { countedResponse, startRunFeed } from "./run-route.js";
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
  let live = target.liveRun && !proto ? await liveRun(options, threadId, target.liveRun) : undefined;
  // A run nobody streams (a stopped gateway left it; the kernel goes on with it) is taken up and followed to its end;
  // by another connect, maybe, in the meantime: then that one's run is followed.
  if (target.liveRun && !live && !proto) {
    const adopted = await options.runs.adopt({ threadId, runId, language: lang, caller, span });
    if (adopted) live = { untilEnd: (target) => startRunFeed(options, adopted).own(target, 0) };
    else {
      const now = (await options.runs.connect({ threadId, caller, language: lang, ...(input.rosInvocationId !== undefined && { rosInvocationId: input.rosInvocationId }) })).liveRun;
      if (now?.takenUp) live = await liveRun(options, threadId, now);
    }
  }
  const liveTaskId = live && "fromFirst" in live ? (target.record.execution.taskId ?? undefined) : undefined;
  span.set({ "agui.connect.live_run": live !== undefined, "agui.connect.interrupts": target.interrupts.length });
  const history = (liveTaskId?: string) =>
    options.runs.history(threadId, { maxMessages: options.historyMessages ?? DEFAULT_HISTORY_MESSAGES, language: lang, span, ...(liveTaskId !== undefined && { liveTaskId }) });
  if (live && "untilEnd" in live) {
    // The run's first events are gone: the client could not be given the run as it went, so it gets how it ended.
    const connected = new RunEnd(countedResponse(options, ctx, proto, span), threadId, runId, async () => (await history()) ?? []);
    connected.event(connectRun(threadId, runId, [], [])[0]!);
    live.untilEnd(connected);
    return;
  }
  const messages = (await history(liveTaskId)) ?? [];
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
  live.fromFirst(connected);
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
    protected readonly threadId: string,
    protected readonly runId: string,
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
    for (const event of this.eventsOf(records)) if (event.type !== EventType.RUN_STARTED) this.event(event);
  }

  /** The live run's events in `records`, under the connect's run and thread ids. */
  protected *eventsOf(records: string | Uint8Array): Generator<{ type: string }> {
    const text = typeof records === "string" ? records : Buffer.from(records).toString("utf8");
    // Lines split at "\n" only: JSON.stringify leaves U+2028 and U+2029 raw in a record, and a /m regex ends a line at
    // them too (a text with one cut its record short, and could make one up).
    for (const line of text.split("\n")) {
      if (!line.startsWith("data: ")) continue;
      const event = JSON.parse(line.slice(6)) as { type: string; threadId?: string; runId?: string };
      if (event.runId !== undefined) event.runId = this.runId;
      if (event.threadId !== undefined) event.threadId = this.threadId;
      yield event;
    }
  }

  heartbeat(): void {
    this.response.heartbeat();
  }

  end(): void {
    this.response.end();
  }
}

type LiveRun = { fromFirst(target: RecordTarget): void } | { untilEnd(target: RecordTarget): void };

/**
 * How the connecting client follows the live run: from its first event, through this replica's feed (taking the run
 * over while it waits in its reconnect grace) or the shared store's copy; or, when this replica's feed no longer
 * keeps the first events, from now to its end; undefined when neither can be had.
 */
async function liveRun(options: AppOptions, threadId: string, run: { runId: string; digest: string; takenUp?: boolean }): Promise<LiveRun | undefined> {
  const key = eventIdKey(run.runId);
  const feed = options.feeds.get(threadId, key, run.digest);
  if (feed) {
    const from = "records" in feed.log.after(0) ? 0 : feed.log.lastSeq;
    const take = (target: RecordTarget) => (feed.detached ? feed.own(target, from) : feed.follow(target, from));
    // A run taken up after a restart began where the kernel was: its events alone would not show what came before.
    return from === 0 && !run.takenUp ? { fromFirst: take } : { untilEnd: take };
  }
  const shared = await options.feeds.fromShared(threadId, key, run.digest, 0);
  return shared && "follow" in shared ? { fromFirst: (target) => shared.follow(target) } : undefined;
}

/**
 * Reads a live run to its end without passing its events on, then ends the connect's run with the conversation as it
 * is then and the run's own terminal event (or, when the run stopped without one, a plain finish).
 */
class RunEnd extends ConnectedRun {
  private terminal: { type: string } | undefined;

  constructor(
    response: SseResponse,
    threadId: string,
    runId: string,
    private readonly conversation: () => Promise<Message[]>,
  ) {
    super(response, threadId, runId);
  }

  override write(records: string | Uint8Array): void {
    for (const event of this.eventsOf(records)) {
      if (event.type === EventType.RUN_FINISHED || event.type === EventType.RUN_ERROR) this.terminal = event;
    }
  }

  override end(): void {
    void this.conversation().then(
      (messages) => this.finish(messages),
      // The kernel cannot say what the conversation is now (it went away, say): the run's end all the same.
      () => this.finish(undefined),
    );
  }

  private finish(messages: Message[] | undefined): void {
    if (messages) this.event({ type: EventType.MESSAGES_SNAPSHOT, messages, timestamp: Date.now() });
    this.event(this.terminal ?? { type: EventType.RUN_FINISHED, threadId: this.threadId, runId: this.runId, timestamp: Date.now(), outcome: { type: "success" } });
    super.end();
  }
}
