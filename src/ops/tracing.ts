// The OpenTelemetry SDK behind the GatewayTracer interface (trace.ts), imported only when tracing is on. Spans go
// to an OTLP/HTTP collector in batches; the SDK reads the standard OTEL_* variables itself (endpoint, headers,
// timeout, OTEL_BSP_* delays, OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES). Nothing is
// registered globally: parents travel explicitly with each run, so two gateways in one process stay apart and
// an embedder's own OpenTelemetry set-up is left alone.
import type { IncomingHttpHeaders } from "node:http";
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, defaultTextMapGetter, defaultTextMapSetter, trace, type Attributes, type Context, type Link, type Span } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { ATTR, type GatewayTracer, type SpanOptions, type SpanRef, type TraceAttributes, type TraceSpan } from "./trace.js";

const KINDS = { internal: SpanKind.INTERNAL, client: SpanKind.CLIENT, server: SpanKind.SERVER } as const;
const propagator = new W3CTraceContextPropagator();

export function startSdkTracing(options: { serviceVersion: string; exporterUrl?: string }): GatewayTracer {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: "agui-gateway", [ATTR_SERVICE_VERSION]: options.serviceVersion }))
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over our defaults.
    .merge(detectResources({ detectors: [envDetector] }));
  const exporter = new OTLPTraceExporter(options.exporterUrl === undefined ? {} : { url: options.exporterUrl });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  const tracer = provider.getTracer("agui-gateway", options.serviceVersion);

  const start = (name: string, parent: Context, options: SpanOptions = {}): TraceSpan =>
    new SdkSpan(
      tracer.startSpan(
        name,
        {
          kind: KINDS[options.kind ?? "internal"],
          ...(options.attributes && { attributes: defined(options.attributes) }),
          ...(options.links && { links: options.links.map(linkTo) }),
          // A Date, not a number: the SDK reads numbers below its start time as performance.now() offsets.
          ...(options.startTime !== undefined && { startTime: new Date(options.startTime) }),
        },
        parent,
      ),
      start,
    );

  return {
    enabled: true,
    fromRequest: (name, headers: IncomingHttpHeaders, spanOptions) =>
      start(name, propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter), { kind: "server", ...spanOptions }),
    under: (parent, name, spanOptions) => start(name, parent ? trace.setSpanContext(ROOT_CONTEXT, remote(parent)) : ROOT_CONTEXT, spanOptions),
    shutdown: () => provider.shutdown(),
  };
}

class SdkSpan implements TraceSpan {
  readonly ref: SpanRef;
  readonly logFields: Readonly<Record<string, string>>;

  constructor(
    private readonly span: Span,
    private readonly start: (name: string, parent: Context, options?: SpanOptions) => TraceSpan,
  ) {
    const { traceId, spanId } = span.spanContext();
    this.ref = { traceId, spanId };
    this.logFields = { trace_id: traceId, span_id: spanId };
  }

  child(name: string, options?: SpanOptions): TraceSpan {
    return this.start(name, trace.setSpan(ROOT_CONTEXT, this.span), options);
  }

  set(attributes: TraceAttributes): void {
    this.span.setAttributes(defined(attributes));
  }

  event(name: string, attributes?: TraceAttributes): void {
    this.span.addEvent(name, attributes && defined(attributes));
  }

  link(ref: SpanRef): void {
    this.span.addLink(linkTo(ref));
  }

  fail(code: string): void {
    this.span.setAttribute(ATTR.errorType, code);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: code });
  }

  end(endTime?: number): void {
    this.span.end(endTime === undefined ? undefined : new Date(endTime));
  }

  inject(headers: Record<string, string>): void {
    propagator.inject(trace.setSpan(ROOT_CONTEXT, this.span), headers, defaultTextMapSetter);
  }
}

function remote(ref: SpanRef) {
  return { traceId: ref.traceId, spanId: ref.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true };
}

function linkTo(ref: SpanRef): Link {
  return { context: remote(ref) };
}

function defined(attributes: TraceAttributes): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}
