// The clients of docs/reconnect.md, taken from the page as written, through a proxy that cuts their connections at
// random points: the fetch client hands over the run's events, once each, in order; the GatewayAgent chat ends each
// turn with the text an uncut turn ends with, and a second turn on the thread (a reloaded page) connects first.
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientVerifierProblems } from "./helpers/checks.js";
import { startCuttingProxy, type CuttingProxy } from "./helpers/cutting-proxy.js";
import { expectValidRun, readSse, slowTurn, scriptByPrompt, startStack, type Stack, type WireEvent } from "./helpers/e2e.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";

const REPO = path.resolve(import.meta.dirname, "..");
const WORK = path.join(REPO, "test", "artifacts", `docs-reconnect-${process.pid}`);
const page = readFileSync(path.join(REPO, "docs", "reconnect.md"), "utf8");
const examples = [...page.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
const fetchClient = examples.filter((e) => e.includes("export async function followRun"));
const agentClient = examples.filter((e) => e.includes("export async function chat"));

let stack: Stack<ScriptedA2AServer>;
let turns = 0;
let proxy: CuttingProxy;
let followRun: (url: string, body: { runId: string }, onEvent: (event: { type: string }) => void) => Promise<void>;
let chat: (url: string, threadId: string, iacCode: Record<string, unknown>, text: string) => Promise<string>;

beforeAll(async () => {
  expect(examples).toHaveLength(2);
  expect(fetchClient).toHaveLength(1);
  expect(agentClient).toHaveLength(1);
  mkdirSync(WORK, { recursive: true });
  const file = path.join(WORK, "follow-run.ts");
  writeFileSync(file, fetchClient[0]!);
  ({ followRun } = (await import(file)) as { followRun: typeof followRun });
  const chatFile = path.join(WORK, "chat.ts");
  writeFileSync(chatFile, agentClient[0]!);
  ({ chat } = (await import(chatFile)) as { chat: typeof chat });
  stack = await startStack({
    script: scriptByPrompt({ "write a long text": () => slowTurn("session-docs-reconnect", 80, 3, `m-long-${++turns}`) }),
    gateway: { reconnectGraceSeconds: 5 },
  });
  let n = 0;
  proxy = await startCuttingProxy(stack.gateway.url, () => 300 + ((n++ * 797) % 3000));
});

afterAll(async () => {
  await proxy?.close();
  await stack?.close();
  rmSync(WORK, { recursive: true, force: true });
});

describe("docs/reconnect.md's client", () => {
  it("hands over exactly the run's events across cut connections", async () => {
    for (const prompt of ["write a long text", "deploy the stack", "Create a VPC template"]) {
      const body = stack.input({ prompt });
      const events: WireEvent[] = [];
      await followRun(proxy.url + "/", body, (event) => events.push(event as WireEvent));
      expectValidRun(events);
      expect(await clientVerifierProblems(events)).toEqual([]);
      const whole = await fetch(stack.gateway.url + "/", {
        method: "POST",
        headers: { "Content-Type": "application/json", "Last-Event-ID": `${body.runId}:0` },
        body: JSON.stringify(body),
      });
      expect(events).toEqual(readSse(await whole.text()).events);
    }
    expect(proxy.cuts).toBeGreaterThan(5);
  });
});

describe("docs/reconnect.md's GatewayAgent chat", () => {
  it("ends cut turns as uncut ones, and a reloaded page's second turn connects to the thread first", async () => {
    const iacCode = (stack.input().forwardedProps as { iacCode: Record<string, unknown> }).iacCode;
    const uncut = await chat(stack.gateway.url + "/", `docs-chat-${randomUUID()}`, iacCode, "write a long text");
    expect(uncut).toMatch(/^tick 0 tick 1 .*tick 79 $/);
    const cutsBefore = proxy.cuts;
    const threadId = `docs-chat-${randomUUID()}`;
    expect(await chat(proxy.url + "/", threadId, iacCode, "write a long text")).toBe(uncut);
    // The same function again: a fresh agent (a reloaded page) connects, then runs the next turn.
    expect(await chat(proxy.url + "/", threadId, iacCode, "write a long text")).toBe(uncut);
    expect(proxy.cuts).toBeGreaterThan(cutsBefore);
    const status = await fetch(new URL(`threads/${threadId}`, stack.gateway.url));
    expect(await status.json()).toMatchObject({ status: "idle" });
  });
});
