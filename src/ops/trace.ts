// What the gateway tells OpenTelemetry, as the small interface every other layer talks to. Off (the default) it
// is TRACING_OFF: each call is a no-op on one shared object and no OpenTelemetry code is loaded; on, it is the
// SDK behind src/ops/tracing.ts, loaded by a dynamic import. Attributes carry ids, codes and counts only: never a
// token, a key, a prompt or message text.
import type { IncomingHttpHeaders } from "node:http";

export type TraceAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

/** A span's identity, hex as in traceparent: small and non-secret, so a thread record may keep it across a restart. */
export interface SpanRef {
  readonly traceId: string;
  readonly spanId: string;
}

export interface SpanOptions {
  kind?: "internal" | "client" | "server";
  attributes?: TraceAttributes;
  links?: readonly SpanRef[];
  /** Epoch milliseconds: a span that began before this process did (an interrupt parked before a restart). */
  startTime?: number;
}

export interface TraceSpan {
  /** undefined when tracing is off. */
  readonly ref: SpanRef | undefined;
  /** trace_id and span_id for log lines; empty when tracing is off. */
  readonly logFields: Readonly<Record<string, string>>;
  child(name: string, options?: SpanOptions): TraceSpan;
  set(attributes: TraceAttributes): void;
  event(name: string, attributes?: TraceAttributes): void;
  /** A span this one follows from (the run that parked at the interrupts a resume answers). */
  link(ref: SpanRef): void;
  /** The span failed with this error code (error.type); the status says only the code, never a text. */
  fail(code: string): void;
  end(endTime?: number): void;
  /** traceparent (and tracestate) for a request sent within this span. */
  inject(headers: Record<string, string>): void;
}

export interface GatewayTracer {
  readonly enabled: boolean;
  /** A span that continues the caller's trace (its traceparent and tracestate headers), or starts one. */
  fromRequest(name: string, headers: IncomingHttpHeaders, options?: SpanOptions): TraceSpan;
  /** A span under `parent` (a span of an earlier run, maybe of an earlier process), or a new trace without one. */
  under(parent: SpanRef | undefined, name: string, options?: SpanOptions): TraceSpan;
  /** Exports what is left and stops. */
  shutdown(): Promise<void>;
}

const NO_FIELDS: Readonly<Record<string, string>> = Object.freeze({});

/** Every span when tracing is off. */
export const NO_SPAN: TraceSpan = {
  ref: undefined,
  logFields: NO_FIELDS,
  child: () => NO_SPAN,
  set: () => undefined,
  event: () => undefined,
  link: () => undefined,
  fail: () => undefined,
  end: () => undefined,
  inject: () => undefined,
};

export const TRACING_OFF: GatewayTracer = {
  enabled: false,
  fromRequest: () => NO_SPAN,
  under: () => NO_SPAN,
  shutdown: async () => undefined,
};

/** Attribute names, one place: the GenAI semantic conventions where they fit, ours under agui.* otherwise. */
export const ATTR = {
  operation: "gen_ai.operation.name",
  agentName: "gen_ai.agent.name",
  conversationId: "gen_ai.conversation.id",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  providerName: "gen_ai.provider.name",
  responseModel: "gen_ai.response.model",
  errorType: "error.type",
  httpMethod: "http.request.method",
  httpRoute: "http.route",
  httpStatus: "http.response.status_code",
  rpcSystem: "rpc.system",
  rpcMethod: "rpc.method",
  serverAddress: "server.address",
  serverPort: "server.port",
  threadId: "agui.thread_id",
  runId: "agui.run_id",
  runKind: "agui.run.kind",
  runMode: "agui.run.mode",
  outcome: "agui.run.outcome",
  executionId: "agui.execution_id",
  taskId: "a2a.task_id",
  interruptCount: "agui.interrupt.count",
  interruptIds: "agui.interrupt.ids",
  frames: "a2a.frames",
  transition: "agui.state.write",
} as const;

/** The code a failure is reported with: RunError and GatewayError codes, else the kind of error. */
export function errorCodeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && /^[A-Z][A-Z0-9_]{0,63}$/.test(code)) return code;
  return error instanceof Error ? error.name : "Error";
}

/** `work` inside a child span of `parent`, which ends with it (failed with the error's code if it throws). */
export async function inSpan<T>(parent: TraceSpan, name: string, options: SpanOptions | undefined, work: (span: TraceSpan) => Promise<T>): Promise<T> {
  if (parent === NO_SPAN) return work(NO_SPAN);
  const span = parent.child(name, options);
  try {
    return await work(span);
  } catch (error) {
    span.fail(errorCodeOf(error));
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Tracing as configured: off unless `enabled`. The SDK (and every OpenTelemetry package) is imported only then;
 * the exporter reads the standard OTEL_* variables (endpoint, headers, timeout, batch delays, sampler).
 */
export async function startTracing(options: { enabled: boolean; serviceVersion: string; exporterUrl?: string }): Promise<GatewayTracer> {
  if (!options.enabled) return TRACING_OFF;
  const { startSdkTracing } = await import("./tracing.js");
  return startSdkTracing(options);
}

/** On when asked for, or when the standard OTLP endpoint variables are set (and the SDK is not disabled). */
export function tracingWanted(option: boolean | undefined, env: NodeJS.ProcessEnv): boolean {
  if (option !== undefined) return option;
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}
