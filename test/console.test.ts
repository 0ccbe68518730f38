// The web console: its route module over HTTP, its pure models in Node, and the built page end to end
// in headless Chromium against a gateway with the demo upstream (plus a few scripted turns).
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Koa from "koa";
import type { BrowserContext, Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeError } from "../console/errors.js";
import { interruptForm } from "../console/interrupts.js";
import { applyEvent, candidateOfMessage, newRun, newThreadMemory, parseStepName, replies } from "../console/timeline.js";
import { CONSOLE_CSP, consoleRoutes } from "../src/console/route.js";
import { createDemoScript, startScriptedA2AServer, type ScriptedA2AServer, type TurnContext } from "../src/demo/index.js";
import { startGateway, type RunningGateway } from "../src/gateway.js";
import { launchChromium } from "./helpers/browser.js";
import { frame, promptOf, silentLogger, slowTurn } from "./helpers/e2e.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const ARTIFACTS = join(ROOT, "test", "artifacts");
const TOKEN = "console-test-token";

/** A small selling-style pipeline turn (a2a-upstream §8c shape): two steps, the second fanning out into two candidates. */
function pipelineTurn() {
  let sequence = 0;
  const step = (id: string, index: number) => ({ id, runId: `step-${id}-1`, attempt: 1, index, total: 2 });
  const candidate = (k: number) => ({ id: "evaluate", runId: `candidate-evaluate-${k}-1`, index: k, attempt: 1, name: `Plan ${"AB"[k]}` });
  const candidateStep = (k: number) => ({ id: "template_generating", runId: `candidate-evaluate-${k}-1-template_generating-1`, attempt: 1 });
  const envelope = (eventType: string, scope: string, extra: Record<string, unknown>) => ({
    schemaVersion: "1.0",
    extensionUri: "urn:iac-code:a2a:pipeline-events:v1",
    eventId: `evt-${++sequence}`,
    sequence,
    eventType,
    scope,
    status: "working",
    pipelineRunId: "pipeline-console",
    iacCodeSessionId: "session-console-pipeline",
    data: {},
    ...extra,
  });
  const batch = (...events: Record<string, unknown>[]) =>
    frame.working({ iac: { pipelineBatch: { schemaVersion: "1.0", extensionUri: "urn:iac-code:a2a:pipeline-events:v1", events } } });
  const evaluate = step("evaluate_candidates", 2);
  return [
    batch(envelope("pipeline_started", "pipeline", { data: { totalSteps: 2 } }), envelope("step_started", "step", { step: step("intent_parsing", 1) })),
    batch(envelope("text_delta", "step", { step: step("intent_parsing", 1), data: { text: "Understanding the request." } })),
    batch(
      envelope("step_completed", "step", { step: step("intent_parsing", 1) }),
      envelope("step_started", "step", { step: evaluate }),
      envelope("candidate_started", "candidate", { step: evaluate, candidate: candidate(0) }),
      envelope("candidate_started", "candidate", { step: evaluate, candidate: candidate(1) }),
    ),
    batch(
      ...[0, 1].flatMap((k) => [
        envelope("candidate_step_started", "candidate_step", { step: evaluate, candidate: candidate(k), candidateStep: candidateStep(k) }),
        envelope("candidate_step_completed", "candidate_step", { step: evaluate, candidate: candidate(k), candidateStep: candidateStep(k) }),
        envelope("candidate_completed", "candidate", { step: evaluate, candidate: candidate(k), data: { failed: false } }),
      ]),
    ),
    batch(envelope("step_completed", "step", { step: evaluate }), envelope("pipeline_completed", "pipeline", { status: "completed" })),
    frame.status("TASK_STATE_COMPLETED", {}),
  ];
}

const PACED_PIPELINE_PROMPT = "Build a VPC with a pipeline";
const NORMAL_REPLY = (q: string) =>
  `I'll help with "${q}". First I will read the workspace README.\n\nThe workspace is a demo, so nothing was changed. For "${q}" I would list the resources, write a ROS template and validate it before any deployment.`;
const CANDIDATE_TEXTS = {
  "candidate-evaluate-0-1": ["Plan A #1", "Plan A: one vswitch in a single zone."],
  "candidate-evaluate-1-1": ["Plan B #2", "Plan B: two vswitches across two zones."],
} as const;

/**
 * Runs in the page: records every text each candidate's bubble and timeline row showed, at each DOM
 * change, so the test can tell they grew and never held another candidate's words on the way.
 */
const RECORD_CANDIDATE_TEXTS = `(() => {
  const seen = (window.__candidateTexts = {});
  const note = () => {
    for (const el of document.querySelectorAll("#conversation .bubble[data-candidate], #timeline .ev.text[data-candidate]")) {
      const pane = el.closest("#conversation") ? "conversation" : "timeline";
      const text = el.querySelector(pane === "conversation" ? ".reply-text" : ".body").textContent;
      const list = (seen[pane + " " + el.dataset.candidate] ??= []);
      if (list.at(-1) !== text) list.push(text);
    }
  };
  new MutationObserver(note).observe(document.body, { childList: true, subtree: true, characterData: true });
})()`;

/** Runs in the page before its own scripts: reports each CSP violation to the test as "<directive> <blocked URI>". */
const REPORT_CSP_VIOLATIONS = `document.addEventListener("securitypolicyviolation", (e) => window.__reportCspViolation(e.effectiveDirective + " " + e.blockedURI))`;

/** Scripted turns by prompt; everything else is the demo agent. */
function consoleScript() {
  const demo = createDemoScript({ frameDelayMs: 1 });
  // The demo pipeline at a pace where the page renders between deltas, for its whole thread (the resume too).
  const pacedDemo = createDemoScript({ frameDelayMs: 30 });
  const pacedContexts = new Set<string>();
  return (turn: TurnContext) => {
    const prompt = promptOf(turn);
    if (prompt === PACED_PIPELINE_PROMPT) pacedContexts.add(turn.contextId);
    if (pacedContexts.has(turn.contextId)) return pacedDemo(turn);
    if (prompt === "stream slowly") return slowTurn("session-console-slow", 400, 25);
    if (prompt === "run the pipeline") return pipelineTurn();
    if (prompt === "fail please") {
      return [
        frame.working({ sessionId: "session-console-fail" }),
        frame.working({ text: "Starting, then failing.", messageId: "m-fail" }),
        frame.status("TASK_STATE_FAILED", { sessionId: "session-console-fail" }),
      ];
    }
    return demo(turn);
  };
}

let workspace: string;
let distDir: string;
let upstream: ScriptedA2AServer;
let gateway: RunningGateway;
let front: Server;
let base: string;

/** The gateway with the console in front: /console* to the route module, the rest proxied unchanged. */
function startFront(gatewayPort: number): Promise<Server> {
  const app = new Koa();
  app.use(consoleRoutes({ distDir, cwd: workspace, demo: true }));
  app.use((ctx) => {
    ctx.status = 418;
  });
  const consoleHandler = app.callback();
  const proxy = (req: IncomingMessage, res: ServerResponse) => {
    const upstreamReq = httpRequest(
      { host: "127.0.0.1", port: gatewayPort, method: req.method, path: req.url, headers: req.headers },
      (upstreamRes) => {
        res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
        upstreamRes.pipe(res);
      },
    );
    upstreamReq.on("error", () => res.destroy());
    res.on("close", () => upstreamReq.destroy());
    req.pipe(upstreamReq);
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (path === "/console" || path.startsWith("/console/")) void consoleHandler(req, res);
    else proxy(req, res);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "console-ws-"));
  distDir = await mkdtemp(join(tmpdir(), "console-dist-"));
  // Unminified: the same bundle, built in a third of the time.
  await build({ configFile: join(ROOT, "console", "vite.config.ts"), logLevel: "error", build: { outDir: distDir, emptyOutDir: true, minify: false } });
  upstream = await startScriptedA2AServer({ script: consoleScript() });
  gateway = await startGateway({
    host: "127.0.0.1",
    port: 0,
    a2aUrl: upstream.url,
    allowedRoots: [workspace],
    authToken: TOKEN,
    heartbeatSeconds: 5,
    logger: silentLogger,
  });
  front = await startFront(gateway.port);
  base = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => {
    if (!front) return resolve();
    front.close(() => resolve());
    front.closeAllConnections();
  });
  await gateway?.close();
  await upstream?.close();
  for (const dir of [workspace, distDir]) if (dir) await rm(dir, { recursive: true, force: true });
});

describe("consoleRoutes", () => {
  it("serves the page, its assets with content types, and the config", async () => {
    const page = await fetch(`${base}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await page.text();
    const script = /src="\/console\/assets\/([^"]+\.js)"/.exec(html)?.[1];
    const style = /href="\/console\/assets\/([^"]+\.css)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    expect(style).toBeDefined();
    // Self-contained: nothing in the page points off the gateway.
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);

    const js = await fetch(`${base}/console/assets/${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect((await js.text()).length).toBeGreaterThan(1000);
    const css = await fetch(`${base}/console/assets/${style}`);
    expect(css.headers.get("content-type")).toMatch(/^text\/css/);

    const config = await fetch(`${base}/console/config.json`);
    expect(config.headers.get("content-type")).toMatch(/^application\/json/);
    // The same policy on the page, its files, its config and its refusals.
    for (const response of [page, js, css, config, await fetch(`${base}/console/nope`)]) {
      expect(response.headers.get("content-security-policy"), response.url).toBe(CONSOLE_CSP);
      expect(response.headers.get("referrer-policy"), response.url).toBe("no-referrer");
      expect(response.headers.get("x-content-type-options"), response.url).toBe("nosniff");
    }
    const directives = new Map(CONSOLE_CSP.split("; ").map((d) => [d.split(" ")[0], d.split(" ").slice(1)]));
    expect(directives.get("default-src")).toEqual(["'none'"]);
    for (const own of ["script-src", "style-src", "connect-src"]) expect(directives.get(own), own).toEqual(["'self'"]);
    expect(directives.get("frame-ancestors")).toEqual(["'none'"]);
    expect(await config.json()).toEqual({ cwd: workspace, demo: true });
    expect((await fetch(`${base}/console/`)).status).toBe(200);
  });

  it("answers anything else under /console with a JSON 404 and never leaves the assets folder", async () => {
    const assets = await readdir(join(distDir, "assets"));
    expect(assets.length).toBeGreaterThan(0);
    for (const path of [
      "/console/nope",
      "/console/assets/missing.js",
      "/console/assets/..%2Findex.html",
      "/console/assets/%2e%2e%2f%2e%2e%2fpackage.json",
      "/console/assets/../../package.json",
      "/console/assets/",
      "/console/assets/sub/file.js",
    ]) {
      const response = await rawGet(path);
      expect(response.status, path).toBe(404);
      expect(JSON.parse(response.body), path).toEqual({ error: { code: "NOT_FOUND", message: expect.any(String) } });
    }
    const post = await fetch(`${base}/console`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(((await post.json()) as { error: { code: string } }).error.code).toBe("METHOD_NOT_ALLOWED");
  });

  it("passes every other path to the next middleware", async () => {
    const app = new Koa();
    app.use(consoleRoutes({ distDir, cwd: workspace, demo: false }));
    app.use((ctx) => {
      ctx.body = { passed: ctx.path };
    });
    const server = createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      expect(await (await fetch(`${url}/consoles`)).json()).toEqual({ passed: "/consoles" });
      expect(await (await fetch(`${url}/health`)).json()).toEqual({ passed: "/health" });
      expect(await (await fetch(`${url}/console/config.json`)).json()).toEqual({ cwd: workspace, demo: false });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

/** GET without URL normalization, so dot-segments reach the server as typed. */
function rawGet(path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}/`, { path, method: "GET" }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("console models", () => {
  it("derives allow/deny buttons from a permission interrupt", () => {
    const form = interruptForm({
      id: "permission-1",
      reason: "tool_call",
      message: "Deploy stack demo to cn-hangzhou - allow once?",
      responseSchema: {
        type: "object",
        properties: { decision: { type: "string", enum: ["allow_once", "deny"] } },
        required: ["decision"],
        additionalProperties: false,
      },
      metadata: { kind: "permission", title: "Deploy ROS stack", toolName: "ros_deploy", standardOptions: [{ id: "allow_once", title: "Allow once" }, { id: "deny", title: "Deny" }] },
    });
    expect(form.title).toBe("Deploy ROS stack");
    expect(form.choices).toEqual([
      { label: "Allow once", payload: { decision: "allow_once" }, tone: "primary" },
      { label: "Deny", payload: { decision: "deny" }, tone: "danger" },
    ]);
    expect(form.text).toBeUndefined();
    expect(form.details).toContainEqual(["Tool", "ros_deploy"]);
  });

  it("derives an option list and free text from a question's oneOf", () => {
    const form = interruptForm({
      id: "q-1",
      reason: "input_required",
      message: "Pick a plan",
      responseSchema: {
        oneOf: [
          { type: "object", properties: { selectedId: { type: "string", const: "0", title: "Plan A" } }, required: ["selectedId"] },
          { type: "object", properties: { selectedId: { type: "string", const: "1", title: "Plan B" } }, required: ["selectedId"] },
          { type: "object", properties: { freeText: { type: "string", minLength: 1 } }, required: ["freeText"] },
        ],
      },
      metadata: { kind: "candidate_selection" },
    });
    expect(form.choices.map((c) => [c.label, c.payload])).toEqual([
      ["Plan A", { selectedId: "0" }],
      ["Plan B", { selectedId: "1" }],
    ]);
    expect(form.text).toEqual({ field: "freeText", label: expect.any(String) });
  });

  it("offers a resource selection's listed values and a value field", () => {
    const form = interruptForm({
      id: "sel-1",
      reason: "input_required",
      message: "Which VPC?",
      responseSchema: {
        oneOf: [
          { type: "object", properties: { value: { type: "string", minLength: 1 }, label: { type: "string" } }, required: ["value"] },
          { type: "object", properties: { freeText: { type: "string", minLength: 1 } }, required: ["freeText"] },
        ],
      },
      metadata: { kind: "cloud_resource_selection", options: [{ value: "vpc-1", label: "prod" }] },
    });
    expect(form.choices).toEqual([{ label: "prod", payload: { value: "vpc-1", label: "prod" }, tone: "primary" }]);
    expect(form.text?.field).toBe("value");
  });

  it("reads code and message from HttpAgent's HTTP errors and from other failures", () => {
    const body = { error: { code: "THREAD_BUSY", message: "Le fil est occupé." } };
    expect(describeError(Object.assign(new Error(`HTTP 409: ${JSON.stringify(body)}`), { status: 409, payload: body }))).toEqual({
      code: "THREAD_BUSY",
      message: "Le fil est occupé.",
      status: 409,
    });
    expect(describeError(new Error(`HTTP 400: ${JSON.stringify({ error: { code: "INVALID_INPUT", message: "bad" } })}`))).toEqual({
      code: "INVALID_INPUT",
      message: "bad",
      status: 400,
    });
    expect(describeError(new Error("HTTP 502: Bad Gateway"))).toEqual({ code: "HTTP_502", message: "Bad Gateway", status: 502 });
    expect(describeError(new TypeError("Failed to fetch")).code).toBe("NETWORK_ERROR");
  });

  it("keeps one row and one reply per message id when parallel messages interleave", () => {
    const memory = newThreadMemory();
    const run = newRun("run-1", "go");
    const candidate = (k: number) => ({ id: "evaluate", runId: `candidate-evaluate-${k}-1`, index: k, name: `Plan ${"AB"[k]}` });
    const messageOf = (k: number) => `pipeline-message:p-1:candidate_step:candidate-evaluate-${k}-1:candidate-evaluate-${k}-1-template_generating-1:step-evaluate-1`;
    const [a, b] = [messageOf(0), messageOf(1)];
    const events: Record<string, unknown>[] = [
      { type: "RUN_STARTED" },
      { type: "STEP_STARTED", stepName: "evaluate_candidates" },
      ...[0, 1].map((k) => ({ type: "CUSTOM", name: "iac-code.pipeline.v1", value: { eventType: "candidate_started", step: { id: "evaluate_candidates" }, candidate: candidate(k) } })),
      { type: "TEXT_MESSAGE_START", messageId: "m-intro", role: "assistant" },
      { type: "TEXT_MESSAGE_CONTENT", messageId: "m-intro", delta: "Comparing two plans." },
      { type: "TEXT_MESSAGE_END", messageId: "m-intro" },
      { type: "REASONING_MESSAGE_START", messageId: "r-a", role: "reasoning" },
      { type: "REASONING_MESSAGE_START", messageId: "r-b", role: "reasoning" },
      { type: "TEXT_MESSAGE_START", messageId: a, role: "assistant" },
      { type: "TEXT_MESSAGE_CONTENT", messageId: a, delta: "Plan " },
      { type: "TEXT_MESSAGE_START", messageId: b, role: "assistant" },
      ...["Plan ", "A: ", "B: ", "one ", "two ", "zone.", "zones."].map((delta, i) => ({ type: "TEXT_MESSAGE_CONTENT", messageId: i % 2 === 0 ? b : a, delta })),
      ...["think ", "ponder ", "A", "B"].map((delta, i) => ({ type: "REASONING_MESSAGE_CONTENT", messageId: i % 2 === 0 ? "r-a" : "r-b", delta })),
      // A candidate's own tool call splits its text into paragraphs; the other candidate's row keeps growing.
      { type: "TOOL_CALL_START", toolCallId: "t-a", toolCallName: "check", parentMessageId: a },
      { type: "TOOL_CALL_END", toolCallId: "t-a" },
      { type: "TEXT_MESSAGE_CONTENT", messageId: a, delta: "Checked." },
      { type: "TEXT_MESSAGE_CONTENT", messageId: b, delta: " Done." },
      { type: "TEXT_MESSAGE_END", messageId: b },
    ];
    for (const event of events) applyEvent(memory, run, event as never);
    const rows = run.items.flatMap((i) => (i.kind === "text" || i.kind === "reasoning" ? [[i.kind, i.messageId, i.candidate, i.text]] : []));
    expect(rows).toEqual([
      ["text", "m-intro", undefined, "Comparing two plans."],
      ["reasoning", "r-a", undefined, "think A"],
      ["reasoning", "r-b", undefined, "ponder B"],
      ["text", a, "candidate-evaluate-0-1", "Plan A: one zone."],
      ["text", b, "candidate-evaluate-1-1", "Plan B: two zones. Done."],
      ["text", a, "candidate-evaluate-0-1", "Checked."],
    ]);
    expect(replies(run)).toEqual([
      { messageId: "m-intro", text: "Comparing two plans.", streaming: false },
      { messageId: a, candidate: { id: "candidate-evaluate-0-1", label: "Plan A #1" }, text: "Plan A: one zone.\n\nChecked.", streaming: true },
      { messageId: b, candidate: { id: "candidate-evaluate-1-1", label: "Plan B #2" }, text: "Plan B: two zones. Done.", streaming: false },
    ]);
    applyEvent(memory, run, { type: "RUN_FINISHED" } as never);
    expect(replies(run).map((r) => r.streaming)).toEqual([false, false, false]);
    // Not yet announced by a pipeline event: the message id's candidate scope still names it.
    expect(candidateOfMessage(newThreadMemory(), "pipeline-message:p:candidate:cand-9-1")).toBe("cand-9-1");
    expect(candidateOfMessage(newThreadMemory(), "pipeline-message:p:step:step-x-1")).toBeUndefined();
    expect(candidateOfMessage(newThreadMemory(), "36b5a57d-message")).toBeUndefined();
  });

  it("a tool call without a parent message (another candidate's, before its text) splits no candidate's row", () => {
    const memory = newThreadMemory();
    const run = newRun("run-1", "go");
    const messageOf = (k: number) => `pipeline-message:p-1:candidate_step:candidate-evaluate-${k}-1:candidate-evaluate-${k}-1-template_generating-1:step-evaluate-1`;
    const [a, b] = [messageOf(0), messageOf(1)];
    const events: Record<string, unknown>[] = [
      { type: "RUN_STARTED" },
      { type: "TEXT_MESSAGE_START", messageId: a, role: "assistant" },
      { type: "TEXT_MESSAGE_CONTENT", messageId: a, delta: "Plan A: one " },
      // Candidate B calls a tool before its own message opened: the gateway gives the call no parentMessageId.
      { type: "TOOL_CALL_START", toolCallId: "t-b", toolCallName: "aliyun_api" },
      { type: "TOOL_CALL_END", toolCallId: "t-b" },
      { type: "TEXT_MESSAGE_CONTENT", messageId: a, delta: "vswitch." },
      { type: "TEXT_MESSAGE_START", messageId: b, role: "assistant" },
      { type: "TEXT_MESSAGE_CONTENT", messageId: b, delta: "Plan B." },
    ];
    for (const event of events) applyEvent(memory, run, event as never);
    const rows = run.items.flatMap((i) => (i.kind === "text" ? [[i.messageId, i.text]] : []));
    expect(rows).toEqual([
      [a, "Plan A: one vswitch."],
      [b, "Plan B."],
    ]);
    expect(replies(run).map((r) => r.text)).toEqual(["Plan A: one vswitch.", "Plan B."]);
  });

  it("builds the pipeline tree with candidates under the step that fans out", () => {
    const memory = newThreadMemory();
    const run = newRun("run-1", "go");
    const candidate = (k: number) => ({ id: "evaluate", runId: `candidate-evaluate-${k}-1`, index: k, name: `Plan ${"AB"[k]}` });
    const events = [
      { type: "RUN_STARTED" },
      { type: "STEP_STARTED", stepName: "intent_parsing" },
      { type: "STEP_FINISHED", stepName: "intent_parsing" },
      { type: "STEP_STARTED", stepName: "evaluate_candidates" },
      { type: "CUSTOM", name: "iac-code.pipeline.v1", value: { eventType: "candidate_started", step: { id: "evaluate_candidates" }, candidate: candidate(0) } },
      { type: "CUSTOM", name: "iac-code.pipeline.v1", value: { eventType: "candidate_started", step: { id: "evaluate_candidates" }, candidate: candidate(1) } },
      { type: "STEP_STARTED", stepName: "candidate:candidate-evaluate-0-1:template_generating" },
      { type: "STEP_STARTED", stepName: "candidate:candidate-evaluate-1-1:template_generating" },
      { type: "STEP_FINISHED", stepName: "candidate:candidate-evaluate-0-1:template_generating" },
      { type: "CUSTOM", name: "iac-code.pipeline.v1", value: { eventType: "candidate_failed", step: { id: "evaluate_candidates" }, candidate: candidate(1), status: "failed" } },
      { type: "STEP_FINISHED", stepName: "candidate:candidate-evaluate-1-1:template_generating" },
      { type: "STEP_FINISHED", stepName: "evaluate_candidates" },
      { type: "RUN_FINISHED", outcome: { type: "success" }, usage: [{ inputTokens: 3, outputTokens: 4, totalTokens: 7 }] },
    ];
    for (const event of events) applyEvent(memory, run, event as never);
    const tree = run.pipeline!;
    expect(tree.steps.map((s) => [s.label, s.status])).toEqual([
      ["intent_parsing", "done"],
      ["evaluate_candidates", "done"],
    ]);
    expect(tree.steps[1]!.candidates.map((c) => [c.label, c.status, c.steps.map((s) => s.label)])).toEqual([
      ["Plan A #1", "done", ["template_generating"]],
      ["Plan B #2", "failed", ["template_generating"]],
    ]);
    expect(tree.loose).toEqual([]);
    const badges = run.items.flatMap((i) => (i.kind === "badges" ? i.badges.map((b) => [b.label, b.tone]) : []));
    expect(badges).toEqual([
      ["candidate started", "info"],
      ["candidate started", "info"],
      ["candidate failed", "bad"],
    ]);
    expect(run.items.filter((i) => i.kind === "steps")).toHaveLength(1);
    expect(run.items.at(-1)).toMatchObject({ kind: "usage", entries: [{ inputTokens: 3, outputTokens: 4, totalTokens: 7 }] });
    expect(parseStepName("candidate:c-1:s")).toEqual({ candidate: "c-1", step: "s" });
    expect(parseStepName("plain")).toEqual({ step: "plain" });
  });
});

describe("the console in Chromium", () => {
  let context: BrowserContext;
  let page: Page;
  let profile: string;

  beforeAll(async () => {
    profile = await mkdtemp(join(tmpdir(), "console-chromium-"));
    context = await launchChromium(profile, { viewport: { width: 1400, height: 900 } });
    // Every CSP violation any page load reports, from its first script on, for the last test to read.
    await context.exposeFunction("__reportCspViolation", (violation: string) => void cspViolations.push(violation));
    await context.addInitScript(REPORT_CSP_VIOLATIONS);
    page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(8_000);
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) cspMessages.push(message.text());
    });
  });

  afterAll(async () => {
    await context?.close();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  const lastRun = () => page.locator("#timeline .run").last();
  const cspMessages: string[] = [];
  const cspViolations: string[] = [];

  async function send(text: string): Promise<void> {
    await page.fill("#prompt", text);
    await page.press("#prompt", "Enter");
  }

  it("asks for the token, streams a run, then approves a permission and finishes", async () => {
    await page.goto(`${base}/console`);
    await expect.poll(() => page.inputValue("#cwd")).toBe(workspace);
    expect(await page.isVisible("#demo-note")).toBe(true);

    // No token yet: the gateway refuses before the stream, and the page shows code and message.
    await send("hello there");
    await page.locator("#conversation .error-card[data-code='UNAUTHORIZED']").waitFor();
    expect(await page.textContent("#conversation .error-card .message")).toMatch(/bearer token/i);

    await page.fill("#token", TOKEN);
    await page.click("#token-save");
    expect(await page.evaluate("sessionStorage.getItem('agui-console.token')")).toBe(TOKEN);
    expect(await page.evaluate("localStorage.length")).toBe(0);
    expect(await page.inputValue("#token")).toBe("");

    await send("list the resources");
    await page.locator("#timeline .run[data-status='success']").waitFor();
    const run = lastRun();
    expect(await run.locator(".ev.tool .tool-name").allTextContents()).toEqual(["read_file"]);
    expect(await run.locator(".ev.tool pre.args").textContent()).toContain('"path": "README.md"');
    expect(await run.locator(".ev.tool pre.result").textContent()).toContain("# Demo workspace");
    expect(await run.locator(".ev.text").first().textContent()).toContain('I\'ll help with "list the resources"');
    expect(await run.locator("details.ev.reasoning").count()).toBe(1);
    expect(await run.locator("details.ev.reasoning").getAttribute("open")).toBeNull();
    expect(await run.locator(".ev.usage").textContent()).toMatch(/1746\s*in/);
    expect(await run.locator(".exec-id").count()).toBe(1);
    // One message around one tool call: one bubble in two paragraphs, two text rows beside the tool row.
    expect(await page.locator("#conversation .bubble.assistant").count()).toBe(1);
    expect(await page.locator("#conversation .bubble.assistant .reply-text").textContent()).toBe(NORMAL_REPLY("list the resources"));
    expect(await run.locator(".ev").evaluateAll((rows) => rows.map((r) => r.className.split(" ")[1]))).toEqual(["reasoning", "text", "tool", "text", "usage"]);
    expect(await run.locator(".ev.text .who").count()).toBe(0);

    await send("deploy the stack");
    const card = page.locator("#conversation .interrupt.permission");
    await card.waitFor();
    expect(await card.locator("strong").textContent()).toBe("Deploy ROS stack");
    expect(await card.locator("button.choice").allTextContents()).toEqual(["Allow once", "Deny"]);
    expect(await page.isDisabled("#send")).toBe(true);
    expect(await lastRun().getAttribute("data-status")).toBe("interrupt");
    expect(await lastRun().locator(".ev.tool .tool-name").allTextContents()).toEqual(["ros_deploy"]);

    await card.locator("button.choice", { hasText: "Allow once" }).click();
    await page.locator("#conversation .bubble.answer", { hasText: "Allow once" }).waitFor();
    await page.locator("#timeline .run").nth(3).waitFor();
    await expect.poll(() => lastRun().getAttribute("data-status")).toBe("success");
    expect(await lastRun().locator(".run-kind").textContent()).toBe("resume");
    expect(await page.locator("#timeline .run").nth(2).locator(".status").textContent()).toBe("answered");
    expect(await lastRun().locator(".ev.tool pre.result").textContent()).toMatch(/CREATE_COMPLETE/);
    expect(await page.locator("#conversation .bubble.assistant").last().textContent()).toMatch(/is deployed in cn-hangzhou/);
    expect(await page.isEnabled("#send")).toBe(true);

    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "console.png") });
  });

  it("a thread typed in again shows its pending approval at once, and the answer finishes it", async () => {
    await page.click("#new-thread");
    await send("deploy the stack");
    await page.locator("#conversation .interrupt.permission").waitFor();
    const threadId = await page.inputValue("#thread");
    // A page opened without the thread in its URL: typing the id connects to it, and its approval shows at once.
    await page.goto(`${base}/console`);
    await expect.poll(() => page.inputValue("#cwd")).toBe(workspace);
    expect(await page.inputValue("#thread")).not.toBe(threadId);
    await page.fill("#thread", threadId);
    await page.press("#thread", "Tab");
    const card = page.locator("#conversation .interrupt.permission");
    await card.waitFor();
    expect(new URL(page.url()).searchParams.get("thread")).toBe(threadId);
    expect(await lastRun().locator(".run-kind").textContent()).toBe("connect");
    await card.locator("button.choice", { hasText: "Allow once" }).click();
    await expect.poll(() => lastRun().getAttribute("data-status")).toBe("success");
    expect(await page.locator("#conversation .bubble.assistant").last().textContent()).toMatch(/is deployed in cn-hangzhou/);
  });

  it("cancels a running execution through the cancel extension", async () => {
    // Scripted turns speak for another iac-code session, so each gets a thread of its own.
    await page.click("#new-thread");
    await send("stream slowly");
    await lastRun().locator(".exec-id").waitFor();
    await expect.poll(async () => (await lastRun().locator(".ev.text").allTextContents()).join("")).toContain("tick 2");
    expect(await page.isEnabled("#cancel")).toBe(true);
    const cancelRequest = page.waitForRequest((r) => /\/extensions\/iac-code\/v1\/executions\/[^/]+\/cancel$/.test(r.url()));
    await page.click("#cancel");
    const request = await cancelRequest;
    const body = request.postDataJSON() as { threadId: string; rosInvocationId: string };
    expect(body.threadId).toBe(await page.inputValue("#thread"));
    expect(body.rosInvocationId).toEqual(expect.any(String));
    expect(request.headers()["authorization"]).toBe(`Bearer ${TOKEN}`);
    await expect.poll(() => lastRun().getAttribute("data-status")).not.toBe("running");
    expect(await lastRun().getAttribute("data-status")).toBe("cancelled");
    // The console's HttpAgent 1.0 declares protocolVersion 1.0: the run ends RUN_FINISHED cancelled, not RUN_ERROR CANCELLED.
    expect(await lastRun().locator(".error-card").count()).toBe(0);
    expect(await page.locator(".note").allTextContents()).toContain("The run was cancelled.");
    expect((await lastRun().locator(".ev.text").allTextContents()).join("")).not.toContain("tick 399");
    expect(await page.isEnabled("#send")).toBe(true);
  });

  it("draws pipeline steps as a tree with the candidates side by side", async () => {
    await page.click("#new-thread");
    await page.check("#pipeline");
    const runRequest = page.waitForRequest((r) => r.method() === "POST" && new URL(r.url()).pathname === "/");
    await send("run the pipeline");
    expect((await runRequest).postDataJSON()).toMatchObject({ forwardedProps: { iacCode: { runMode: "pipeline" } } });
    await expect.poll(() => lastRun().getAttribute("data-status")).toBe("success");
    const tree = lastRun().locator(".ev.pipeline");
    expect(await tree.locator(":scope > .steps > .step > .step-label").allTextContents()).toEqual(["intent_parsing", "evaluate_candidates"]);
    const candidates = tree.locator(".step[data-step='evaluate_candidates'] .candidate");
    expect(await candidates.locator(".candidate-label").allTextContents()).toEqual(["Plan A #1", "Plan B #2"]);
    expect(await candidates.locator(".step-label").allTextContents()).toEqual(["template_generating", "template_generating"]);
    const [a, b] = [await candidates.nth(0).boundingBox(), await candidates.nth(1).boundingBox()];
    expect(a!.y).toBe(b!.y);
    expect(b!.x).toBeGreaterThan(a!.x + a!.width - 1);
    expect(await tree.locator(".step.done").count()).toBe(4);
    const badges = await lastRun().locator(".badge").allTextContents();
    expect(badges).toEqual(expect.arrayContaining(["pipeline started", "candidate started", "candidate completed", "pipeline completed"]));
    expect(await lastRun().locator(".badge.good", { hasText: "pipeline completed" }).count()).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, "console-pipeline.png") });
    await page.uncheck("#pipeline");
  });

  it("keeps each candidate of the demo pipeline whole and apart in both panes, growing as it streams", async () => {
    await page.click("#new-thread");
    await page.check("#pipeline");
    await page.evaluate(RECORD_CANDIDATE_TEXTS);
    await send(PACED_PIPELINE_PROMPT);
    await expect.poll(() => lastRun().getAttribute("data-status")).toBe("interrupt");

    // Conversation: the step's text, then one bubble per candidate, side by side under its label.
    const bubbles = page.locator("#conversation .bubble.assistant");
    expect(await bubbles.count()).toBe(3);
    expect(await bubbles.first().textContent()).toBe(`Understanding "${PACED_PIPELINE_PROMPT}"...`);
    const candidateBubbles = page.locator("#conversation .candidate-replies .bubble");
    expect(await candidateBubbles.evaluateAll((els) => els.map((el) => el.getAttribute("data-candidate")))).toEqual(Object.keys(CANDIDATE_TEXTS));
    expect(await candidateBubbles.locator(".reply-label").allTextContents()).toEqual(Object.values(CANDIDATE_TEXTS).map(([label]) => label));
    expect(await candidateBubbles.locator(".reply-text").allTextContents()).toEqual(Object.values(CANDIDATE_TEXTS).map(([, text]) => text));
    const [a, b] = [await candidateBubbles.nth(0).boundingBox(), await candidateBubbles.nth(1).boundingBox()];
    expect(a!.y).toBe(b!.y);
    expect(b!.x).toBeGreaterThan(a!.x + a!.width - 1);
    expect(new Set(await bubbles.evaluateAll((els) => els.map((el) => el.getAttribute("data-message-id")))).size).toBe(3);

    // Timeline: one growing row per message, in the order the messages started, the candidates' labelled.
    const rows = lastRun().locator(".ev.text");
    expect(await rows.count()).toBe(3);
    expect(await rows.locator(".who").allTextContents()).toEqual(Object.values(CANDIDATE_TEXTS).map(([label]) => label));
    expect((await rows.locator(".body").allTextContents()).map((t) => t.trim())).toEqual([
      `Understanding "${PACED_PIPELINE_PROMPT}"...`,
      ...Object.values(CANDIDATE_TEXTS).map(([, text]) => text),
    ]);

    // While streaming, each pane showed every candidate's text growing, each value a prefix of its own whole text.
    const seen = (await page.evaluate("window.__candidateTexts")) as Record<string, string[]>;
    expect(Object.keys(seen).sort()).toEqual(["conversation", "timeline"].flatMap((pane) => Object.keys(CANDIDATE_TEXTS).map((id) => `${pane} ${id}`)).sort());
    for (const [where, values] of Object.entries(seen)) {
      const whole = CANDIDATE_TEXTS[where.split(" ")[1] as keyof typeof CANDIDATE_TEXTS][1];
      expect(values.length, where).toBeGreaterThan(1);
      for (const value of values) expect(whole.startsWith(value.trim()), `${where}: ${JSON.stringify(value)}`).toBe(true);
      expect(values.at(-1)!.trim(), where).toBe(whole);
    }
    await mkdir(ARTIFACTS, { recursive: true });
    await page.locator("section.left").screenshot({ path: join(ARTIFACTS, "console-candidates-conversation.png") });
    await page.locator("section.right").screenshot({ path: join(ARTIFACTS, "console-candidates-timeline.png") });

    // Picking a plan resumes; the candidates' bubbles stay as they were.
    await page.locator("#conversation .interrupt button.choice", { hasText: "Plan B" }).click();
    await expect.poll(() => lastRun().getAttribute("data-status")).toBe("success");
    expect(await candidateBubbles.locator(".reply-text").allTextContents()).toEqual(Object.values(CANDIDATE_TEXTS).map(([, text]) => text));
    expect(await bubbles.last().textContent()).toMatch(/^Deploying Plan B\./);

    // A normal turn on the same thread still reads as one bubble, no candidate labels.
    await page.uncheck("#pipeline");
    // The run before ended in success too: wait for this turn's run before reading its status.
    const runs = await page.locator("#timeline .run").count();
    await send("list the resources");
    await expect.poll(() => page.locator("#timeline .run").count()).toBe(runs + 1);
    await expect.poll(() => lastRun().getAttribute("data-status")).toBe("success");
    expect(await bubbles.last().locator(".reply-text").textContent()).toBe(NORMAL_REPLY("list the resources"));
    expect(await bubbles.last().locator(".reply-label").count()).toBe(0);
    expect(await lastRun().locator(".ev.text").count()).toBe(2);
    expect(await lastRun().locator(".ev.text .who").count()).toBe(0);
  });

  it("shows an in-stream RUN_ERROR and a refused workspace with their codes", async () => {
    await page.click("#new-thread");
    await send("fail please");
    await expect.poll(() => lastRun().getAttribute("data-status")).toBe("error");
    const inStream = lastRun().locator(".ev.error .error-card");
    expect(await inStream.getAttribute("data-code")).toMatch(/^[A-Z0-9_]+$/);
    expect((await inStream.locator(".message").textContent())?.length).toBeGreaterThan(0);

    await page.click("#new-thread");
    await page.fill("#cwd", "/definitely/not/allowed");
    await send("hello");
    await expect.poll(() => lastRun().getAttribute("data-status")).toBe("error");
    const refused = page.locator("#conversation .error-card").last();
    expect(await refused.getAttribute("data-code")).not.toBe("ERROR");
    expect(await refused.getAttribute("data-code")).toMatch(/^[A-Z0-9_]+$/);
    expect((await refused.locator(".message").textContent())?.length).toBeGreaterThan(0);
  });

  it("did all of the above under its CSP with no violation, and the policy is enforced", async () => {
    expect(cspViolations).toEqual([]);
    expect(cspMessages).toEqual([]);
    // The policy is live: an injected inline script does not run, and the page reports it.
    await page.evaluate(`(() => {
      const script = document.createElement("script");
      script.textContent = "window.__inlineRan = true";
      document.body.append(script);
    })()`);
    await expect.poll(() => cspViolations).toEqual(["script-src-elem inline"]);
    expect(cspMessages).toHaveLength(1);
    expect(await page.evaluate("window.__inlineRan === true")).toBe(false);
  });
});
