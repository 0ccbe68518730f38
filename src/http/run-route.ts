// What the run routes hand off to once the request is read: admission of a POST / body, and the SSE
// stream of an admitted run or of an observation, with its metrics and self-check.
import type { Context } from "koa";
import type { Observable } from "rxjs";
import type { AguiOutput } from "../../operators/index.js";
import { normalizeLanguage, type Language } from "../i18n/index.js";
import { withCallerUserId, type Caller } from "../runs/caller.js";
import { checkCwd } from "../runs/cwd.js";
import { INPUT_ERROR_BASES, InputError } from "../input-error.js";
import { latestUserMessage, parseRunAgentInput } from "../runs/input.js";
import { buildUserParts } from "../runs/parts.js";
import { runDigest, type RunSession } from "../runs/service.js";
import type { AppOptions } from "./app.js";
import { acceptsProto, writeSse } from "./sse.js";
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
 * Streams an admitted run on the response. Not awaited by the route: the middleware chain unwinds now
 * instead of holding a suspended frame per middleware for as long as the stream lasts (hours, for a
 * parked interrupt). Everything after this point is the stream's.
 */
export function startRunStream(options: AppOptions, ctx: Context, session: RunSession): void {
  const metrics = options.metrics;
  const { logger, language } = session.ticket;
  const check = options.selfCheck?.();
  // Counted locally and added to the metric once per stream: prom-client per event costs on the hot path.
  const counts = new Map<string, number>();
  const onEvent = (event: AguiOutput) => {
    check?.onEvent(event);
    counts.set(event.type, (counts.get(event.type) ?? 0) + 1);
    options.onEvent?.(event);
  };
  metrics?.activeStreams.inc();
  const res = ctx.res;
  const onFailure = (error: unknown) => {
    logger.error({ err: error }, "an event could not be written; the run ends here");
    metrics?.streamWriteFailures.inc();
    // The run's end (its task cancelled, its thread given back) comes before the RUN_ERROR that says so.
    return session.ended();
  };
  void writeSse(res, (gate) => options.runs.stream(session, gate), { onEvent, onFailure, proto: acceptsProto(ctx.get("Accept")), language })
    .then((ended) => {
      // A run the client walked away from is incomplete by the client's choice, not the gateway's.
      if (ended === "completed") check?.end();
    })
    .catch((error: unknown) => {
      logger.error({ err: error }, "stream failed");
      res.destroy();
    })
    .finally(() => {
      metrics?.activeStreams.dec();
      for (const [type, n] of counts) metrics?.eventsOut.inc({ type }, n);
    });
}

/**
 * Streams a read-only observation on the response. Not awaited by the route, as startRunStream: the request's
 * body budget is given back when the stream starts, not when it ends.
 */
export function startObservationStream(options: AppOptions, ctx: Context, events: Observable<AguiOutput>, language: Language, span: TraceSpan = NO_SPAN): void {
  const res = ctx.res;
  void writeSse(res, () => events, {
    proto: acceptsProto(ctx.get("Accept")),
    language,
    onFailure: (error) => {
      options.logger.error({ err: error }, "an observed event could not be written");
      options.metrics?.streamWriteFailures.inc();
    },
  })
    .then((ended) => span.set({ "agui.observe.ended": ended }))
    .catch((error: unknown) => {
      options.logger.error({ err: error }, "observation stream failed");
      span.fail("STREAM_FAILED");
      res.destroy();
    })
    .finally(() => span.end());
}
