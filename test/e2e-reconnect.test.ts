// Runs outlive the connection: every record carries `id: <runId>:<seq>`, and a client that lost its stream sends
// the same request again with Last-Event-ID and gets exactly the rest — through a proxy that cuts the TCP
// connection at random points, at the demo's pace and at full speed, with --reconnect-grace on and off.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoScript } from "../src/demo/index.js";
import { clientVerifierProblems } from "./helpers/checks.js";
import { startCuttingProxy, type CuttingProxy } from "./helpers/cutting-proxy.js";
import { expectValidRun, postRaw, readSse, scriptByPrompt, slowTurn, startStack, typesOf, waitFor, type Stack } from "./helpers/e2e.js";
import { postCancel } from "./helpers/durable.js";
import { readWithReconnects, wholeRun, type Delivered } from "./helpers/reconnect.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { seeded } from "./helpers/seeded.js";

const LONG_TEXT = "write a long text";
const SLOW_TEXT = "write a slow text";
const PACED_DEMO = createDemoScript({ frameDelayMs: 3 });

function script() {
  return scriptByPrompt({
    [LONG_TEXT]: () => slowTurn("session-long", 150, 2),
    [SLOW_TEXT]: () => slowTurn("session-slow", 200, 25),
    // The demo agent at a pace where a cut lands while the run is still live.
    "deploy the stack": (turn) => PACED_DEMO(turn) as never,
  });
}

/** What every recovered run must be: ids 1..n in order, once each, a valid run, the bytes of the run's own log. */
async function expectWhole(stack: Stack<ScriptedA2AServer>, body: { runId: string }, delivered: Delivered): Promise<void> {
  expect(delivered.stopped).toBeUndefined();
  const ids = delivered.records.map((r) => r.id);
  expect(ids).toEqual(ids.map((_, i) => `${body.runId}:${i + 1}`));
  const events = delivered.records.map((r) => r.event);
  expectValidRun(events);
  expect(await clientVerifierProblems(events)).toEqual([]);
  // Heartbeats aside, the records delivered across the cuts are the run's records, byte for byte.
  expect(delivered.records.map((r) => r.text).join("")).toBe(await wholeRun(stack.gateway.url, body));
}

describe("event ids and Last-Event-ID", () => {
  let stack: Stack<ScriptedA2AServer>;
  beforeAll(async () => {
    stack = await startStack({ script: script() });
  });
  afterAll(() => stack.close());

  it("every record of a run carries <runId>:<seq>, seq from 1 without gaps", async () => {
    const body = stack.input({ prompt: "deploy the stack" });
    const reply = await postRaw(stack.gateway.url, body);
    const { records } = readSse(reply.text);
    const ids = records.flatMap((r) => (r.kind === "event" ? [r.id] : []));
    expect(ids.length).toBeGreaterThan(5);
    expect(ids).toEqual(ids.map((_, i) => `${body.runId}:${i + 1}`));
  });

  it("the same request with Last-Event-ID gets the records after it, byte for byte; without it DUPLICATE_RUN_ID", async () => {
    const body = stack.input();
    const first = await postRaw(stack.gateway.url, body);
    const records = first.text.split(/(?<=\n\n)/);
    expect(records.length).toBeGreaterThan(6);
    const cursor = records.length - 5;
    const again = await fetch(stack.gateway.url + "/", {
      method: "POST",
      headers: { "Content-Type": "application/json", "Last-Event-ID": `${body.runId}:${cursor}` },
      body: JSON.stringify(body),
    });
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(records.slice(cursor).join(""));
    expect((await postRaw(stack.gateway.url, body)).json.error.code).toBe("DUPLICATE_RUN_ID");
  });

  it("refuses cursors it cannot answer from, each with a clear code, and the thread goes on", async () => {
    const body = stack.input();
    const first = await postRaw(stack.gateway.url, body);
    const count = readSse(first.text).records.length;
    const ask = async (lastEventId: string, request: unknown = body) => {
      const reply = await fetch(stack.gateway.url + "/", {
        method: "POST",
        headers: { "Content-Type": "application/json", "Last-Event-ID": lastEventId },
        body: JSON.stringify(request),
      });
      const json = (await reply.json()) as { error: { code: string; message: string } };
      return { status: reply.status, code: json.error.code };
    };
    for (const malformed of ["abc", `${body.runId}:`, `${body.runId}:-1`, `${body.runId}:01`, `${body.runId}:1.5`, ":3"]) {
      expect(await ask(malformed), malformed).toEqual({ status: 400, code: "INVALID_LAST_EVENT_ID" });
    }
    expect(await ask("another-run:3")).toEqual({ status: 400, code: "INVALID_LAST_EVENT_ID" });
    expect(await ask(`${body.runId}:${count + 5}`)).toEqual({ status: 400, code: "INVALID_LAST_EVENT_ID" });
    // A gateway that keeps 20 events of a run: the first ones of a longer run are gone.
    const small = await startStack({ script: script(), gateway: { replay: { events: 20 } } });
    try {
      const long = small.input({ prompt: LONG_TEXT });
      expect(readSse((await postRaw(small.gateway.url, long)).text).records.length).toBeGreaterThan(100);
      const reply = await fetch(small.gateway.url + "/", { method: "POST", headers: { "Content-Type": "application/json", "Last-Event-ID": `${long.runId}:1` }, body: JSON.stringify(long) });
      expect({ status: reply.status, code: ((await reply.json()) as { error: { code: string } }).error.code }).toEqual({ status: 409, code: "REPLAY_EXPIRED" });
    } finally {
      await small.close();
    }
    // The same run id with another body is not a reconnect.
    expect(await ask(`${body.runId}:${count - 1}`, { ...body, messages: [{ id: "other", role: "user", content: "other" }] })).toEqual({
      status: 409,
      code: "RUN_ID_CONFLICT",
    });
    // A run this thread never had.
    const stranger = stack.input({ threadId: body.threadId });
    expect(await ask(`${stranger.runId}:1`, stranger)).toEqual({ status: 400, code: "INVALID_LAST_EVENT_ID" });
    // Nothing was changed: the thread takes its next turn.
    const next = await postRaw(stack.gateway.url, stack.input({ threadId: body.threadId }));
    expect(readSse(next.text).events.at(-1)?.type).toBe("RUN_FINISHED");
  });
});

describe("a proxy that cuts the connection at random points (--reconnect-grace 5)", () => {
  let stack: Stack<ScriptedA2AServer>;
  let proxy: CuttingProxy;
  const seed = Number(process.env["AGUI_CUT_SEED"] ?? Date.now() % 100_000);
  const random = seeded(seed);
  beforeAll(async () => {
    stack = await startStack({ script: script(), gateway: { reconnectGraceSeconds: 5 } });
    // Response headers are ~200 bytes: some cuts land in them, most inside the records.
    proxy = await startCuttingProxy(stack.gateway.url, () => 80 + Math.floor(random() * 2500));
  });
  afterAll(async () => {
    await proxy.close();
    await stack.close();
  });

  it(`recovers exactly the run's events over 100 cuts of deploy, pipeline and long-text runs (seed ${seed})`, async () => {
    const kinds = [
      () => stack.input({ prompt: "deploy the stack" }),
      () => stack.input({ prompt: "find me the cheapest option", iacCode: { runMode: "pipeline" } }),
      () => stack.input({ prompt: LONG_TEXT }),
      () => stack.input({ prompt: "Create a VPC template" }),
    ];
    const uncut = await Promise.all(kinds.map(async (kind) => typesOf(readSse((await postRaw(stack.gateway.url, kind())).text).events)));
    for (let run = 0; proxy.cuts < 100 && run < 200; run++) {
      const which = run % kinds.length;
      const body = kinds[which]!();
      const delivered = await readWithReconnects(proxy.url + "/", body, { runId: body.runId });
      await expectWhole(stack, body, delivered);
      expect(typesOf(delivered.records.map((r) => r.event))).toEqual(uncut[which]);
    }
    expect(proxy.cuts).toBeGreaterThanOrEqual(100);
  });
});

describe("--reconnect-grace", () => {
  it("0 (the default): a cut run is cancelled at once and a reconnect is told to connect instead", async () => {
    const stack = await startStack({ script: script() });
    const proxy = await startCuttingProxy(stack.gateway.url, () => 1_500);
    try {
      const body = stack.input({ prompt: LONG_TEXT });
      const delivered = await readWithReconnects(proxy.url + "/", body, { runId: body.runId });
      expect(delivered.stopped).toEqual({ status: 409, code: "REPLAY_EXPIRED" });
      expect(await waitFor(() => stack.upstream.cancelled.length === 1)).toBe(true);
      expect(await waitFor(() => stack.gateway.runs.activeRunCount === 0)).toBe(true);
    } finally {
      await proxy.close();
      await stack.close();
    }
  });

  it("on: a detached run stays the thread's run: THREAD_BUSY for a new turn, and the cancel route ends it for the client that comes back", async () => {
    const stack = await startStack({ script: script(), gateway: { reconnectGraceSeconds: 30 } });
    const proxy = await startCuttingProxy(stack.gateway.url, () => 1_500);
    try {
      const body = stack.input({ prompt: SLOW_TEXT });
      const cut = await readWithReconnects(proxy.url + "/", body, { runId: body.runId, maxRequests: 1 });
      expect(cut.stopped).toBe("gave up");
      const session = cut.records.map((r) => r.event).find((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
      const { executionId } = session!["value"] as { executionId: string };
      expect((await postRaw(stack.gateway.url, stack.input({ threadId: body.threadId }))).json.error.code).toBe("THREAD_BUSY");
      expect(stack.upstream.cancelled).toEqual([]);
      const cancel = await postCancel(stack.gateway.url, executionId, { threadId: body.threadId, rosInvocationId: "invocation-1" });
      expect(cancel.json).toEqual({ executionId, status: "cancelled" });
      // The client comes back and reads the rest: the run as it ended, cancelled.
      const rest = await readWithReconnects(stack.gateway.url + "/", body, { runId: body.runId, lastEventId: cut.records.at(-1)!.id! });
      expect(rest.stopped).toBeUndefined();
      const events = [...cut.records, ...rest.records].map((r) => r.event);
      expectValidRun(events);
      expect(events.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "CANCELLED" });
    } finally {
      await proxy.close();
      await stack.close();
    }
  });

  it("on: a run nobody rejoins is cancelled when the grace ends", async () => {
    const stack = await startStack({ script: script(), gateway: { reconnectGraceSeconds: 1 } });
    const proxy = await startCuttingProxy(stack.gateway.url, () => 1_500);
    try {
      const body = stack.input({ prompt: SLOW_TEXT });
      const started = Date.now();
      const cut = await readWithReconnects(proxy.url + "/", body, { runId: body.runId, maxRequests: 1 });
      expect(cut.stopped).toBe("gave up");
      expect(stack.upstream.cancelled).toEqual([]);
      expect(await waitFor(() => stack.upstream.cancelled.length === 1, 5_000)).toBe(true);
      expect(Date.now() - started).toBeGreaterThan(900);
      expect(await waitFor(() => stack.gateway.runs.activeRunCount === 0)).toBe(true);
      const late = await readWithReconnects(stack.gateway.url + "/", body, { runId: body.runId, lastEventId: cut.records.at(-1)!.id! });
      expect(late.stopped).toEqual({ status: 409, code: "REPLAY_EXPIRED" });
    } finally {
      await proxy.close();
      await stack.close();
    }
  });
});
