// GatewayAgent on @ag-ui/client 0.0.59, the copy CopilotKit's runtime pins and an app built on it installs: the
// built agui-gateway/client is loaded by plain Node from a folder whose node_modules holds that copy (as in such an
// app), and runs turns through a proxy that cuts connections. It declares AG-UI 1.0 to the gateway (0.0.59 does not),
// so a run its Stop cancels (through the cancel extension) ends with the cancelled outcome, not an error; cut runs
// end as the uncut ones do.
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { EventSchema } from "@ag-ui/core/schemas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { startCuttingProxy, type CuttingProxy } from "./helpers/cutting-proxy.js";
import { scriptByPrompt, slowTurn, startStack, type Stack } from "./helpers/e2e.js";

const REPO = path.resolve(import.meta.dirname, "..");
const APP = path.join(REPO, "test", "artifacts", `legacy-client-${process.pid}`);
const LONG_TEXT = "write a long text";

// One run of the agent in the app's folder; prints what the agent saw and ended with.
const RUN_SCRIPT = `
import { GatewayAgent } from "./agui-gateway/client/index.js";
const [url, inputJson, stopAfter] = process.argv.slice(2);
const input = JSON.parse(inputJson);
const agent = new GatewayAgent({ url, threadId: input.threadId, initialMessages: input.messages, backoffMs: 20 });
const events = [];
let error;
// With stopAfter: the app's Stop after that many text deltas.
const onEvent = ({ event }) => {
  events.push(event);
  if (stopAfter !== undefined && events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").length === Number(stopAfter) && event.type === "TEXT_MESSAGE_CONTENT") agent.abortRun();
};
try {
  await agent.runAgent({ runId: input.runId, forwardedProps: input.forwardedProps }, { onEvent });
} catch (e) {
  error = String(e);
}
process.stdout.write(JSON.stringify({ events, messages: agent.messages, error, version: "maxProtocolVersion" in agent ? "1.x" : "0.0.x" }));
`;

interface LegacyRun {
  events: { type: string; [key: string]: unknown }[];
  messages: { role: string; content?: unknown }[];
  error?: string;
  version: string;
}

function runInApp(url: string, input: unknown, stopAfter?: number): Promise<LegacyRun> {
  return new Promise((resolve, reject) => {
    const args = [path.join(APP, "run.mjs"), url, JSON.stringify(input), ...(stopAfter === undefined ? [] : [String(stopAfter)])];
    const child = spawn(process.execPath, args, { cwd: APP, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`the app's run exited ${code}: ${err}`));
      else resolve(JSON.parse(out) as LegacyRun);
    });
  });
}

let stack: Stack<ScriptedA2AServer>;
let proxy: CuttingProxy;
let cutAfter: () => number | undefined = () => undefined;

beforeAll(async () => {
  if (!["client/index.js", "event-ids.js"].every((file) => existsSync(path.join(REPO, "dist", "src", file)))) {
    execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { cwd: REPO, stdio: "ignore", timeout: 120_000 });
  }
  // The app: the built client beside a node_modules whose @ag-ui/client is CopilotKit's copy; the rest (rxjs,
  // eventsource-parser) resolves from the repository's node_modules further up, as hoisted packages do.
  rmSync(APP, { recursive: true, force: true });
  mkdirSync(path.join(APP, "agui-gateway", "client"), { recursive: true });
  for (const file of readdirSync(path.join(REPO, "dist", "src", "client")).filter((f) => f.endsWith(".js"))) {
    copyFileSync(path.join(REPO, "dist", "src", "client", file), path.join(APP, "agui-gateway", "client", file));
  }
  copyFileSync(path.join(REPO, "dist", "src", "event-ids.js"), path.join(APP, "agui-gateway", "event-ids.js"));
  const legacy = realpathSync(path.join(REPO, "node_modules", "@copilotkit", "runtime", "node_modules", "@ag-ui", "client"));
  expect(JSON.parse(readFileSync(path.join(legacy, "package.json"), "utf8")).version).toBe("0.0.59");
  mkdirSync(path.join(APP, "node_modules", "@ag-ui"), { recursive: true });
  symlinkSync(legacy, path.join(APP, "node_modules", "@ag-ui", "client"), "dir");
  writeFileSync(path.join(APP, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(path.join(APP, "run.mjs"), RUN_SCRIPT);

  stack = await startStack({
    script: scriptByPrompt({ [LONG_TEXT]: () => slowTurn("session-legacy", 120, 2) }),
    gateway: { reconnectGraceSeconds: 30 },
  });
  proxy = await startCuttingProxy(stack.gateway.url, () => cutAfter());
}, 150_000);

afterAll(async () => {
  await proxy?.close();
  await stack?.close();
  rmSync(APP, { recursive: true, force: true });
});

const textOf = (run: LegacyRun) => run.messages.filter((m) => m.role === "assistant").map((m) => m.content).join("\n");

describe("GatewayAgent on @ag-ui/client 0.0.59", () => {
  it("declares AG-UI 1.0: an interrupt ends with the interrupt outcome, a Stop with the cancelled one", async () => {
    const parked = await runInApp(stack.gateway.url, stack.input({ prompt: "deploy the stack" }));
    expect(parked.version).toBe("0.0.x");
    expect(parked.error).toBeUndefined();
    for (const event of parked.events) expect(() => EventSchema.parse(event), event.type).not.toThrow();
    expect(parked.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt", interrupts: [{ id: expect.stringMatching(/^permission-/) }] } });
    const stopped = await runInApp(stack.gateway.url, stack.input({ prompt: LONG_TEXT }), 5);
    expect(stopped.error).toBeUndefined();
    for (const event of stopped.events) expect(() => EventSchema.parse(event), event.type).not.toThrow();
    expect(stopped.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
    expect(stopped.events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").length).toBeLessThan(120);
  }, 60_000);

  it("runs cut at random points end as the uncut run does", async () => {
    const uncut = await runInApp(stack.gateway.url, stack.input({ prompt: LONG_TEXT }));
    expect(uncut.error).toBeUndefined();
    let n = 0;
    cutAfter = () => 200 + ((n++ * 613) % 2_500);
    try {
      for (let round = 0; round < 5; round++) {
        const run = await runInApp(proxy.url, stack.input({ prompt: LONG_TEXT }));
        expect(run.error, `round ${round}`).toBeUndefined();
        expect(run.events.map((e) => e.type), `round ${round}`).toEqual(uncut.events.map((e) => e.type));
        expect(textOf(run)).toBe(textOf(uncut));
        for (const event of run.events) expect(() => EventSchema.parse(event), event.type).not.toThrow();
      }
    } finally {
      cutAfter = () => undefined;
    }
    expect(proxy.cuts).toBeGreaterThanOrEqual(5);
  }, 120_000);
});
