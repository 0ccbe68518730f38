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
};
