// break-reconnect: a connection that is gone before the gateway gets round to owning the run. The gateway awaits the
// thread record (the state store) between reading a reconnect and taking the run over, and awaits admission before
// a new run's stream starts; a client that hangs up in that window must not leave a dead socket owning the run.
// The slow state store is simulated by delaying RunService.rejoinable / admit (what a Redis round trip or a busy
// disk does); everything else is real: gateway, scripted kernel, TCP.
import { afterEach, describe, expect, it } from "vitest";
import { postCancel } from "./helpers/durable.js";
import { openSse, scriptByPrompt, slowTurn, startStack, waitFor, type Stack } from "./helpers/e2e.js";
import { readWithReconnects } from "./helpers/reconnect.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";

const LONG = "a long slow text";

function script() {
  // 400 ticks 25 ms apart: ~10 s, far longer than any grace here; a cancel ends it at once.
  return scriptByPrompt({ [LONG]: () => slowTurn("session-owner", 400, 25) });
}

function delay<T extends object, K extends keyof T>(target: T, key: K, ms: number): void {
  const original = (target[key] as unknown as (...args: unknown[]) => unknown).bind(target);
  (target as Record<K, unknown>)[key] = async (...args: unknown[]) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return original(...args);
  };
}

let stack: Stack<ScriptedA2AServer> | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

describe("a client that hangs up while the gateway is still looking the run up", () => {
  it("a reconnect aborted during the thread lookup does not keep a detached run alive past its grace", async () => {
    stack = await startStack({ script: script(), gateway: { reconnectGraceSeconds: 1 } });
    const s = stack;
    const body = s.input({ prompt: LONG });
    const first = await openSse(s.gateway.url + "/", body);
    await first.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    first.abort();
    // The run is detached now (grace 1 s). A reconnect arrives and its client gives up before the (slow) lookup ends.
    delay(s.gateway.runs, "rejoinable", 400);
    const controller = new AbortController();
    const reconnect = fetch(s.gateway.url + "/", {
      method: "POST",
      headers: { "Content-Type": "application/json", "Last-Event-ID": `${body.runId}:1` },
      body: JSON.stringify(body),
      signal: controller.signal,
    }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    await reconnect;
    // Nobody reads the run: it must be cancelled once the grace has passed (1 s after the last client left).
    const cancelled = await waitFor(() => s.upstream.cancelled.length === 1, 4_000);
    expect(cancelled, "the detached run was cancelled after its grace").toBe(true);
    expect(await waitFor(() => s.gateway.runs.activeRunCount === 0, 2_000)).toBe(true);
  });

  it("with no grace, a takeover by a reconnect that is already gone stops the run (nobody reads it)", async () => {
    stack = await startStack({ script: script() });
    const s = stack;
    const body = s.input({ prompt: LONG });
    const first = await openSse(s.gateway.url + "/", body);
    await first.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    delay(s.gateway.runs, "rejoinable", 400);
    const controller = new AbortController();
    const reconnect = fetch(s.gateway.url + "/", {
      method: "POST",
      headers: { "Content-Type": "application/json", "Last-Event-ID": `${body.runId}:1` },
      body: JSON.stringify(body),
      signal: controller.signal,
    }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    await reconnect;
    // The takeover ends the first connection; the new owner is already gone: no client at all.
    const rest = await first.rest();
    expect(rest.at(-1)?.type).not.toBe("RUN_FINISHED");
    expect(await waitFor(() => s.upstream.cancelled.length === 1, 3_000), "the run nobody reads was cancelled").toBe(true);
  });

  it("a first POST whose client hangs up during admission does not leave its run running unread", async () => {
    stack = await startStack({ script: script() });
    const s = stack;
    const body = s.input({ prompt: LONG });
    delay(s.gateway.runs, "admit", 400);
    const controller = new AbortController();
    const post = fetch(s.gateway.url + "/", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      signal: controller.signal,
    }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    await post;
    // Either nothing ran, or what ran is cancelled at once (grace 0): never a run going on for 10 s with no client.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await waitFor(() => s.gateway.runs.activeRunCount === 0, 2_000), "no run is left active without a client").toBe(true);
  });
});
