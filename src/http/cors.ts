// Cross-origin calls from browsers (--cors-origins): @koa/cors, answering only the listed origins. A refused
// origin gets no Access-Control-* header at all, so the browser keeps the page from the answer (and a
// preflight falls through to the routes, which refuse OPTIONS as before).
import cors from "@koa/cors";
import type { Middleware } from "koa";

/** What a page sends: JSON bodies, bearer tokens, SSE resumption and trace context. */
export const CORS_ALLOWED_HEADERS = ["content-type", "authorization", "accept", "last-event-id", "traceparent", "tracestate"] as const;
/** What a page may read besides the safelisted headers: back-off hints and auth challenges. */
export const CORS_EXPOSED_HEADERS = ["content-type", "retry-after", "www-authenticate"] as const;
export const CORS_ALLOWED_METHODS = ["GET", "HEAD", "POST", "DELETE"] as const;
/** How long a browser may reuse a preflight answer (Chromium caps it at 2 hours). */
export const CORS_MAX_AGE_SECONDS = 600;

export function crossOrigin(origins: readonly string[]): Middleware {
  const allowed = new Set(origins);
  return cors({
    // An empty answer means "not this origin": the middleware then adds nothing but `Vary: Origin`.
    origin: (ctx) => (allowed.has(ctx.get("Origin")) ? ctx.get("Origin") : ""),
    allowMethods: [...CORS_ALLOWED_METHODS],
    allowHeaders: [...CORS_ALLOWED_HEADERS],
    exposeHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: CORS_MAX_AGE_SECONDS,
    // Bearer tokens travel in a header the page sets; no cookie is ever needed, so credentials stay off.
    credentials: false,
    // The headers are set before the routes run and the error envelope keeps them; nothing to copy onto errors.
    keepHeadersOnError: false,
  });
}
