// Refusals of the HTTP layer, as GatewayErrors (src/errors.ts) that the error middleware turns into the
// pre-SSE envelope {"error":{"code","message"}}: English texts are localized at the edge.
import { GatewayError, internalError } from "../errors.js";

export const httpErrors = {
  unauthorized: () => new GatewayError(401, "UNAUTHORIZED", "A valid bearer token is required."),
  unsupportedMediaType: () => new GatewayError(415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json."),
  notFound: () => new GatewayError(404, "NOT_FOUND", "The requested resource was not found."),
  methodNotAllowed: () => new GatewayError(405, "METHOD_NOT_ALLOWED", "The method is not allowed for this resource."),
  internal: internalError,
};
