// Property fuzzing against running gateways (fast-check, fixed seeds): hostile RunAgentInput bodies, headers,
// methods, paths and raw bytes on one side; malformed, odd and huge A2A frames on the other. Never a 5xx, a
// dropped connection or a crash; every refusal a known JSON envelope; every accepted run a valid AG-UI stream.
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoScript, startRawA2AServer, startScriptedA2AServer, type RawA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import { startGateway, type RunningGateway } from "../src/gateway.js";
import {
  a2aCaseArbitrary,
  a2aCaseProblems,
  a2aFuzzHandler,
  inputFor,
  mapPool,
  postJson,
  silentLogger,
  replyProblems,
  requestCaseArbitrary,
  requestCaseProblems,
  type A2ACase,
} from "./helpers/faults.js";

const TOKEN = "fuzz-token";
const REQUEST_CASES = 2_000;
const A2A_CASES = 300;

let root: string;
let workspace: string;
let stateDir: string;
let upstream: ScriptedA2AServer;
let gateway: RunningGateway;
const a2aCases = new Map<number, A2ACase>();
let rawUpstream: RawA2AServer;
let rawGateway: RunningGateway;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "agui-fuzz-"));
  workspace = path.join(root, "ws");
  stateDir = path.join(root, "state");
  await mkdir(workspace);
  upstream = await startScriptedA2AServer({ script: createDemoScript({ frameDelayMs: 0 }) });
  gateway = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: upstream.url, stateDir, allowedRoots: [root], authToken: TOKEN, logger: silentLogger, validateEvents: true });
  rawUpstream = await startRawA2AServer({ handle: a2aFuzzHandler(a2aCases) });
  rawGateway = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: rawUpstream.url, allowedRoots: [root], logger: silentLogger, validateEvents: true });
});

afterAll(async () => {
  await gateway?.close();
  await rawGateway?.close();
  await upstream?.close();
  await rawUpstream?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

async function violations(g: RunningGateway): Promise<number> {
  return (await g.metrics.validationViolations.get()).values.reduce((n, v) => n + v.value, 0);
}

async function expectHealthy(g: RunningGateway, headers: Record<string, string> = {}): Promise<void> {
  const health = await fetch(new URL("/health", g.url));
  expect(health.status).toBe(200);
  const run = await postJson(g.url, inputFor(workspace), headers);
  expect(replyProblems(run)).toEqual([]);
  expect(run.status).toBe(200);
  expect(await violations(g)).toBe(0);
}

describe("hostile requests", () => {
  it(`${REQUEST_CASES} cases, 8 at a time: no 5xx, known envelopes, valid runs, files only inside threads/`, async () => {
    const cases = fc.sample(requestCaseArbitrary({ root, workspace, token: TOKEN }), { numRuns: REQUEST_CASES, seed: 0x5eed });
    const problems = (await mapPool(cases, 8, (c) => requestCaseProblems(gateway.url, c))).flat();
    expect(problems.slice(0, 20)).toEqual([]);
    // Some cases must have been accepted, or the fuzz would only ever test the refusals.
    const started = (await gateway.metrics.eventsOut.get()).values.find((v) => v.labels["type"] === "RUN_STARTED")?.value ?? 0;
    expect(started).toBeGreaterThanOrEqual(100);
    await expectHealthy(gateway, { Authorization: `Bearer ${TOKEN}` });
    // Whatever the thread ids were, the store wrote plain files in <stateDir>/threads and nowhere else.
    expect(await readdir(stateDir)).toEqual(["threads"]);
    const names = await readdir(path.join(stateDir, "threads"));
    expect(names.length).toBeGreaterThan(10);
    for (const name of names) expect(name).toMatch(/^[a-z0-9_.~-]{1,205}\.json$/);
    await waitIdle(gateway);
  }, 120_000);
});

describe("hostile A2A frames", () => {
  it(`${A2A_CASES} upstream streams: RUN_ERROR A2A_* or a valid run, spans balanced, never a crash`, async () => {
    const sampled = fc.sample(a2aCaseArbitrary({ hugeBytes: 256 * 1024 }), { numRuns: A2A_CASES, seed: 0xa2a });
    sampled.forEach((c, i) => a2aCases.set(i, c));
    const problems = (await mapPool(sampled, 8, (c, i) => a2aCaseProblems(rawGateway.url, workspace, i, c))).flat();
    expect(problems.slice(0, 20)).toEqual([]);
    await waitIdle(rawGateway);
  }, 60_000);

  it("a 17 MiB SSE record (over the client's 16 MiB bound) is A2A_PROTOCOL_ERROR, not an out-of-memory", async () => {
    const index = 1_000_000;
    a2aCases.set(index, { steps: [{ kind: "frame", result: { statusUpdate: { status: { state: "TASK_STATE_WORKING", message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text: "x".repeat(17 * 1024 * 1024) }] } } } } }], mustBeProtocolError: true });
    expect(await a2aCaseProblems(rawGateway.url, workspace, index, a2aCases.get(index)!)).toEqual([]);
    await expectHealthy(rawGateway);
  }, 30_000);
});

async function waitIdle(g: RunningGateway): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (g.runs.activeRunCount > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(g.runs.activeRunCount).toBe(0);
}
