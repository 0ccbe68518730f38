// Refusals of the HTTP layer, as GatewayErrors (src/errors.ts) that the error middleware turns into the
// pre-SSE envelope {"error":{"code","message"}}: English texts are localized at the edge.
import { messageText } from "../i18n/index.js";
import { GatewayError, internalError } from "../errors.js";

export const httpErrors = {
  unauthorized: () => new GatewayError(401, "UNAUTHORIZED", messageText("http.bearerTokenRequired")),
  unsupportedMediaType: () => new GatewayError(415, "UNSUPPORTED_MEDIA_TYPE", messageText("http.contentTypeJson")),
  notFound: () => new GatewayError(404, "NOT_FOUND", messageText("http.notFound")),
  methodNotAllowed: () => new GatewayError(405, "METHOD_NOT_ALLOWED", messageText("http.methodNotAllowed")),
  internal: internalError,
  /** Last-Event-ID that cannot be answered from: malformed, another run's, ahead of the run, or on a binary stream. */
  badCursor: (why: "malformed" | "otherRun" | "future" | "binary") => new GatewayError(400, "INVALID_LAST_EVENT_ID", messageText(`replay.${why}`)),
  /** The run's events after the cursor are gone (kept a while only, on this replica or the shared store): connect instead. */
  replayExpired: () => new GatewayError(409, "REPLAY_EXPIRED", messageText("replay.expired")),
};
