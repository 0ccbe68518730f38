// Operations as a user sees them: /metrics after a run, the log story of a run without a secret, the
// observer route, SIGTERM during live runs, idle shutdown.
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import { createLogger } from "../src/gateway.js";
import { openSse, postRaw, readSse, runInput, runWithHttpAgent, scriptByPrompt, sessionEventOf, slowTurn, startStack, waitFor } from "./helpers/e2e.js";

const CLI = path.resolve("dist/src/cli.js");

describe("/metrics", () => {
  it("shows the run just made, by outcome, and events out by type", async () => {
    const stack = await startStack({ gateway: { authToken: "t0ken" } });
    try {
      await runWithHttpAgent(stack.gateway.url, stack.input(), { headers: { Authorization: "Bearer t0ken" } });
      const denied = await postRaw(`${stack.gateway.url}metrics`, undefined, {});
      expect(denied.status).toBe(405); // GET only
      const response = await fetch(`${stack.gateway.url}metrics`, { headers: { Authorization: "Bearer t0ken" } });
      expect(response.headers.get("content-type")).toContain("text/plain");
      const text = await response.text();
      expect(text).toMatch(/agui_gateway_runs_total\{outcome="success",code=""\} 1/);
      expect(text).toMatch(/agui_gateway_events_out_total\{type="TEXT_MESSAGE_CONTENT"\} [1-9]/);
      expect(text).toMatch(/agui_gateway_state_write_latency_seconds_count\{result="ok"\} [1-9]/);
      expect(text).toMatch(/agui_gateway_active_streams 0/);
      expect((await fetch(`${stack.gateway.url}metrics`)).status).toBe(401);
    } finally {
      await stack.close();
    }
  });
});

describe("logs", () => {
  it("tell a run's whole story with its ids, and never a secret", async () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _e, done) => void (lines.push(String(chunk)), done()) });
    const gatewayLogger = createLogger({ debug: true, destination: sink });
    const secrets = { llmApiKey: "sk-live-SECRET-1", alibabaCloud: { accessKeyId: "AKID-SECRET-2", accessKeySecret: "AKS-SECRET-3", securityToken: "STS-SECRET-4" } };
    const stack = await startStack({ gateway: { logger: gatewayLogger, authToken: "AUTH-SECRET-5", a2aToken: "A2A-SECRET-6" }, upstreamToken: "A2A-SECRET-6" });
    try {
      const input = stack.input({ iacCode: { ...secrets, llmHeaders: { "X-Key": "HDR-SECRET-7" } } });
      const run = await runWithHttpAgent(stack.gateway.url, input, { headers: { Authorization: "Bearer AUTH-SECRET-5" } });
      const session = sessionEventOf(run.events);
      const all = lines.join("");
      for (const secret of ["SECRET-1", "SECRET-2", "SECRET-3", "SECRET-4", "SECRET-5", "SECRET-6", "SECRET-7"]) expect(all).not.toContain(secret);
      const finished = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === "run finished")!;
      expect(finished).toMatchObject({ threadId: input.threadId, runId: input.runId, executionId: session.executionId, taskId: session.taskId, outcome: "success" });
      expect(typeof finished.durationMs).toBe("number");
      const admitted = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === "run admitted")!;
      expect(admitted.requestId).toBe(finished.requestId);
    } finally {
      await stack.close();
    }
  });
});

describe("observer route", () => {
  it("re-attaches read-only to a running execution and ends with exactly one terminal event", async () => {
    const stack = await startStack({ script: scriptByPrompt({ slow: (turn) => slowTurn(`sess-${turn.contextId}`, 40, 20) }) });
    try {
      const input = stack.input({ prompt: "slow" });
      const live = await openSse(stack.gateway.url, input);
      await live.until((e) => e.type === "CUSTOM");
      const session = sessionEventOf(live.events);
      const observed = await fetch(`${stack.gateway.url}extensions/iac-code/v1/executions/${String(session.executionId)}/subscribe`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ threadId: input.threadId, runId: input.runId, rosInvocationId: "invocation-1" }),
      });
      expect(observed.status).toBe(200);
      const { events } = readSse(await observed.text());
      expect(events[0]).toMatchObject({ type: "RUN_STARTED", threadId: input.threadId, runId: input.runId });
      expect(events.filter((e) => e.type === "RUN_FINISHED" || e.type === "RUN_ERROR")).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED" });
      await live.rest();
      const wrong = await postRaw(`${stack.gateway.url}extensions/iac-code/v1/executions/nope/subscribe`, {
        threadId: input.threadId, runId: input.runId, rosInvocationId: "invocation-1",
      });
      expect(wrong.status).toBe(404);
      expect(wrong.json).toMatchObject({ error: { code: "EXECUTION_NOT_FOUND" } });
      const bad = await postRaw(`${stack.gateway.url}extensions/iac-code/v1/executions/x/subscribe`, { threadId: "t", extra: 1 });
      expect(bad.json).toMatchObject({ error: { code: "INVALID_INPUT" } });
    } finally {
      await stack.close();
    }
  });
});

describe("lifecycle of the CLI", () => {
  let upstream: ScriptedA2AServer;
  let dir: string;
  beforeAll(async () => {
    if (!existsSync(CLI)) execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" });
    upstream = await startScriptedA2AServer({ script: scriptByPrompt({ slow: (turn) => slowTurn(`sess-${turn.contextId}`, 400, 25) }) });
    dir = await mkdtemp(path.join(tmpdir(), "agui-ops-"));
  });
  afterAll(async () => {
    await upstream.close();
    await rm(dir, { recursive: true, force: true });
  });

  const start = (args: string[]) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: dir, IAC_CODE_AGUI_ALLOWED_CWDS: dir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const url = (async () => {
      await waitFor(() => /listening on (\S+)/.test(stdout), 10_000);
      return /listening on (\S+)/.exec(stdout)![1]!;
    })();
    return { child, url, exited };
  };

  it("SIGTERM during a live run and a parked interrupt: exits 0, cancels the live run, keeps the interrupt", async () => {
    const stateDir = path.join(dir, "state");
    const gw = start(["--a2a-url", upstream.url, "--port", "0", "--state-dir", stateDir]);
    const url = await gw.url;
    const parked = runInput(dir, { prompt: "deploy the stack" });
    const first = await runWithHttpAgent(url, parked);
    expect(first.events.at(-1)).toMatchObject({ outcome: { type: "interrupt" } });
    const live = await openSse(url, runInput(dir, { prompt: "slow" }));
    await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    const cancelsBefore = upstream.cancelled.length;
    const started = Date.now();
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(upstream.cancelled.length).toBe(cancelsBefore + 1);
    const files = await readdir(path.join(stateDir, "threads"));
    const contents = await Promise.all(files.map((f) => readFile(path.join(stateDir, "threads", f), "utf8")));
    const parkedFile = contents.map((c) => JSON.parse(c) as { threadId: string; execution: { pending: object } }).find((r) => r.threadId === parked.threadId)!;
    expect(Object.keys(parkedFile.execution.pending)).toHaveLength(1);
  });

  it("--idle-shutdown exits 0 once nothing runs and nothing waits", async () => {
    const gw = start(["--a2a-url", upstream.url, "--port", "0", "--state-dir", path.join(dir, "idle"), "--idle-shutdown", "0.5"]);
    await gw.url;
    const started = Date.now();
    expect(await gw.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
