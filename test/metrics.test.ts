import { describe, expect, it } from "vitest";
import { createMetrics, metricsText, recordRun, runOutcomeOf, timeResult } from "../src/ops/metrics.js";

describe("gateway metrics", () => {
  it("exposes every metric with agui_gateway_ names, help texts and the Prometheus content type", async () => {
    const m = createMetrics();
    const { contentType, body } = await metricsText(m);
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    for (const name of [
      "active_streams",
      "runs_total",
      "events_out_total",
      "upstream_latency_seconds",
      "state_write_latency_seconds",
      "interrupts_pending",
      "validation_violations_total",
      "forwarded_props_ignored_total",
    ]) {
      expect(body).toMatch(new RegExp(`^# HELP agui_gateway_${name} \\S`, "m"));
    }
    // Default process metrics are on the same registry.
    expect(body).toMatch(/^process_cpu_user_seconds_total /m);
  });

  it("shows increments with their labels", async () => {
    const m = createMetrics();
    m.activeStreams.inc();
    m.activeStreams.inc();
    m.activeStreams.dec();
    m.runs.inc({ outcome: "error", code: "A2A_UNAVAILABLE" });
    m.runs.inc({ outcome: "success", code: "" });
    m.runs.inc({ outcome: "success", code: "" });
    m.eventsOut.inc({ type: "HEARTBEAT" });
    m.eventsOut.inc({ type: "RUN_STARTED" }, 3);
    m.upstreamLatency.observe({ method: "SendStreamingMessage" }, 0.2);
    m.interruptsPending.set(4);
    m.validationViolations.inc({ kind: "order" });
    const { body } = await metricsText(m);
    expect(body).toContain("agui_gateway_active_streams 1");
    expect(body).toContain('agui_gateway_runs_total{outcome="error",code="A2A_UNAVAILABLE"} 1');
    expect(body).toContain('agui_gateway_runs_total{outcome="success",code=""} 2');
    expect(body).toContain('agui_gateway_events_out_total{type="HEARTBEAT"} 1');
    expect(body).toContain('agui_gateway_events_out_total{type="RUN_STARTED"} 3');
    expect(body).toContain('agui_gateway_upstream_latency_seconds_bucket{le="0.1",method="SendStreamingMessage"} 0');
    expect(body).toContain('agui_gateway_upstream_latency_seconds_bucket{le="0.25",method="SendStreamingMessage"} 1');
    expect(body).toContain('agui_gateway_upstream_latency_seconds_count{method="SendStreamingMessage"} 1');
    expect(body).toContain("agui_gateway_interrupts_pending 4");
    expect(body).toContain('agui_gateway_validation_violations_total{kind="order"} 1');
  });

  it("keeps two gateways' registries apart", async () => {
    const a = createMetrics();
    const b = createMetrics();
    a.eventsOut.inc({ type: "RUN_FINISHED" });
    expect((await metricsText(a)).body).toContain('agui_gateway_events_out_total{type="RUN_FINISHED"} 1');
    expect((await metricsText(b)).body).not.toContain('type="RUN_FINISHED"');
  });

  it("classifies a run by its terminal event", async () => {
    expect(runOutcomeOf(undefined)).toEqual({ outcome: "disconnected", code: "" });
    expect(runOutcomeOf({ type: "RUN_ERROR", code: "CANCELLED" })).toEqual({ outcome: "error", code: "CANCELLED" });
    expect(runOutcomeOf({ type: "RUN_FINISHED", outcome: { type: "interrupt", interrupts: [] } })).toEqual({ outcome: "interrupt", code: "" });
    expect(runOutcomeOf({ type: "RUN_FINISHED" })).toEqual({ outcome: "success", code: "" });
    expect(runOutcomeOf({ type: "RUN_FINISHED", outcome: { type: "cancelled" } })).toEqual({ outcome: "cancelled", code: "" });
    const m = createMetrics();
    recordRun(m, { type: "RUN_FINISHED", outcome: { type: "interrupt" } });
    recordRun(m, undefined);
    const { body } = await metricsText(m);
    expect(body).toContain('agui_gateway_runs_total{outcome="interrupt",code=""} 1');
    expect(body).toContain('agui_gateway_runs_total{outcome="disconnected",code=""} 1');
  });

  it("times state writes as ok or error and passes the result through", async () => {
    const m = createMetrics();
    await expect(timeResult(m.stateWriteLatency, async () => 7)).resolves.toBe(7);
    await expect(timeResult(m.stateWriteLatency, async () => Promise.reject(new Error("disk full")))).rejects.toThrow("disk full");
    await expect(timeResult(m.stateWriteLatency, async () => Promise.reject(new Error("again")))).rejects.toThrow("again");
    const { body } = await metricsText(m);
    expect(body).toContain('agui_gateway_state_write_latency_seconds_count{result="ok"} 1');
    expect(body).toContain('agui_gateway_state_write_latency_seconds_count{result="error"} 2');
  });
});
