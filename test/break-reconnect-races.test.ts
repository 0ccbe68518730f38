// break-reconnect: clients that race each other for one run. Two reconnects at once, a reconnect while the first
// connection is still open, hundreds of reconnects to one run, and a reconnect that lands just as the grace ends.
// Every client's own view must be the run's records, in order, once each, byte for byte; the run ends once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamProblems } from "./helpers/checks.js";
import { openSse, postRaw, readSse, scriptByPrompt, slowTurn, startStack, waitFor, type Stack } from "./helpers/e2e.js";
import { readWithReconnects, type Delivered } from "./helpers/reconnect.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";

const SLOW = "a slow text";
const SHORT = "a short slow text";

function script() {
  return scriptByPrompt({
    [SLOW]: () => slowTurn("session-race", 120, 20),
    [SHORT]: () => slowTurn("session-race-short", 40, 20),
  });
}

async function fullLog(url: string, body: { runId: string }): Promise<string> {
  const reply = await fetch(url + "/", { method: "POST", headers: { "Content-Type": "application/json", "Last-Event-ID": `${body.runId}:0` }, body: JSON.stringify(body) });
  expect(reply.status).toBe(200);
  return (await reply.text()).split(": heartbeat\n\n").join("");
}

function expectWholeView(delivered: Delivered, runId: string, log: string): void {
  expect(delivered.stopped).toBeUndefined();
  const ids = delivered.records.map((r) => r.id);
  expect(ids).toEqual(ids.map((_, i) => `${runId}:${i + 1}`));
  expect(streamProblems(delivered.records.map((r) => r.event))).toEqual([]);
  expect(delivered.records.map((r) => r.text).join("")).toBe(log);
}

let stack: Stack<ScriptedA2AServer>;
beforeAll(async () => {
  stack = await startStack({ script: script(), gateway: { reconnectGraceSeconds: 5 } });
});
afterAll(() => stack.close());

describe("reconnects racing for one run", () => {
  it("two clients that keep taking the run from each other both end with the whole run, once each", async () => {
    const body = stack.input({ prompt: SLOW });
    const first = await openSse(stack.gateway.url + "/", body);
    await first.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    // Both come back at once with the same cursor, and each reconnects again whenever the other takes the run.
    // (No cap on requests, as docs/reconnect.md's client: tries that bring something new do not count.)
    const [a, b] = await Promise.all([
      readWithReconnects(stack.gateway.url + "/", body, { runId: body.runId, lastEventId: `${body.runId}:0`, maxRequests: 100_000 }),
      readWithReconnects(stack.gateway.url + "/", body, { runId: body.runId, lastEventId: `${body.runId}:0`, maxRequests: 100_000 }),
    ]);
    first.abort();
    const log = await fullLog(stack.gateway.url, body);
    expectWholeView(a, body.runId, log);
    expectWholeView(b, body.runId, log);
    expect(stack.upstream.cancelled).toEqual([]);
  });

  it("a reconnect while the first connection is alive: the first is closed, the reconnect reads on, nothing twice", async () => {
    const body = stack.input({ prompt: SLOW });
    const first = await fetch(stack.gateway.url + "/", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const firstText = first.text();
    await new Promise((resolve) => setTimeout(resolve, 400));
    const second = await readWithReconnects(stack.gateway.url + "/", body, { runId: body.runId, lastEventId: `${body.runId}:3`, maxRequests: 1 });
    expect(second.stopped).toBeUndefined();
    const early = readSse(await firstText);
    // The first connection ended cleanly without a terminal event; what it got plus the rest is the run.
    expect(early.events.some((e) => e.type === "RUN_FINISHED" || e.type === "RUN_ERROR")).toBe(false);
    const log = await fullLog(stack.gateway.url, body);
    const pieces = log.split(/(?<=\n\n)/);
    expect(early.records.length).toBeGreaterThanOrEqual(3);
    expect(second.records.map((r) => r.text).join("")).toBe(pieces.slice(3).join(""));
    expect(stack.upstream.cancelled).toEqual([]);
  });

  it("a storm of 300 reconnects (sequential and 50 at once) to one live run: no crash, each answer a correct slice, the run ends once", async () => {
    const body = stack.input({ prompt: SLOW });
    const first = await openSse(stack.gateway.url + "/", body);
    await first.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    first.abort();
    const slices: { at: number; text: string }[] = [];
    const one = async (at: number, read: "abort" | "some") => {
      const controller = new AbortController();
      const reply = await fetch(stack.gateway.url + "/", {
        method: "POST",
        headers: { "Content-Type": "application/json", "Last-Event-ID": `${body.runId}:${at}` },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      expect([200, 400]).toContain(reply.status);
      if (reply.status !== 200) return;
      const reader = reply.body!.getReader();
      let text = "";
      const decoder = new TextDecoder();
      if (read === "some") {
        const chunk = await reader.read().catch(() => ({ value: undefined }));
        if (chunk.value) text += decoder.decode(chunk.value);
      }
      controller.abort();
      slices.push({ at, text });
    };
    for (let i = 0; i < 150; i++) await one(i % 5, i % 2 ? "abort" : "some");
    for (let wave = 0; wave < 3; wave++) await Promise.all(Array.from({ length: 50 }, (_, i) => one(i % 7, "some")));
    // The last client reads to the end.
    const last = await readWithReconnects(stack.gateway.url + "/", body, { runId: body.runId, lastEventId: `${body.runId}:0` });
    const log = await fullLog(stack.gateway.url, body);
    expectWholeView(last, body.runId, log);
    const pieces = log.split(/(?<=\n\n)/);
    // Each storm answer began exactly at its cursor, with the run's own bytes (whole records only are compared).
    for (const { at, text } of slices) {
      const whole = text.slice(0, text.lastIndexOf("\n\n") + 2).split(": heartbeat\n\n").join("");
      expect(pieces.slice(at).join("").startsWith(whole)).toBe(true);
    }
    expect(stack.upstream.cancelled).toEqual([]);
    expect(await waitFor(() => stack.gateway.runs.activeRunCount === 0)).toBe(true);
  }, 30_000);

  it("200 readers at once of an ended run all get it whole", async () => {
    const body = stack.input();
    const first = await postRaw(stack.gateway.url, body);
    const texts = await Promise.all(
      Array.from({ length: 200 }, () =>
        fetch(stack.gateway.url + "/", { method: "POST", headers: { "Content-Type": "application/json", "Last-Event-ID": `${body.runId}:0` }, body: JSON.stringify(body) }).then((r) => r.text()),
      ),
    );
    for (const text of texts) expect(text).toBe(first.text);
  });
});

describe("a reconnect racing the grace's end (grace 0.3 s)", () => {
  it("either it takes the run over and reads it to its end, or it is REPLAY_EXPIRED and the run was cancelled; never both, never neither", async () => {
    const graced = await startStack({ script: script(), gateway: { reconnectGraceSeconds: 0.3 } });
    try {
      const outcomes: string[] = [];
      for (let i = 0; i < 12; i++) {
        const body = graced.input({ prompt: SHORT });
        const first = await openSse(graced.gateway.url + "/", body);
        await first.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
        const cancelsBefore = graced.upstream.cancelled.length;
        first.abort();
        await new Promise((resolve) => setTimeout(resolve, 240 + i * 10));
        const rest = await readWithReconnects(graced.gateway.url + "/", body, { runId: body.runId, lastEventId: `${body.runId}:0`, maxRequests: 1 });
        const cancelled = await waitFor(() => graced.upstream.cancelled.length > cancelsBefore, 500);
        if (rest.stopped === undefined) {
          const events = rest.records.map((r) => r.event);
          expect(streamProblems(events)).toEqual([]);
          expect(events.at(-1)?.type, `attempt ${i}`).toBe(cancelled ? "RUN_ERROR" : "RUN_FINISHED");
          outcomes.push(cancelled ? "read-cancelled" : "took-over");
        } else {
          expect(rest.stopped, `attempt ${i}`).toEqual({ status: 409, code: "REPLAY_EXPIRED" });
          expect(cancelled, `attempt ${i}: refused, so the run must have been cancelled`).toBe(true);
          outcomes.push("expired");
        }
        expect(await waitFor(() => graced.gateway.runs.activeRunCount === 0, 3_000)).toBe(true);
      }
      expect(outcomes.length).toBe(12);
    } finally {
      await graced.close();
    }
  }, 30_000);
});
