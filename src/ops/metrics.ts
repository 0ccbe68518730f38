// Prometheus metrics for the gateway. A registry of our own (never prom-client's global one), so two
// gateways in one process — tests, embedding — never share or double-register a metric.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export interface GatewayMetrics {
  registry: Registry;
  /** Open SSE responses. */
  activeStreams: Gauge;
  /** outcome: success | interrupt | cancelled | error | disconnected; code: the RUN_ERROR code, or "". */
  runs: Counter<"outcome" | "code">;
  /** AG-UI events written, by type (HEARTBEAT included). */
  eventsOut: Counter<"type">;
  /** Seconds from sending an A2A request until its first response byte or frame. */
  upstreamLatency: Histogram<"method">;
  /** Seconds per durable thread-state write; result: ok | error. */
  stateWriteLatency: Histogram<"result">;
  /** Pending interrupts held by loaded threads: counted when scraped, through `countInterruptsPending`. */
  interruptsPending: Gauge;
  /** Set by the run service: what interruptsPending reports (a walk over the loaded threads, so only per scrape). */
  countInterruptsPending?: () => number;
  /** Self-check failures on outgoing streams; kind: schema | order. */
  validationViolations: Counter<"kind">;
  /** Top-level forwardedProps keys besides iacCode, ignored (apps share `properties` among agents). */
  forwardedPropsIgnored: Counter;
  /** Errors that escaped every operator and reached rxjs's last-resort hook (a bug; never a known input). */
  unhandledErrors: Counter;
  /** Streams the SSE/protobuf writer had to cut short (an event it could not encode; should stay 0). */
  streamWriteFailures: Counter;
  /** Request bodies refused before they were read; reason: budget | deadline | connections. */
  refusedRequests: Counter<"reason">;
  /** Seconds per shared state store (Redis) operation, by op. */
  stateStoreLatency: Histogram<"op">;
  /** Shared state store operations that failed (unreachable, timed out, unusable data), by op. */
  stateStoreErrors: Counter<"op">;
}

export type RunOutcome = "success" | "interrupt" | "cancelled" | "error" | "disconnected";

const PREFIX = "agui_gateway_";

export function createMetrics(): GatewayMetrics {
  const registry = new Registry();
  // Standard process_* / nodejs_* names, unprefixed, so stock Node dashboards work as they are.
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const metrics: GatewayMetrics = {
    registry,
    activeStreams: new Gauge({ name: `${PREFIX}active_streams`, help: "Open AG-UI SSE responses.", registers }),
    runs: new Counter({
      name: `${PREFIX}runs_total`,
      help: "Runs that ended, by outcome (success, interrupt, cancelled, error, disconnected) and RUN_ERROR code.",
      labelNames: ["outcome", "code"] as const,
      registers,
    }),
    eventsOut: new Counter({
      name: `${PREFIX}events_out_total`,
      help: "AG-UI events written to clients, by event type (HEARTBEAT included).",
      labelNames: ["type"] as const,
      registers,
    }),
    upstreamLatency: new Histogram({
      name: `${PREFIX}upstream_latency_seconds`,
      help: "Seconds from an A2A request until its first response byte or stream frame, by JSON-RPC method.",
      labelNames: ["method"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    stateWriteLatency: new Histogram({
      name: `${PREFIX}state_write_latency_seconds`,
      help: "Seconds per durable thread-state write, by result (ok, error).",
      labelNames: ["result"] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    interruptsPending: new Gauge({
      name: `${PREFIX}interrupts_pending`,
      help: "Pending interrupts held by threads loaded in memory.",
      registers,
      collect() {
        const count = metrics.countInterruptsPending?.();
        if (count !== undefined) this.set(count);
      },
    }),
    validationViolations: new Counter({
      name: `${PREFIX}validation_violations_total`,
      help: "Outgoing AG-UI events that failed the self-check, by kind (schema, order).",
      labelNames: ["kind"] as const,
      registers,
    }),
    forwardedPropsIgnored: new Counter({
      name: `${PREFIX}forwarded_props_ignored_total`,
      help: "Top-level forwardedProps keys other than iacCode, ignored: never sent to A2A, stored or logged.",
      registers,
    }),
    unhandledErrors: new Counter({
      name: `${PREFIX}unhandled_errors_total`,
      help: "Errors that escaped the stream pipeline and were caught by the last-resort rxjs hook (should stay 0).",
      registers,
    }),
    streamWriteFailures: new Counter({
      name: `${PREFIX}stream_write_failures_total`,
      help: "Streams ended early with RUN_ERROR because an event could not be encoded (should stay 0).",
      registers,
    }),
    refusedRequests: new Counter({
      name: `${PREFIX}refused_requests_total`,
      help: "Requests refused by a client-side budget, by reason (budget, deadline, connections).",
      labelNames: ["reason"] as const,
      registers,
    }),
    stateStoreLatency: new Histogram({
      name: `${PREFIX}state_store_latency_seconds`,
      help: "Seconds per shared thread-state store (Redis) operation, by op.",
      labelNames: ["op"] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    stateStoreErrors: new Counter({
      name: `${PREFIX}state_store_errors_total`,
      help: "Shared thread-state store operations that failed (unreachable, timed out, unusable data), by op.",
      labelNames: ["op"] as const,
      registers,
    }),
  };
  // Counters of things that should not happen start at 0 for every label they can have: a series that appears only
  // with its first event cannot be told from one never exported, and rate() or an alert on it has nothing to read.
  for (const kind of VIOLATION_KINDS) metrics.validationViolations.inc({ kind }, 0);
  for (const reason of REFUSAL_REASONS) metrics.refusedRequests.inc({ reason }, 0);
  return metrics;
}

const VIOLATION_KINDS = ["schema", "order"] as const;
const REFUSAL_REASONS = ["budget", "deadline", "connections"] as const;

/** The `observe` hook of a shared state store (RedisThreadStore), feeding the two state_store metrics. */
export function stateStoreObserver(m: GatewayMetrics): (op: string, seconds: number, ok: boolean) => void {
  return (op, seconds, ok) => {
    m.stateStoreLatency.observe({ op }, seconds);
    if (!ok) m.stateStoreErrors.inc({ op });
  };
}

/** The body and Content-Type for a `GET /metrics` response. */
export async function metricsText(m: GatewayMetrics): Promise<{ contentType: string; body: string }> {
  return { contentType: m.registry.contentType, body: await m.registry.metrics() };
}

/**
 * Classifies a run by its terminal event (undefined: the client left before one was produced),
 * the same classification the "run finished" log line uses.
 */
export function runOutcomeOf(terminal: { type: string; code?: unknown; outcome?: unknown } | undefined): {
  outcome: RunOutcome;
  code: string;
} {
  if (terminal === undefined) return { outcome: "disconnected", code: "" };
  if (terminal.type === "RUN_ERROR") return { outcome: "error", code: typeof terminal.code === "string" ? terminal.code : "" };
  const outcome = terminal.outcome as { type?: unknown } | undefined;
  if (outcome?.type === "interrupt") return { outcome: "interrupt", code: "" };
  return { outcome: outcome?.type === "cancelled" ? "cancelled" : "success", code: "" };
}

/** Counts one ended run. */
export function recordRun(m: GatewayMetrics, terminal: Parameters<typeof runOutcomeOf>[0]): void {
  m.runs.inc(runOutcomeOf(terminal));
}

/** Times `work` into a histogram labelled ok/error by whether it settled or threw. */
export async function timeResult<T>(histogram: Histogram<"result">, work: () => Promise<T>): Promise<T> {
  const end = histogram.startTimer();
  try {
    const value = await work();
    end({ result: "ok" });
    return value;
  } catch (error) {
    end({ result: "error" });
    throw error;
  }
}
