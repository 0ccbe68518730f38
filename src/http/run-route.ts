// What the run routes hand off to once the request is read: admission of a POST / body, the SSE stream of an
// admitted run (written into its replay log, which its connection reads), a reconnect's rest of a run
// (Last-Event-ID), and observations, with their metrics and self-check.
import type { Context } from "koa";
import { normalizeLanguage, type Language } from "../i18n/index.js";
import type { AguiOutput } from "../../operators/index.js";
import { withCallerUserId, type Caller } from "../runs/caller.js";
import { checkCwd } from "../runs/cwd.js";
import { INPUT_ERROR_BASES, InputError } from "../input-error.js";
import { latestUserMessage, parseRunAgentInput } from "../runs/input.js";
import { buildUserParts } from "../runs/parts.js";
import { runDigest, type Observation, type RunSession } from "../runs/service.js";
import type { AppOptions } from "./app.js";
import { admission } from "../runs/errors.js";
import { httpErrors } from "./errors.js";
import { parseEventId } from "./replay-log.js";
import type { RunFeed, SharedRejoin } from "./run-feed.js";
import { SseResponse, acceptsProto, eventIdKey, writeSse, type EncodeOptions } from "./sse.js";
import { ATTR, NO_SPAN, type TraceSpan } from "../ops/trace.js";

/**
 * Validates the body, builds the user's parts and checks the workspace (creating nothing), then hands the run to
 * admission. Refusals are thrown GatewayErrors; a refused request leaves no trace.
 */
export async function admitRequest(options: AppOptions, body: Record<string, unknown>, language: Language, caller: Caller, span: TraceSpan = NO_SPAN): Promise<RunSession> {
  const request = withCallerUserId(parseRunAgentInput(body), caller);
  span.set({
    [ATTR.threadId]: request.threadId,
    [ATTR.conversationId]: request.threadId,
    [ATTR.runId]: request.runId,
    [ATTR.runMode]: request.iacCode.runMode,
  });
  if (request.ignoredForwardedProps > 0) options.metrics?.forwardedPropsIgnored.inc(request.ignoredForwardedProps);
  const workspace = await checkCwd(request.iacCode.cwd, options.allowedRoots);
  let parts: ReturnType<typeof buildUserParts> = [];
  let messageId = `agui-resume-${request.runId}`;
  if (request.resume === undefined) {
    const message = latestUserMessage(request.messages);
    if (!message) throw new InputError(INPUT_ERROR_BASES.noUserMessage, "messages");
    parts = buildUserParts(message, `messages.${request.messages.lastIndexOf(message)}`);
    messageId = message.id;
  }
  const runLanguage = normalizeLanguage(request.iacCode.preferredLanguage) ?? language;
  return await options.runs.admit({ request, digest: runDigest(body), workspace, parts, messageId, language: runLanguage, caller, span });
}

/**
 * Streams an admitted run. Not awaited by the route: the middleware chain unwinds now instead of holding a
 * suspended frame per middleware for as long as the stream lasts (hours, for a parked interrupt). An SSE run is
 * encoded into its replay log and its connection owns it (reads the log, paces the run); a protobuf run has no
 * ids and is written to its connection alone.
 */
export function startRunStream(options: AppOptions, ctx: Context, session: RunSession): void {
  if (acceptsProto(ctx.get("Accept"))) {
    const { encoding, ended } = runEncoding(options, session, true);
    const response = countedResponse(options, ctx, true);
    void writeSse(response, (gate) => options.runs.stream(session, gate), encoding).then((how) => ended(how === "completed"));
    return;
  }
  const response = countedResponse(options, ctx, false);
  startRunFeed(options, session).own(response, 0);
}

/** The admitted run encoded into its feed (its replay log, what a reconnect reads), for its owner to read. */
export function startRunFeed(options: AppOptions, session: RunSession): RunFeed {
  const { request } = session.ticket;
  const { encoding, ended } = runEncoding(options, session);
  const feed = options.feeds.open(request.threadId, eventIdKey(request.runId), { executionId: session.record.execution.executionId, digest: session.ticket.digest });
  feed.start((gate) => options.runs.stream(session, gate), encoding, ended);
  return feed;
}

/** How a run's events are encoded, counted and checked, and what is done once it has ended. */
function runEncoding(options: AppOptions, session: RunSession, proto = false): { encoding: EncodeOptions; ended: (complete: boolean) => void } {
  const encoding = new RunEncoding(options, session, proto);
  return { encoding, ended: (complete) => encoding.ended(complete) };
}

/**
 * A run's encoding hooks: a class, not closures over the run, since a stream holds it for as long as it is open
 * (its methods are on the prototype: pass it as it is, a spread of it would lose them).
 */
class RunEncoding implements EncodeOptions {
  readonly language: Language;
  private readonly check: ReturnType<NonNullable<AppOptions["selfCheck"]>> | undefined;
  // Counted locally and added to the metric once per run: prom-client per event costs on the hot path. An object,
  // not a Map: a stream holds it while open, and a Map's table is ~250 B for a handful of event types.
  private readonly counts: Record<string, number> = {};

  constructor(
    private readonly options: AppOptions,
    private readonly session: RunSession,
    readonly proto: boolean,
  ) {
    this.language = session.ticket.language;
    this.check = options.selfCheck?.();
  }

  onEvent(event: AguiOutput): void {
    this.check?.onEvent(event);
    this.counts[event.type] = (this.counts[event.type] ?? 0) + 1;
    this.options.onEvent?.(event);
  }

  onFailure(error: unknown): Promise<void> {
    this.session.ticket.log.error({ err: error }, "an event could not be written; the run ends here");
    this.options.metrics?.streamWriteFailures.inc();
    // The run's end (its task cancelled, its thread given back) comes before the RUN_ERROR that says so.
    return this.session.ended();
  }

  // A run the client walked away from is incomplete by the client's choice, not the gateway's.
  ended(complete: boolean): void {
    if (complete) this.check?.end();
    for (const [type, n] of Object.entries(this.counts)) this.options.metrics?.eventsOut.inc({ type }, n);
  }
}

/**
 * The rest of a run for a client that lost its stream: the same POST / body with Last-Event-ID. The records after
 * the cursor exactly as first sent, then the live run (this connection owns it now), then its terminal event.
 */
export async function rejoinRun(options: AppOptions, ctx: Context, body: Record<string, unknown>, lastEventId: string, caller: Caller, span: TraceSpan = NO_SPAN): Promise<void> {
  const request = withCallerUserId(parseRunAgentInput(body), caller);
  span.set({ [ATTR.threadId]: request.threadId, [ATTR.conversationId]: request.threadId, [ATTR.runId]: request.runId, "agui.rejoin.last_event_id": lastEventId.slice(0, 300) });
  if (acceptsProto(ctx.get("Accept"))) throw httpErrors.badCursor("binary");
  const cursor = parseEventId(lastEventId);
  if (!cursor) throw httpErrors.badCursor("malformed");
  const runKey = eventIdKey(request.runId);
  // `<runId>:0` also names the run (a client that lost the stream before its first event knows only the run id).
  if (cursor.runId !== runKey && cursor.runId !== request.runId) throw httpErrors.badCursor("otherRun");
  const digest = runDigest(body);
  const known = await options.runs.rejoinable({ threadId: request.threadId, runId: request.runId, digest, caller });
  if (known === "unknown") throw httpErrors.badCursor("otherRun");
  const local = options.feeds.get(request.threadId, runKey, digest);
  if (!local) {
    const shared = await options.feeds.fromShared(request.threadId, runKey, digest, cursor.seq, true);
    // The id names another request's run now, and nothing of this body's run is kept: it is not this client's run.
    if (!shared && known === "reused") throw admission.runIdConflict();
    return followShared(options, ctx, shared, span);
  }
  const feed = replayable(local, cursor.seq);
  feed.rejoin(countedResponse(options, ctx, false, span), cursor.seq);
}

/** A run another replica streams (or streamed), read from the shared store. */
function followShared(options: AppOptions, ctx: Context, shared: SharedRejoin | undefined, span: TraceSpan): void {
  if (!shared) throw httpErrors.replayExpired();
  if ("refused" in shared) throw refusalOf(shared.refused);
  shared.follow(countedResponse(options, ctx, false, span));
}

/**
 * An observation: with the run's records still kept (this execution's), the run as its own client saw it, from
 * Last-Event-ID or from its start; otherwise rebuilt from the kernel's snapshot, as a stream of its own that a
 * reconnect can rejoin like a run's.
 */
export async function observeRun(options: AppOptions, ctx: Context, observation: Observation, lastEventId: string, span: TraceSpan = NO_SPAN): Promise<void> {
  if (lastEventId !== "" && acceptsProto(ctx.get("Accept"))) throw httpErrors.badCursor("binary");
  const cursor = lastEventId === "" ? undefined : parseEventId(lastEventId);
  if (lastEventId !== "" && !cursor) throw httpErrors.badCursor("malformed");
  const { taskId, digest } = await options.runs.observable(observation, cursor !== undefined);
  const { threadId, executionId } = observation;
  span.set({ [ATTR.threadId]: threadId, [ATTR.runId]: observation.runId, [ATTR.executionId]: executionId, ...(taskId !== null && { [ATTR.taskId]: taskId }) });
  const runKey = eventIdKey(observation.runId);
  if (cursor && cursor.runId !== runKey && cursor.runId !== observation.runId) {
    if (!cursor.runId.startsWith(`${runKey}#`)) throw httpErrors.badCursor("otherRun");
    const feed = replayable(options.feeds.getObservation(threadId, cursor.runId), cursor.seq);
    feed.rejoin(countedResponse(options, ctx, false, span), cursor.seq);
    return;
  }
  const found = options.feeds.get(threadId, runKey);
  const runFeed = found?.executionId === executionId ? found : undefined;
  if (cursor) {
    if (!found) return followShared(options, ctx, await options.feeds.fromShared(threadId, runKey, digest, cursor.seq), span);
    replayable(runFeed, cursor.seq).follow(countedResponse(options, ctx, false, span), cursor.seq);
    return;
  }
  if (runFeed && "records" in runFeed.log.after(0)) {
    span.set({ "agui.observe.source": "replay" });
    runFeed.follow(countedResponse(options, ctx, false, span), 0);
    return;
  }
  span.set({ "agui.observe.source": "kernel" });
  const events = await options.runs.observe(observation, span);
  const encoding: EncodeOptions = {
    language: observation.language,
    onFailure: (error) => {
      options.logger.error({ err: error }, "an observed event could not be written");
      options.metrics?.streamWriteFailures.inc();
    },
  };
  if (acceptsProto(ctx.get("Accept"))) {
    const response = countedResponse(options, ctx, true, span);
    void writeSse(response, () => events, { ...encoding, proto: true });
    return;
  }
  const feed = options.feeds.openObservation(threadId, runKey, executionId);
  const response = countedResponse(options, ctx, false, span);
  feed.start(() => events, encoding);
  feed.own(response, 0);
}

/** The feed when it still has the records after `seq`; the cursor's refusal otherwise. */
function replayable(feed: RunFeed | undefined, seq: number): RunFeed {
  const replay = feed?.log.after(seq);
  if (!feed || !replay) throw httpErrors.replayExpired();
  if ("refused" in replay) throw refusalOf(replay.refused);
  return feed;
}

/** Why a cursor cannot be answered from: ahead of the run (400), or behind what is kept (409). */
function refusalOf(refused: "future" | "expired") {
  return refused === "future" ? httpErrors.badCursor("future") : httpErrors.replayExpired();
}

/**
 * The stream's response, from now on the route's: counted in agui_gateway_active_streams while open. `span`: the
 * request's (an observation, a rejoin), ended with the stream; a run's own span ends with the run instead.
 */
export function countedResponse(options: AppOptions, ctx: Context, proto: boolean, span?: TraceSpan): SseResponse {
  ctx.respond = false;
  const response = new SseResponse(ctx.res, proto);
  options.metrics?.activeStreams.inc();
  // on, not once: a response closes once, and a once wrapper is two more objects per open stream.
  ctx.res.on("close", () => {
    options.metrics?.activeStreams.dec();
    span?.set({ "agui.stream.ended": ctx.res.writableFinished ? "completed" : "disconnected" });
    span?.end();
  });
  return response;
}
