// OpenTelemetry traces end to end: a real gateway in front of a real A2A 1.0 server on 127.0.0.1 exports over
// OTLP/HTTP to a real receiver (test/helpers/otlp.ts), which decodes what arrives. Each case reads the whole tree:
// the run span under the caller's traceparent, its admission, kernel calls (with the traceparent the kernel got),
// durable writes, the interrupt wait across a restart, the cancel route, a kernel failure; then a secret scan over
// everything exported.
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { RawExchange, RawResponder } from "../src/demo/index.js";
import { tracingWanted } from "../src/ops/trace.js";
import { FileThreadStore } from "../src/state/file-store.js";
import { serializeThreadRecordCompact } from "../src/state/record-text.js";
import { MemoryThreadStore } from "../src/state/thread-store.js";
import { startReplicas } from "./helpers/replicas.js";
import { threadRecord } from "./helpers/thread-record.js";
import { RenameFault, allowOnce, ensureCliBuilt, interruptsOf, postCancel, resumeInput, startCli, startDurableStack, type DurableStack } from "./helpers/durable.js";
import { expectValidRun, openSse, runInput, runWithHttpAgent, scriptByPrompt, sessionEventOf, slowTurn, startStack } from "./helpers/e2e.js";
import { callerTraceparent, descendantsOf, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "./helpers/otlp.js";

const RUN_SPAN = "invoke_agent iac-code";
/** Reports every @opentelemetry/* module a CLI process loads (test/helpers/module-watch.mjs). */
const MODULE_WATCH = `--import=${pathToFileURL(path.join(import.meta.dirname, "helpers", "module-watch.mjs")).href}`;
const loadedOtel = (stderr: string) => [...stderr.matchAll(/^module-watch: (\S+)$/gm)].map((m) => m[1]!);

let receiver: OtlpReceiver;

beforeAll(async () => {
  // The SDK reads the standard variable: spans leave in batches 50 ms apart instead of 5 s.
  vi.stubEnv("OTEL_BSP_SCHEDULE_DELAY", "50");
  receiver = await startOtlpReceiver();
});

afterAll(async () => {
  await receiver.close();
  vi.unstubAllEnvs();
});

const runSpanOf = (runId: string) => receiver.span((s) => s.name === RUN_SPAN && s.attributes["agui.run_id"] === runId, `the run span of ${runId}`);
const childNamed = (parent: ReceivedSpan, name: string) =>
  receiver.span((s) => s.name === name && s.parentSpanId === parent.spanId && s.traceId === parent.traceId, `${name} under ${parent.name}`);

describe("a run's trace", () => {
  it("continues the caller's traceparent: run span, admission, the kernel call (traceparent sent), durable writes, GenAI attributes", async () => {
    const stack = await startStack({ gateway: { tracing: { exporterUrl: receiver.tracesUrl } } });
    try {
      const caller = callerTraceparent();
      const input = stack.input({ prompt: "Create a VPC template" });
      const run = await runWithHttpAgent(stack.gateway.url, input, { headers: { traceparent: caller.header, tracestate: "vendor=opaque" } });
      expect(run.events.at(-1)).toMatchObject({ type: "RUN_FINISHED" });
      const usage = (run.events.at(-1)!["usage"] ?? []) as { inputTokens?: number; outputTokens?: number }[];

      const runSpan = await runSpanOf(input.runId);
      expect(runSpan).toMatchObject({ traceId: caller.traceId, parentSpanId: caller.spanId, kind: "server", service: "agui-gateway" });
      expect(runSpan.attributes).toMatchObject({
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "iac-code",
        "gen_ai.conversation.id": input.threadId,
        "agui.thread_id": input.threadId,
        "agui.run_id": input.runId,
        "agui.run.kind": "turn",
        "agui.run.mode": "normal",
        "agui.run.outcome": "success",
        "http.request.method": "POST",
        "http.route": "/",
      });
      expect(runSpan.status.code).toBe("unset");
      // The demo kernel reports usage: the span carries the same totals as RUN_FINISHED.
      expect(usage.length).toBeGreaterThan(0);
      expect(runSpan.attributes["gen_ai.usage.input_tokens"]).toBe(usage.reduce((n, u) => n + (u.inputTokens ?? 0), 0));
      expect(runSpan.attributes["gen_ai.usage.output_tokens"]).toBe(usage.reduce((n, u) => n + (u.outputTokens ?? 0), 0));
      expect(runSpan.attributes["agui.execution_id"]).toBe(sessionEventOf(run.events)["executionId"]);

      const admission = await childNamed(runSpan, "agui.admission");
      await childNamed(admission, "agui.state.write");
      const send = await childNamed(runSpan, "a2a/SendStreamingMessage");
      expect(send).toMatchObject({ kind: "client", attributes: { "rpc.system": "jsonrpc", "rpc.method": "SendStreamingMessage", "server.address": "127.0.0.1" } });
      const received = stack.upstream.requests.find((r) => r.method === "SendStreamingMessage");
      expect(received?.headers["traceparent"]).toBe(`00-${caller.traceId}-${send.spanId}-01`);
      expect(received?.headers["tracestate"]).toBe("vendor=opaque");
      // The session mapping and the run's end are durable writes of the run itself.
      await receiver.span((s) => s.name === "agui.state.write" && s.parentSpanId === runSpan.spanId, "a durable write under the run");
      // Every span of the run lies within it, in its trace.
      for (const span of descendantsOf(receiver.spans, runSpan)) {
        expect(span.startMs, span.name).toBeGreaterThanOrEqual(runSpan.startMs);
        expect(span.endMs, span.name).toBeLessThanOrEqual(runSpan.endMs);
      }
    } finally {
      await stack.close();
    }
  });

  it("without a traceparent the run span starts a trace of its own; a refused request's span carries its code", async () => {
    const stack = await startStack({ gateway: { tracing: { exporterUrl: receiver.tracesUrl } } });
    try {
      const input = stack.input();
      await runWithHttpAgent(stack.gateway.url, input);
      const runSpan = await runSpanOf(input.runId);
      expect(runSpan.parentSpanId).toBeUndefined();

      const caller = callerTraceparent();
      const replay = await fetch(stack.gateway.url, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream", traceparent: caller.header },
        body: JSON.stringify(input),
      });
      expect(replay.status).toBe(409);
      // HttpAgent sent its own rendering of the body: the same run id with another body is RUN_ID_CONFLICT.
      expect(await replay.json()).toMatchObject({ error: { code: "RUN_ID_CONFLICT" } });
      const refused = await receiver.span((s) => s.traceId === caller.traceId && s.name === RUN_SPAN, "the refused request's span");
      expect(refused.status).toEqual({ code: "error", message: "RUN_ID_CONFLICT" });
      expect(refused.attributes).toMatchObject({ "error.type": "RUN_ID_CONFLICT", "http.response.status_code": 409, "agui.run_id": input.runId });
      const admission = await childNamed(refused, "agui.admission");
      expect(admission.status.message).toBe("RUN_ID_CONFLICT");
    } finally {
      await stack.close();
    }
  });

  it("a kernel failure: the kernel call and the run span fail with A2A_UNAVAILABLE", async () => {
    const stack = await startStack({
      gateway: { tracing: { exporterUrl: receiver.tracesUrl } },
      raw: (_exchange: RawExchange, res: RawResponder) => res.json(500, { error: "kernel down" }),
    });
    try {
      const input = stack.input();
      const live = await openSse(stack.gateway.url, input);
      const events = await live.rest();
      expectValidRun(events);
      expect(events.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "A2A_UNAVAILABLE" });
      const runSpan = await runSpanOf(input.runId);
      expect(runSpan.status).toEqual({ code: "error", message: "A2A_UNAVAILABLE" });
      expect(runSpan.attributes).toMatchObject({ "agui.run.outcome": "error", "error.type": "A2A_UNAVAILABLE" });
      const send = await childNamed(runSpan, "a2a/SendStreamingMessage");
      expect(send.status).toEqual({ code: "error", message: "A2A_UNAVAILABLE" });
      expect(stack.upstream.requests[0]?.headers["traceparent"]).toBe(`00-${runSpan.traceId}-${send.spanId}-01`);
    } finally {
      await stack.close();
    }
  });
});

describe("an interrupt answered after a restart", () => {
  let stack: DurableStack;

  beforeAll(async () => {
    stack = await startDurableStack({ gateway: { tracing: { exporterUrl: receiver.tracesUrl } } });
  });

  afterAll(async () => {
    await stack.close();
  });

  it("the parked run records its span; the resume links to it and the wait is a span under it, ending at the answer", async () => {
    const input = stack.input({ prompt: "deploy across a restart, traced" });
    const first = await runWithHttpAgent(stack.gateway.url, input);
    const [interrupt] = interruptsOf(first.events);
    const parkedDoc = JSON.parse(await readFile(path.join(stack.stateDir, "threads", `${input.threadId}.json`), "utf8"));
    const firstSpan = await runSpanOf(input.runId);
    expect(firstSpan.attributes["agui.run.outcome"]).toBe("interrupt");
    expect(parkedDoc.execution.parkedSpan).toMatchObject({ traceId: firstSpan.traceId, spanId: firstSpan.spanId });
    const announced = firstSpan.events.find((e) => e.name === "agui.interrupts.announced");
    expect(announced?.attributes).toEqual({ "agui.interrupt.count": 1, "agui.interrupt.ids": interrupt!.id });

    await stack.restart({ tracing: { exporterUrl: receiver.tracesUrl } });
    const resume = resumeInput(input, [allowOnce(interrupt!.id)]);
    const resumed = await runWithHttpAgent(stack.gateway.url, resume);
    expect(resumed.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });

    const resumeSpan = await runSpanOf(resume.runId);
    expect(resumeSpan.attributes).toMatchObject({ "agui.run.kind": "resume", "agui.run.outcome": "success" });
    expect(resumeSpan.links).toContainEqual({ traceId: firstSpan.traceId, spanId: firstSpan.spanId });
    expect(resumeSpan.events.find((e) => e.name === "agui.interrupts.answered")?.attributes).toEqual({
      "agui.interrupt.count": 1,
      "agui.interrupt.ids": interrupt!.id,
    });
    const wait = await receiver.span((s) => s.name === "agui.interrupt.wait" && s.traceId === firstSpan.traceId, "the interrupt wait");
    expect(wait.parentSpanId).toBe(firstSpan.spanId);
    expect(wait.links).toEqual([{ traceId: resumeSpan.traceId, spanId: resumeSpan.spanId }]);
    // From the park (recorded before the restart) to the answer the new process delivered.
    expect(wait.startMs).toBe(Date.parse(parkedDoc.execution.parkedSpan.parkedAt));
    expect(wait.startMs).toBeLessThanOrEqual(firstSpan.endMs);
    expect(wait.endMs).toBeGreaterThanOrEqual(resumeSpan.startMs);
    expect(wait.endMs).toBeLessThanOrEqual(resumeSpan.endMs);
    // The answer went to the parked task with the resume's traceparent.
    const answer = await childNamed(resumeSpan, "a2a/SendStreamingMessage");
    const sent = stack.upstream.requests.filter((r) => r.method === "SendStreamingMessage").at(-1);
    expect(sent?.headers["traceparent"]).toBe(`00-${resumeSpan.traceId}-${answer.spanId}-01`);
    await childNamed(resumeSpan, "a2a/GetTask");
    // The execution is over: the record keeps no span of it.
    const doneDoc = JSON.parse(await readFile(path.join(stack.stateDir, "threads", `${input.threadId}.json`), "utf8"));
    expect(doneDoc.execution.parkedSpan).toBeUndefined();
  });
});

describe("the cancel route", () => {
  it("is a span under the caller's trace with the kernel's CancelTask and the durable write; the run span ends cancelled", async () => {
    const stack = await startStack({
      gateway: { tracing: { exporterUrl: receiver.tracesUrl } },
      script: scriptByPrompt({ "stream slowly": () => slowTurn("session-traced-cancel", 400, 25) }),
    });
    try {
      const input = stack.input({ prompt: "stream slowly" });
      const live = await openSse(stack.gateway.url, input);
      const session = (await live.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1"))!["value"] as Record<string, string>;
      await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
      const caller = callerTraceparent();
      const cancelled = await postCancel(stack.gateway.url, session["executionId"]!, { threadId: input.threadId, rosInvocationId: "invocation-1" }, { traceparent: caller.header });
      expect(cancelled).toMatchObject({ status: 200, json: { status: "cancelled" } });
      const events = await live.rest();
      expectValidRun(events);

      const cancelSpan = await receiver.span((s) => s.name === "agui.cancel" && s.traceId === caller.traceId, "the cancel span");
      expect(cancelSpan).toMatchObject({ parentSpanId: caller.spanId, kind: "server" });
      expect(cancelSpan.attributes).toMatchObject({
        "agui.cancel.outcome": "cancelled",
        "agui.thread_id": input.threadId,
        "agui.execution_id": session["executionId"],
        "http.response.status_code": 200,
        "http.route": "/extensions/iac-code/v1/executions/:executionId/cancel",
      });
      const cancelCall = await childNamed(cancelSpan, "a2a/CancelTask");
      expect(cancelCall.attributes["a2a.task_id"]).toBe(session["taskId"]);
      const received = stack.upstream.requests.find((r) => r.method === "CancelTask");
      expect(received?.headers["traceparent"]).toBe(`00-${caller.traceId}-${cancelCall.spanId}-01`);
      await childNamed(cancelSpan, "agui.state.write");

      const runSpan = await runSpanOf(input.runId);
      expect(runSpan.attributes["error.type"]).toBe("CANCELLED");
    } finally {
      await stack.close();
    }
  });

  it("a refused cancel's span carries the refusal's code", async () => {
    const stack = await startStack({ gateway: { tracing: { exporterUrl: receiver.tracesUrl } } });
    try {
      const caller = callerTraceparent();
      const refused = await postCancel(stack.gateway.url, "no-such-execution", { threadId: "no-such-thread", rosInvocationId: "x" }, { traceparent: caller.header });
      expect(refused).toMatchObject({ status: 404, json: { error: { code: "EXECUTION_NOT_FOUND" } } });
      const span = await receiver.span((s) => s.name === "agui.cancel" && s.traceId === caller.traceId, "the refused cancel's span");
      expect(span.status).toEqual({ code: "error", message: "EXECUTION_NOT_FOUND" });
    } finally {
      await stack.close();
    }
  });
});

describe("the observer route and a failed durable write", () => {
  it("an observation is a span under the caller's trace with the kernel's GetTask and SubscribeToTask, ending with its stream", async () => {
    // The run's first events are no longer kept (only its newest one is), so the observation is rebuilt from the kernel.
    const stack = await startStack({
      gateway: { tracing: { exporterUrl: receiver.tracesUrl }, replay: { events: 1 } },
      script: scriptByPrompt({ "stream a while": () => slowTurn("session-traced-observer", 40, 25) }),
    });
    try {
      const input = stack.input({ prompt: "stream a while" });
      const live = await openSse(stack.gateway.url, input);
      const session = (await live.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1"))!["value"] as Record<string, string>;
      const caller = callerTraceparent();
      const observed = await openSse(
        new URL(`extensions/iac-code/v1/executions/${session["executionId"]}/subscribe`, stack.gateway.url).href,
        { threadId: input.threadId, runId: input.runId, rosInvocationId: "invocation-1" },
        { traceparent: caller.header },
      );
      expect(observed.status).toBe(200);
      expectValidRun(await observed.rest());
      expectValidRun(await live.rest());

      const span = await receiver.span((s) => s.name === "agui.observe" && s.traceId === caller.traceId, "the observation's span");
      expect(span).toMatchObject({ parentSpanId: caller.spanId, kind: "server" });
      expect(span.attributes).toMatchObject({ "agui.thread_id": input.threadId, "agui.run_id": input.runId, "a2a.task_id": session["taskId"], "agui.stream.ended": "completed", "agui.observe.source": "kernel" });
      await childNamed(span, "a2a/GetTask");
      const subscribe = await childNamed(span, "a2a/SubscribeToTask");
      const received = stack.upstream.requests.find((r) => r.method === "SubscribeToTask");
      expect(received?.headers["traceparent"]).toBe(`00-${caller.traceId}-${subscribe.spanId}-01`);
    } finally {
      await stack.close();
    }
  });

  it("a durable write that fails is a failed span under the run, which ends STATE_PERSISTENCE_FAILED with its task cancelled", async () => {
    const fault = new RenameFault();
    const stack = await startDurableStack({ gateway: { tracing: { exporterUrl: receiver.tracesUrl } } });
    try {
      await stack.restart({ tracing: { exporterUrl: receiver.tracesUrl }, store: new FileThreadStore({ dir: stack.stateDir, fs: fault.fs }) });
      const input = stack.input({ prompt: "Create a VPC template on a full disk" });
      // The admission write lands; the next one (the session mapping) does not.
      fault.failAfter(1);
      let events;
      try {
        events = (await runWithHttpAgent(stack.gateway.url, input)).events;
      } finally {
        fault.heal();
      }
      expect(events.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "STATE_PERSISTENCE_FAILED" });
      const runSpan = await runSpanOf(input.runId);
      expect(runSpan.status).toEqual({ code: "error", message: "STATE_PERSISTENCE_FAILED" });
      const failedWrite = await receiver.span(
        (s) => s.name === "agui.state.write" && s.parentSpanId === runSpan.spanId && s.status.code === "error",
        "the failed write",
      );
      expect(failedWrite.attributes["error.type"]).toBeDefined();
      await childNamed(runSpan, "a2a/CancelTask");
    } finally {
      await stack.close();
    }
  });
});

describe("across replicas", () => {
  it("a cancel sent to B for a run on A: B's relay and A's cancel of the task are one trace, under the caller's", async () => {
    const replicas = await startReplicas({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: "50" });
    try {
      const input = replicas.input({ prompt: "brief slow count" });
      const live = await openSse(replicas.a.url, input);
      await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
      const session = sessionEventOf(live.events);
      const caller = callerTraceparent();
      const cancelled = await postCancel(replicas.b.url, session["executionId"] as string, { threadId: input.threadId, rosInvocationId: "invocation-1" }, { traceparent: caller.header });
      expect(cancelled).toMatchObject({ status: 200, json: { status: "cancelled" } });
      expectValidRun(await live.rest());

      const onB = await receiver.span((s) => s.name === "agui.cancel" && s.traceId === caller.traceId, "B's cancel span");
      const relay = await childNamed(onB, "agui.cancel.relay");
      expect(relay).toMatchObject({ kind: "client", attributes: { "agui.relay.answered": true } });
      const onA = await childNamed(relay, "agui.cancel.relayed");
      expect(onA.attributes).toMatchObject({ "agui.cancel.outcome": "cancelled", "agui.thread_id": input.threadId });
      const cancelCall = await childNamed(onA, "a2a/CancelTask");
      const received = replicas.kernel.requests.find((r) => r.method === "CancelTask");
      expect(received?.headers["traceparent"]).toBe(`00-${caller.traceId}-${cancelCall.spanId}-01`);
    } finally {
      await replicas.close();
    }
  }, 60_000);
});

describe("start-up recovery", () => {
  it("a run that was active when the last process stopped: its cancel is a trace of its own", async () => {
    const abandoned = threadRecord("thread-abandoned");
    const record = { ...abandoned, execution: { ...abandoned.execution, taskId: "task-abandoned", pending: {} } };
    const { parkedSpan: _none, ...execution } = record.execution;
    const store = new MemoryThreadStore({ threads: new Map([[record.threadId, serializeThreadRecordCompact({ ...record, execution })]]) });
    const stack = await startStack({ gateway: { tracing: { exporterUrl: receiver.tracesUrl }, store } });
    try {
      expect(await stack.gateway.recovery).toBe(1);
      const recovery = await receiver.span((s) => s.name === "agui.recovery" && s.attributes["agui.thread_id"] === record.threadId, "the recovery span");
      expect(recovery.parentSpanId).toBeUndefined();
      expect(recovery.attributes).toMatchObject({ "a2a.task_id": "task-abandoned", "agui.execution_id": record.execution.executionId });
      const cancel = await childNamed(recovery, "a2a/CancelTask");
      const received = stack.upstream.requests.find((r) => r.method === "CancelTask");
      expect(received?.headers["traceparent"]).toBe(`00-${recovery.traceId}-${cancel.spanId}-01`);
    } finally {
      await stack.close();
    }
  });
});

describe("what leaves the gateway", () => {
  it("no token, key, prompt, message text or binding proof in any exported attribute", async () => {
    const secrets = {
      authToken: "gateway-bearer-5b2e8f0c",
      a2aToken: "kernel-bearer-9d41c7aa",
      prompt: "deploy the secret-prompt-7f3a91 stack",
      rosInvocationId: "ros-proof-0c1d2e3f",
      llmApiKey: "sk-llm-key-4a5b6c7d",
    };
    const stack = await startDurableStack({
      upstreamToken: secrets.a2aToken,
      gateway: { tracing: { exporterUrl: receiver.tracesUrl }, authToken: secrets.authToken, a2aToken: secrets.a2aToken },
    });
    try {
      const auth = { Authorization: `Bearer ${secrets.authToken}` };
      const input = stack.input({ prompt: secrets.prompt, iacCode: { rosInvocationId: secrets.rosInvocationId, llmApiKey: secrets.llmApiKey } });
      const first = await runWithHttpAgent(stack.gateway.url, input, { headers: auth });
      const [interrupt] = interruptsOf(first.events);
      const resume = resumeInput(input, [allowOnce(interrupt!.id)]);
      const resumed = await runWithHttpAgent(stack.gateway.url, resume, { headers: auth });
      expect(resumed.events.at(-1)).toMatchObject({ type: "RUN_FINISHED" });
      await runSpanOf(resume.runId);
      // The texts the kernel streamed back are message text too.
      const streamedTexts = [...first.events, ...resumed.events].flatMap((e) => (e.type === "TEXT_MESSAGE_CONTENT" ? [String(e["delta"])] : []));
      expect(streamedTexts.length).toBeGreaterThan(0);

      const exported = receiver.bodies.join("\n");
      for (const [what, secret] of Object.entries(secrets)) expect(exported.includes(secret), what).toBe(false);
      expect(exported.includes("Bearer"), "an authorization header").toBe(false);
      for (const span of receiver.spans) {
        const values = [...Object.values(span.attributes), ...span.events.flatMap((e) => Object.values(e.attributes))].map(String);
        for (const value of values) {
          for (const secret of Object.values(secrets)) expect(value.includes(secret), `${span.name}: ${value}`).toBe(false);
          for (const text of streamedTexts) if (text.trim().length > 3) expect(value.includes(text.trim()), `${span.name}: ${value}`).toBe(false);
        }
      }
    } finally {
      await stack.close();
    }
  });
});

describe("switching it on", () => {
  it("is off by default, on with --tracing or the standard OTLP endpoint variables, off again with OTEL_SDK_DISABLED", () => {
    expect(tracingWanted(undefined, {})).toBe(false);
    expect(tracingWanted(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).toBe(true);
    expect(tracingWanted(undefined, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" })).toBe(true);
    expect(tracingWanted(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "  " })).toBe(false);
    expect(tracingWanted(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "true" })).toBe(false);
    expect(tracingWanted(true, {})).toBe(true);
    expect(tracingWanted(false, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).toBe(false);
  });

  it("the CLI exports to OTEL_EXPORTER_OTLP_ENDPOINT, names the service from OTEL_SERVICE_NAME, and its log lines carry trace_id/span_id", async () => {
    ensureCliBuilt();
    const root = await mkdtemp(path.join(tmpdir(), "agui-otel-cli-"));
    const workspace = path.join(root, "ws");
    await mkdir(workspace);
    const cli = await startCli(["--demo", "--port", "0", "--state-dir", path.join(root, "state")], {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: "50",
      OTEL_SERVICE_NAME: "agui-gateway-cli-test",
      IAC_CODE_AGUI_ALLOWED_CWDS: root,
      NODE_OPTIONS: MODULE_WATCH,
    });
    try {
      const input = runInput(workspace, { prompt: "Create a VPC template" });
      const run = await runWithHttpAgent(cli.url, input);
      expect(run.events.at(-1)).toMatchObject({ type: "RUN_FINISHED" });
      const runSpan = await runSpanOf(input.runId);
      expect(runSpan.service).toBe("agui-gateway-cli-test");
      await childNamed(runSpan, "a2a/SendStreamingMessage");
      const finished = await waitForLine(cli.stderr, (line) => line.msg === "run finished" && line.runId === input.runId);
      expect(finished).toMatchObject({ trace_id: runSpan.traceId, span_id: runSpan.spanId });
      expect(loadedOtel(cli.stderr())).toContain("@opentelemetry/sdk-trace-base");
    } finally {
      await cli.kill();
      await rm(root, { recursive: true, force: true });
    }
  });

  it("the CLI without the variables loads no OpenTelemetry module, exports nothing and logs no trace ids", async () => {
    ensureCliBuilt();
    const root = await mkdtemp(path.join(tmpdir(), "agui-otel-off-"));
    const workspace = path.join(root, "ws");
    await mkdir(workspace);
    const env: Record<string, string> = { IAC_CODE_AGUI_ALLOWED_CWDS: root, NODE_OPTIONS: MODULE_WATCH };
    const cli = await startCli(["--demo", "--port", "0", "--state-dir", path.join(root, "state")], env, 10_000, ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]);
    try {
      const before = receiver.bodies.length;
      const input = runInput(workspace);
      await runWithHttpAgent(cli.url, input);
      const finished = await waitForLine(cli.stderr, (line) => line.msg === "run finished" && line.runId === input.runId);
      expect(finished["trace_id"]).toBeUndefined();
      const listening = await waitForLine(cli.stderr, (line) => line.msg === "gateway listening");
      expect(listening["tracing"]).toBeUndefined();
      await cli.kill();
      expect(receiver.bodies.length).toBe(before);
      expect(loadedOtel(cli.stderr())).toEqual([]);
      expect(receiver.spans.some((s) => s.attributes["agui.run_id"] === input.runId)).toBe(false);
    } finally {
      await cli.kill();
      await rm(root, { recursive: true, force: true });
    }
  });
});

/** The first JSON log line `match` accepts, once the process has written it (bounded). */
async function waitForLine(stderr: () => string, match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const line = stderr()
      .split("\n")
      .flatMap((text) => {
        try {
          return [JSON.parse(text) as Record<string, unknown>];
        } catch {
          return [];
        }
      })
      .find(match);
    if (line) return line;
    expect(Date.now() < deadline, `a log line (stderr so far:\n${stderr()})`).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
