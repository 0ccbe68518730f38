// The console across reloads and broken streams, in headless Chromium: the thread id in the URL, a reload that
// connects (POST /connect) and shows the conversation, the run still streaming, or the interrupt waiting; a run
// stream cut by the network resumed with Last-Event-ID, and a REPLAY_EXPIRED that falls back to a connect.
// The gateway runs as `--demo` does (no auth: a connect must prove the thread's binding) with a reconnect grace.
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Koa from "koa";
import type { BrowserContext, Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { RecordReader } from "../console/reconnect.js";
import { consoleRoutes } from "../src/console/route.js";
import { createDemoScript, startScriptedA2AServer, type ScriptedA2AServer, type TurnContext } from "../src/demo/index.js";
import { startGateway, type RunningGateway } from "../src/gateway.js";
import { launchChromium } from "./helpers/browser.js";
import { schemaProblems } from "./helpers/checks.js";
import { expectValidRun, promptOf, silentLogger, slowTurn } from "./helpers/e2e.js";
import { parseSse, type WireEvent } from "./helpers/sse.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SLOW = "tick slowly";
/** A short turn of the same scripted session: a next turn on a thread that SLOW ran on. */
const QUICK = "tick twice";
const TICKS = 80;
const ALL_TICKS = Array.from({ length: TICKS }, (_, i) => `tick ${i} `).join("");

/** One request the front passed to the gateway (or answered itself), and what came back. */
interface Exchange {
  method: string;
  path: string;
  lastEventId?: string;
  body: string;
  status: number;
  text: string;
  /** The answer reached its end (not cut by the front, not dropped by the page). */
  ended: boolean;
}

let workspace: string;
let distDir: string;
let upstream: ScriptedA2AServer;
let gateway: RunningGateway;
let front: Server;
let base: string;
const exchanges: Exchange[] = [];
/** The next run stream (POST / without Last-Event-ID) is cut after this many event records. */
let cutNextRunAfter: number | undefined;
/** The next reconnect (POST / with Last-Event-ID) is answered 409 REPLAY_EXPIRED by the front, as when the gateway kept nothing. */
let expireNextReconnect = false;

function script() {
  const demo = createDemoScript({ frameDelayMs: 1 });
  return (turn: TurnContext) => {
    const prompt = promptOf(turn);
    if (prompt === SLOW) return slowTurn("session-reload-slow", TICKS, 50);
    if (prompt === QUICK) return slowTurn("session-reload-slow", 2, 10);
    return demo(turn);
  };
}

/** /console* to the route module; everything else to the gateway, each exchange recorded, some cut or refused on request. */
function startFront(gatewayPort: number): Promise<Server> {
  const app = new Koa();
  app.use(consoleRoutes({ distDir, cwd: workspace, demo: true }));
  const consoleHandler = app.callback();
  const proxy = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const path = (req.url ?? "/").split("?")[0]!;
    const header = req.headers["last-event-id"];
    const exchange: Exchange = { method: req.method ?? "", path, body: body.toString("utf8"), status: 0, text: "", ended: false, ...(typeof header === "string" && { lastEventId: header }) };
    exchanges.push(exchange);
    const isRun = req.method === "POST" && path === "/";
    if (isRun && exchange.lastEventId !== undefined && expireNextReconnect) {
      expireNextReconnect = false;
      exchange.status = 409;
      exchange.text = JSON.stringify({ error: { code: "REPLAY_EXPIRED", message: "The events after that id are no longer kept." } });
      exchange.ended = true;
      res.writeHead(409, { "Content-Type": "application/json; charset=utf-8" });
      return res.end(exchange.text);
    }
    const cutAfter = isRun && exchange.lastEventId === undefined ? cutNextRunAfter : undefined;
    if (cutAfter !== undefined) cutNextRunAfter = undefined;
    const upstreamReq = httpRequest({ host: "127.0.0.1", port: gatewayPort, method: req.method, path: req.url, headers: req.headers }, (upstreamRes) => {
      exchange.status = upstreamRes.statusCode ?? 502;
      res.writeHead(exchange.status, upstreamRes.headers);
      upstreamRes.setEncoding("utf8");
      upstreamRes.on("data", (chunk: string) => {
        if (res.destroyed) return;
        exchange.text += chunk;
        res.write(chunk);
        if (cutAfter !== undefined && (exchange.text.match(/^data: /gm)?.length ?? 0) >= cutAfter) {
          // The network drops the connection: the page's stream breaks mid-run, the gateway's client is gone.
          res.destroy();
          upstreamReq.destroy();
        }
      });
      upstreamRes.on("end", () => {
        if (res.destroyed) return;
        exchange.ended = true;
        res.end();
      });
    });
    upstreamReq.on("error", () => res.destroy());
    res.on("close", () => upstreamReq.destroy());
    upstreamReq.end(body);
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (path === "/console" || path.startsWith("/console/")) return void consoleHandler(req, res);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => proxy(req, res, Buffer.concat(chunks)));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** The events of an answer as the page received them, each checked against EventSchema. */
function eventsOf(exchange: Exchange): WireEvent[] {
  const { events } = parseSse(exchange.text);
  expect(schemaProblems(events), `${exchange.path} ${exchange.lastEventId ?? ""}`).toEqual([]);
  return events;
}

const runsTo = (path: string) => exchanges.filter((e) => e.method === "POST" && e.path === path);

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "console-reload-ws-"));
  distDir = await mkdtemp(join(tmpdir(), "console-reload-dist-"));
  await build({ configFile: join(ROOT, "console", "vite.config.ts"), logLevel: "error", build: { outDir: distDir, emptyOutDir: true, minify: false } });
  upstream = await startScriptedA2AServer({ script: script() });
  gateway = await startGateway({
    host: "127.0.0.1",
    port: 0,
    a2aUrl: upstream.url,
    allowedRoots: [workspace],
    heartbeatSeconds: 5,
    reconnectGraceSeconds: 20,
    logger: silentLogger,
  });
  front = await startFront(gateway.port);
  base = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
}, 60_000);

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

describe("the console's record reader", () => {
  it("passes on whole records only, and knows the last id and the terminal event", () => {
    const reader = new RecordReader("run-1");
    expect(reader.lastEventId()).toBe("run-1:0");
    const started = 'id: run-1:1\ndata: {"type":"RUN_STARTED","threadId":"t","runId":"run-1"}\n\n';
    expect(reader.push(started.slice(0, 20))).toEqual([]);
    const [first] = reader.push(`${started.slice(20)}: heartbeat\n\nid: run-1:2\ndata: {"type":"TEXT_MES`);
    expect(first).toMatchObject({ id: "run-1:1", type: "RUN_STARTED" });
    expect(new TextDecoder().decode(first!.bytes)).toBe(started);
    expect(reader.lastEventId()).toBe("run-1:1");
    // The connection broke inside record 2: it is dropped, and asked for again.
    reader.reset();
    const records = reader.push('id: run-1:2\ndata: {"type":"RUN_FINISHED","threadId":"t","runId":"run-1"}\n\n');
    expect(records.map((r) => r.type)).toEqual(["RUN_FINISHED"]);
    expect(reader.finished).toBe(true);
    expect(reader.lastEventId()).toBe("run-1:2");
    expect(schemaProblems(records.map((r) => JSON.parse(new TextDecoder().decode(r.bytes).split("data: ")[1]!) as WireEvent))).toEqual([]);
  });
});

describe("the console after a reload", () => {
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    profile = await mkdtemp(join(tmpdir(), "console-reload-chromium-"));
    context = await launchChromium(profile, { viewport: { width: 1400, height: 900 } });
    page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(8_000);
    page.on("pageerror", (error) => void pageErrors.push(`${error.message} ${error.stack}`));
    await page.goto(`${base}/console`);
    await page.waitForFunction(`document.getElementById("cwd")?.value === ${JSON.stringify(workspace)}`);
  });

  afterAll(async () => {
    await context?.close();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  beforeEach(async () => {
    await page.click("#new-thread");
  });

  const lastRun = () => page.locator("#timeline .run").last();
  const threadInUrl = () => new URL(page.url()).searchParams.get("thread");

  async function send(text: string): Promise<void> {
    await page.fill("#prompt", text);
    await page.press("#prompt", "Enter");
  }

  /** The body of the first run the page sent on `threadId`. */
  function firstRunBody(threadId: string): { runId: string; forwardedProps: { iacCode: { rosInvocationId: string; cwd: string } } } {
    const run = runsTo("/").find((e) => JSON.parse(e.body).threadId === threadId);
    expect(run, "the thread's first run").toBeDefined();
    return JSON.parse(run!.body);
  }

  it("reloaded mid-run: the conversation, then the run going on in the timeline to its end", async () => {
    await send(SLOW);
    await expect.poll(async () => (await lastRun().locator(".ev.text").allTextContents()).join("")).toContain("tick 3 ");
    const threadId = await page.inputValue("#thread");
    expect(threadInUrl()).toBe(threadId);
    const binding = firstRunBody(threadId).forwardedProps.iacCode;
    const connects = runsTo("/connect").length;

    await page.reload();
    // At once: the prompt from the thread's history, and the run (under the connect) still streaming.
    await page.locator("#conversation .bubble.user.history", { hasText: SLOW }).waitFor();
    expect(await page.inputValue("#thread")).toBe(threadId);
    expect(await lastRun().locator(".run-kind").textContent()).toBe("connect");
    await expect.poll(async () => (await lastRun().locator(".ev.text").allTextContents()).join("")).toContain("tick 0 ");
    expect(await lastRun().getAttribute("data-status")).toBe("running");
    expect(await page.isEnabled("#cancel")).toBe(true);

    await expect.poll(() => lastRun().getAttribute("data-status"), { timeout: 15_000 }).toBe("success");
    // The whole run, each tick once: the connect replays it from its first event.
    expect((await lastRun().locator(".ev.text .body").allTextContents()).join("")).toBe(ALL_TICKS);
    expect((await page.locator("#conversation .bubble.assistant .reply-text").last().textContent())?.trim()).toBe(ALL_TICKS.trim());
    expect(await page.isEnabled("#send")).toBe(true);

    // The connect proved the binding the first run made, from the same tab's storage.
    const connect = runsTo("/connect")[connects]!;
    const body = JSON.parse(connect.body) as { threadId: string; runId: string; forwardedProps: { iacCode: { rosInvocationId: string } } };
    expect(body.threadId).toBe(threadId);
    expect(body.forwardedProps.iacCode.rosInvocationId).toBe(binding.rosInvocationId);
    expect(connect.ended).toBe(true);
    const events = eventsOf(connect);
    expectValidRun(events);
    expect(events.slice(0, 2).map((e) => e.type)).toEqual(["RUN_STARTED", "MESSAGES_SNAPSHOT"]);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", runId: body.runId });

    // The thread goes on: a next turn on it after the reload.
    const runs = await page.locator("#timeline .run").count();
    await send(QUICK);
    await expect.poll(() => page.locator("#timeline .run").count()).toBe(runs + 1);
    await expect.poll(() => lastRun().getAttribute("data-status")).not.toBe("running");
    expect(await lastRun().locator(".error-card").allTextContents()).toEqual([]);
    expect(await lastRun().getAttribute("data-status")).toBe("success");
    expect(await lastRun().locator(".run-kind").textContent()).toBe("prompt");
    const next = runsTo("/").at(-1)!;
    expect(JSON.parse(next.body).forwardedProps.iacCode).toMatchObject({ rosInvocationId: expect.any(String), cwd: binding.cwd });
    expectValidRun(eventsOf(next));
  });

  it("reloaded while an approval waits: its card at once, and approving it deploys", async () => {
    await send("deploy the stack");
    await page.locator("#conversation .interrupt.permission").waitFor();
    const threadId = await page.inputValue("#thread");
    expect(threadInUrl()).toBe(threadId);
    const binding = firstRunBody(threadId).forwardedProps.iacCode;

    await page.reload();
    const card = page.locator("#conversation .interrupt.permission");
    await card.waitFor({ timeout: 5_000 });
    expect(await page.locator("#conversation .bubble.user.history").allTextContents()).toEqual(["deploy the stack"]);
    expect(await lastRun().locator(".run-kind").textContent()).toBe("connect");
    expect(await lastRun().getAttribute("data-status")).toBe("interrupt");
    expect(await card.locator("button.choice").allTextContents()).toEqual(["Allow once", "Deny"]);
    expect(await page.isDisabled("#send")).toBe(true);
    const connect = runsTo("/connect").at(-1)!;
    const connectEvents = eventsOf(connect);
    expectValidRun(connectEvents);
    expect(connectEvents.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt" } });

    await card.locator("button.choice", { hasText: "Allow once" }).click();
    await expect.poll(() => lastRun().getAttribute("data-status")).toBe("success");
    expect(await lastRun().locator(".run-kind").textContent()).toBe("resume");
    expect(await page.locator("#conversation .bubble.assistant").last().textContent()).toMatch(/is deployed in cn-hangzhou/);
    const resume = runsTo("/").at(-1)!;
    const resumeBody = JSON.parse(resume.body) as { resume: unknown[]; forwardedProps: { iacCode: { rosInvocationId: string; cwd: string } } };
    expect(resumeBody.resume).toHaveLength(1);
    expect(resumeBody.forwardedProps.iacCode).toMatchObject({ rosInvocationId: binding.rosInvocationId, cwd: binding.cwd });
    expectValidRun(eventsOf(resume));
  });

  it("reloaded after a finished conversation: the conversation is shown", async () => {
    await send("list the resources");
    await expect.poll(() => lastRun().getAttribute("data-status")).toBe("success");
    const reply = (await page.locator("#conversation .bubble.assistant .reply-text").last().textContent())!;
    const threadId = await page.inputValue("#thread");

    await page.reload();
    await page.locator("#conversation .bubble.user.history", { hasText: "list the resources" }).waitFor();
    await expect.poll(() => lastRun().getAttribute("data-status")).toBe("success");
    expect(await page.inputValue("#thread")).toBe(threadId);
    const assistant = page.locator("#conversation .bubble.assistant.history .reply-text");
    expect(await assistant.count()).toBeGreaterThan(0);
    expect((await assistant.allTextContents()).join(" ")).toContain(`I'll help with "list the resources"`);
    expect(reply).toContain(`I'll help with "list the resources"`);
    const events = eventsOf(runsTo("/connect").at(-1)!);
    expectValidRun(events);
    expect(events.map((e) => e.type)).toEqual(["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
  });

  it("a thread the gateway does not know starts fresh and leaves the URL", async () => {
    await page.goto(`${base}/console?thread=no-such-thread`);
    await expect.poll(() => threadInUrl()).toBeNull();
    expect(await page.inputValue("#thread")).not.toBe("no-such-thread");
    expect(await page.locator("#conversation .notice").textContent()).toContain("no-such-thread");
    expect(await page.locator("#timeline .run").count()).toBe(0);
    const connect = runsTo("/connect").at(-1)!;
    expect(connect.status).toBe(404);
    expect(JSON.parse(connect.text)).toMatchObject({ error: { code: "THREAD_NOT_FOUND" } });
    await expect.poll(() => page.inputValue("#cwd")).toBe(workspace);
  });

  it("a run whose stream breaks is resumed with Last-Event-ID and read to its end, each event once", async () => {
    const cutAfter = 12;
    cutNextRunAfter = cutAfter;
    await send(SLOW);
    await expect.poll(() => lastRun().getAttribute("data-status"), { timeout: 15_000 }).toBe("success");
    expect((await lastRun().locator(".ev.text .body").allTextContents()).join("")).toBe(ALL_TICKS);
    expect(await lastRun().locator(".run-kind").textContent()).toBe("prompt");
    expect(await page.locator("#conversation .error-card").count()).toBe(0);

    const runs = runsTo("/");
    const [cut, resumed] = runs.slice(-2) as [Exchange, Exchange];
    expect(cut.lastEventId).toBeUndefined();
    expect(cut.ended).toBe(false);
    expect(resumed.body).toBe(cut.body);
    // The page asks for what follows the last whole record it read (the front may have cut the next one in half).
    const before = eventsOf(cut);
    const [key, seq] = resumed.lastEventId!.split(":");
    expect(key).toBe(JSON.parse(cut.body).runId);
    expect(Number(seq)).toBeGreaterThanOrEqual(cutAfter - 1);
    expect(Number(seq)).toBeLessThanOrEqual(before.length);
    expect(resumed.ended).toBe(true);
    // What the page read, across both answers, is one valid run.
    expectValidRun([...before.slice(0, Number(seq)), ...eventsOf(resumed)]);
  });

  it("a broken stream whose events are no longer kept falls back to a connect", async () => {
    cutNextRunAfter = 12;
    expireNextReconnect = true;
    const connects = runsTo("/connect").length;
    await send(SLOW);
    await expect.poll(() => runsTo("/connect").length).toBe(connects + 1);
    await expect.poll(() => lastRun().getAttribute("data-status"), { timeout: 15_000 }).toBe("success");
    expect(await lastRun().locator(".run-kind").textContent()).toBe("connect");
    expect((await lastRun().locator(".ev.text .body").allTextContents()).join("")).toBe(ALL_TICKS);
    // The conversation is the thread's: its prompt once, the reply once.
    expect(await page.locator("#conversation .bubble.user").allTextContents()).toEqual([SLOW]);
    expect((await page.locator("#conversation .bubble.assistant .reply-text").allTextContents()).map((t) => t.trim())).toEqual([ALL_TICKS.trim()]);
    // The broken run stays in the timeline with the code that ended it.
    expect(await page.locator("#timeline .run .error-card[data-code='REPLAY_EXPIRED']").count()).toBe(1);
    const connect = runsTo("/connect").at(-1)!;
    const events = eventsOf(connect);
    expectValidRun(events);
    const refused = runsTo("/").at(-1)!;
    expect(refused.status).toBe(409);
  });

  it("threw nothing in the page", () => {
    expect(pageErrors).toEqual([]);
  });
});
