// The client of docs/reconnect.md, taken from the page as written, reads runs to their end through a proxy that
// cuts its connections at random points: the events it hands over are the run's, once each, in order.
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
const example = [...page.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);

let stack: Stack<ScriptedA2AServer>;
let proxy: CuttingProxy;
let followRun: (url: string, body: { runId: string }, onEvent: (event: { type: string }) => void) => Promise<void>;

beforeAll(async () => {
  expect(example).toHaveLength(1);
  mkdirSync(WORK, { recursive: true });
  const file = path.join(WORK, "follow-run.ts");
  writeFileSync(file, example[0]!);
  ({ followRun } = (await import(file)) as { followRun: typeof followRun });
  stack = await startStack({
    script: scriptByPrompt({ "write a long text": () => slowTurn("session-docs-reconnect", 80, 3) }),
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
