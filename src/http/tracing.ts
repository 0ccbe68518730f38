// A span per API request, continuing the caller's traceparent. Routes that stream (a run, an observation) take the
// span over and end it with the stream; the others end it here, with the status or the error code they answered.
import type { Context, Next } from "koa";
import { gatewayErrorOf } from "../errors.js";
import { ATTR, type GatewayTracer, type TraceAttributes, type TraceSpan } from "../ops/trace.js";

export interface TracedState {
  /** The request's span while tracing is on. */
  span?: TraceSpan;
}

/** `traced(name, route)`: the middleware for one route; a no-op pass-through when tracing is off. */
export function requestSpans(tracer: GatewayTracer) {
  return (name: string, route: string, attributes: TraceAttributes = {}) =>
    async (ctx: Context & { state: TracedState }, next: Next) => {
      if (!tracer.enabled) return next();
      const span = tracer.fromRequest(name, ctx.headers, { attributes: { [ATTR.httpMethod]: ctx.method, [ATTR.httpRoute]: route, ...attributes } });
      ctx.state.span = span;
      try {
        await next();
      } catch (error) {
        const http = gatewayErrorOf(error);
        span.set({ [ATTR.httpStatus]: http.status });
        span.fail(http.code);
        span.end();
        throw error;
      }
      if (ctx.respond === false) return;
      span.set({ [ATTR.httpStatus]: ctx.status });
      span.end();
    };
}
