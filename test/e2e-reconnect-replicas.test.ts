// A reconnect that lands on the other replica: two gateway processes (the real CLI) on one real redis-server, and a
// proxy in front that sends each new connection to the next replica and cuts connections at random points. The
// client reconnects with Last-Event-ID and gets exactly the run's events, from whichever replica it reaches.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientVerifierProblems } from "./helpers/checks.js";
import { startCuttingProxy, type CuttingProxy } from "./helpers/cutting-proxy.js";
import { cancelCount } from "./helpers/durable.js";
import { randomUUID } from "node:crypto";
import { expectValidRun, readSse, sessionEventOf, typesOf } from "./helpers/e2e.js";
import { readWithReconnects, wholeRun } from "./helpers/reconnect.js";
import { postRun, startReplicas, type Replicas } from "./helpers/replicas.js";

let replicas: Replicas;
let proxy: CuttingProxy;
let next = 0;
let cutAt: () => number | undefined = () => undefined;

beforeAll(async () => {
  // A grace shorter than the brief slow turn: a run waits past it only because its client reads on the other replica.
  replicas = await startReplicas({ IAC_CODE_AGUI_RECONNECT_GRACE: "0.5" });
  const targets = [replicas.a.url, replicas.b.url];
  proxy = await startCuttingProxy(() => targets[next++ % 2]!, () => cutAt());
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await replicas?.close();
});

describe("reconnects that land on the other replica (Redis)", () => {
  it("deliver exactly the run's events, ids and bytes, over 30 cuts", async () => {
    let seed = 7;
    cutAt = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      // Up to past the largest record (a RUN_FINISHED with its interrupts), or a reconnect could never get it whole.
      return 150 + (seed % 5000);
    };
    const kinds = [() => replicas.input({ prompt: "brief slow count" }), () => replicas.input({ prompt: "deploy the stack" })];
    for (let run = 0; proxy.cuts < 30 && run < 40; run++) {
      const body = kinds[run % 2]!();
      const delivered = await readWithReconnects(proxy.url + "/", body, { runId: body.runId });
      expect(delivered.stopped).toBeUndefined();
      const ids = delivered.records.map((r) => r.id);
      expect(ids).toEqual(ids.map((_, i) => `${body.runId}:${i + 1}`));
      const events = delivered.records.map((r) => r.event);
      expectValidRun(events);
      expect(await clientVerifierProblems(events)).toEqual([]);
      const text = delivered.records.map((r) => r.text).join("");
      // Both replicas answer the whole run the same, byte for byte: the one that ran it, and the other from Redis.
      expect(await wholeRun(replicas.a.url, body)).toBe(text);
      expect(await wholeRun(replicas.b.url, body)).toBe(text);
    }
    expect(proxy.cuts).toBeGreaterThanOrEqual(30);
  });

  it("a run whose client reads it on the other replica is not cancelled when its own replica's grace ends", async () => {
    // Cut on replica A early in the run; the reconnect goes to replica B and reads to the end, well past A's grace.
    const toA = await startCuttingProxy(replicas.a.url, () => 1_200);
    try {
      const body = replicas.input({ prompt: "brief slow count" });
      const cut = await readWithReconnects(toA.url + "/", body, { runId: body.runId, maxRequests: 1 });
      expect(cut.stopped).toBe("gave up");
      const rest = await readWithReconnects(replicas.b.url + "/", body, { runId: body.runId, lastEventId: cut.records.at(-1)?.id ?? `${body.runId}:0` });
      expect(rest.stopped).toBeUndefined();
      const events = [...cut.records, ...rest.records].map((r) => r.event);
      expectValidRun(events);
      expect(typesOf(events).at(-1)).toBe("RUN_FINISHED");
      const { taskId } = sessionEventOf(events) as { taskId: string };
      expect(cancelCount(replicas.kernel, taskId)).toBe(0);
    } finally {
      await toA.close();
    }
  });

  it("a connect on the other replica brings the conversation and the live run from the shared store", async () => {
    const input = replicas.input({ prompt: "brief slow count" });
    const posted = await postRun(replicas.a.url, input);
    expect(posted.status).toBe(200);
    await posted.live!.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    const reply = await fetch(new URL("/connect", replicas.b.url), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ ...input, runId: randomUUID() }),
    });
    const events = readSse(await reply.text()).events;
    expectValidRun(events);
    expect(await clientVerifierProblems(events)).toEqual([]);
    const original = await posted.live!.rest();
    expect(events[1]).toMatchObject({ type: "MESSAGES_SNAPSHOT", messages: [{ id: input.messages[0]!.id, role: "user" }] });
    expect(events.slice(2)).toEqual(original.slice(1).map((e) => ("runId" in e ? { ...e, runId: events[0]!["runId"] } : e)));
  });
});
