// --cors-origins in Chromium: a page served from a second origin (another port on 127.0.0.1) runs the stock
// @ag-ui/client HttpAgent against the gateway. The allowed origin streams a run, answers its interrupt and reads
// a refusal's envelope; a refused origin is stopped by the browser at the preflight, before the gateway sees a run.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { RunAgentInput } from "@ag-ui/client";
import { build } from "esbuild";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleRoutes } from "../src/console/route.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { launchChromium } from "./helpers/browser.js";
import { allowOnce, interruptsOf, resumeInput } from "./helpers/durable.js";
import { expectValidRun, readSse, startStack, typesOf, type Stack } from "./helpers/e2e.js";
import { postJson } from "./helpers/http.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const TOKEN = "cors-browser-token";

/**
 * The second origin's script: one HttpAgent per thread (it keeps the pending interrupts between runs), its fetch
 * teed so the test reads the exact SSE bytes the browser received.
 */
const PAGE_SCRIPT = `
import { HttpAgent } from "@ag-ui/client";
const agents = new Map();
window.runOnGateway = async (url, token, input) => {
  let agent = agents.get(input.threadId);
  if (!agent) {
    agent = new HttpAgent({ url, threadId: input.threadId, initialMessages: input.messages, initialState: input.state, headers: { Authorization: "Bearer " + token } });
    agents.set(input.threadId, agent);
  } else {
    agent.setMessages(input.messages);
  }
  let raw = Promise.resolve("");
  agent.fetch = async (target, init) => {
    const response = await fetch(target, init);
    if (!response.body) return response;
    const [forAgent, forTest] = response.body.tee();
    raw = new Response(forTest).text();
    return new Response(forAgent, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  const seen = [];
  try {
    await agent.runAgent(
      { runId: input.runId, tools: input.tools, context: input.context, forwardedProps: input.forwardedProps, ...(input.resume && { resume: input.resume }) },
      { onEvent: ({ event }) => void seen.push(event.type) },
    );
    return { raw: await raw, seen };
  } catch (error) {
    return { error: { name: error.name, message: String(error.message), status: error.status, payload: error.payload }, seen };
  }
};
`;

interface PageRun {
  raw?: string;
  seen: string[];
  error?: { name: string; message: string; status?: number; payload?: { error?: { code?: string } } };
}

let stack: Stack<ScriptedA2AServer>;
let allowedSite: Server;
let refusedSite: Server;
let context: BrowserContext;
let profile: string;
let consoleDist: string;

/** A tiny site: its page loads the bundled client script; anything else is a 404. */
async function startSite(script: string): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url === "/") {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      res.end(`<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module" src="/client.js"></script></head><body></body></html>`);
    } else if (req.url === "/client.js") {
      res.writeHead(200, { "Content-Type": "text/javascript; charset=utf-8" });
      res.end(script);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return server;
}

const originOf = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

async function close(server: Server | undefined): Promise<void> {
  if (!server) return;
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

beforeAll(async () => {
  const bundle = await build({
    stdin: { contents: PAGE_SCRIPT, resolveDir: ROOT, loader: "js", sourcefile: "cors-page.js" },
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    logLevel: "error",
  });
  const script = bundle.outputFiles[0]!.text;
  [allowedSite, refusedSite] = await Promise.all([startSite(script), startSite(script)]);
  // The console's route over a one-line page: enough to see whether another origin may frame it.
  consoleDist = await mkdtemp(join(tmpdir(), "cors-console-"));
  await writeFile(join(consoleDist, "index.html"), `<!doctype html><p id="console">console</p>`);
  const consolePages = consoleRoutes({ distDir: consoleDist, cwd: consoleDist, demo: false });
  stack = await startStack({ gateway: { corsOrigins: [originOf(allowedSite)], authToken: TOKEN, extraMiddleware: [consolePages] } });
  profile = await mkdtemp(join(tmpdir(), "cors-chromium-"));
  context = await launchChromium(profile, { viewport: { width: 800, height: 600 } });
});

afterAll(async () => {
  await context?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
  await close(allowedSite);
  await close(refusedSite);
  await stack?.close();
  if (consoleDist) await rm(consoleDist, { recursive: true, force: true });
});

/** A page of `site`, its client loaded, with the browser's console messages collected. */
async function openPage(site: Server): Promise<{ page: Page; messages: string[] }> {
  const page = await context.newPage();
  page.setDefaultTimeout(8_000);
  const messages: string[] = [];
  page.on("console", (message) => void messages.push(message.text()));
  await page.goto(`${originOf(site)}/`);
  await page.waitForFunction("typeof window.runOnGateway === 'function'");
  // A different port is a different origin: every call below is cross-origin.
  expect(await page.evaluate("location.origin")).not.toBe(new URL(stack.gateway.url).origin);
  return { page, messages };
}

function runInPage(page: Page, input: RunAgentInput, token = TOKEN): Promise<PageRun> {
  return page.evaluate(([url, bearer, body]) => (globalThis as unknown as { runOnGateway(...args: unknown[]): Promise<PageRun> }).runOnGateway(url, bearer, body), [
    stack.gateway.url,
    token,
    input,
  ] as const);
}

/** The run's events as the browser received them: framing checked, every event through EventSchema, the run verified. */
function eventsOf(run: PageRun) {
  expect(run.error, "the run failed in the page").toBeUndefined();
  const { events } = readSse(run.raw ?? "");
  expectValidRun(events);
  expect(run.seen).toEqual(typesOf(events));
  return events;
}

describe("a page on an allowed origin", () => {
  it("streams a run, answers its interrupt and finishes, with the stock HttpAgent", async () => {
    const { page, messages } = await openPage(allowedSite);
    const first = stack.input({ prompt: "deploy the stack" });
    const parked = eventsOf(await runInPage(page, first));
    expect(parked[0]?.type).toBe("RUN_STARTED");
    const interrupts = interruptsOf(parked);
    expect(interrupts).toHaveLength(1);

    const resumed = eventsOf(await runInPage(page, resumeInput(first, [allowOnce(interrupts[0]!.id)])));
    expect(resumed.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(typesOf(resumed)).toContain("TOOL_CALL_RESULT");
    expect(messages.filter((m) => /CORS|Access-Control/i.test(m))).toEqual([]);
    await page.close();
  });

  it("reads a refusal's code and status from the JSON envelope", async () => {
    const { page } = await openPage(allowedSite);
    const run = await runInPage(page, stack.input(), "wrong-token");
    expect(run.error?.status).toBe(401);
    expect(run.error?.payload?.error?.code).toBe("UNAUTHORIZED");
    await page.close();
  });
});

describe("a page on a refused origin", () => {
  it("is blocked by the browser at the preflight: the gateway never sees the run", async () => {
    const { page, messages } = await openPage(refusedSite);
    const input = stack.input();
    const run = await runInPage(page, input);
    expect(run.error?.name).toBe("TypeError");
    expect(run.error?.message).toMatch(/Failed to fetch/);
    expect(run.error?.status).toBeUndefined();
    expect(run.seen).toEqual([]);
    await expect.poll(() => messages.some((m) => m.includes(originOf(refusedSite)) && /blocked by CORS policy/.test(m))).toBe(true);
    // The POST never left the browser: the same run id is still new to the gateway.
    const direct = await postJson(stack.gateway.url, input, { Authorization: `Bearer ${TOKEN}` });
    expect(direct.status).toBe(200);
    const { events } = readSse(direct.text);
    expectValidRun(events);
    expect(events[0]?.type).toBe("RUN_STARTED");
    await page.close();
  });
});

describe("the console", () => {
  it("refuses to be framed by a page on another origin, allowed or not", async () => {
    for (const site of [allowedSite, refusedSite]) {
      const { page, messages } = await openPage(site);
      await page.evaluate(`(() => {
        const frame = document.createElement("iframe");
        frame.src = ${JSON.stringify(new URL("/console", stack.gateway.url).toString())};
        document.body.append(frame);
      })()`);
      await expect.poll(() => messages.some((m) => /frame-ancestors 'none'/.test(m))).toBe(true);
      const framed = page.frames().find((frame) => frame !== page.mainFrame());
      expect(await framed?.locator("#console").count()).toBe(0);
      await page.close();
    }
  });
});
