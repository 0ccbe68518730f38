// Replicas that cannot reach a task's kernel, and a Redis that dies under running replicas (issue #17 items 3, 4
// and 6): two gateway processes (the real CLI) on one redis-server and one scripted kernel, plus a third process
// on a kernel of its own. The observer route works from any replica that can reach the task's kernel and says so
// when it cannot; a resume that lands on such a replica is a prompt EXECUTION_LOST (the interrupt kept while the
// replica that parked it still runs); with Redis gone admissions are
// 503 STATE_UNAVAILABLE and a run that needs a durable write fails closed, and all of it works again after Redis
// is back.
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import { streamProblems } from "./helpers/checks.js";
import { allowOnce, cancelCount, dataPartsTo, interruptsOf, postCancel, resumeInput, runErrorOf, type CliGateway } from "./helpers/durable.js";
import { postRaw, readSse, runWithHttpAgent, sessionEventOf, typesOf } from "./helpers/e2e.js";
import { eventually, finishRun, postRun, replicaScript, startReplicas, storeHealth, type Replicas } from "./helpers/replicas.js";
import { isTerminal } from "./helpers/sse.js";

let replicas: Replicas;
/** A kernel only the third replica talks to: it has never heard of the shared kernel's tasks. */
let ownKernel: ScriptedA2AServer;
let elsewhere: CliGateway;

beforeAll(async () => {
  replicas = await startReplicas();
  ownKernel = await startScriptedA2AServer({ script: replicaScript(), sessionRestore: true });
  elsewhere = await replicas.spawn(ownKernel.url);
}, 120_000);

afterAll(async () => {
  await replicas?.close();
  await ownKernel?.close();
});

function subscribe(url: string, executionId: string, body: { threadId: string; runId: string; rosInvocationId: string }): Promise<Response> {
  return fetch(new URL(`extensions/iac-code/v1/executions/${encodeURIComponent(executionId)}/subscribe`, url), {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

/**
 * The shared kernel behind a proxy whose iac-code session-restore route answers "not_found" (the kernel of a replica
 * that cannot restore the session); everything else is passed through.
 */
async function kernelThatCannotRestore(target: string): Promise<{ url: string; restoreCalls: () => number; close(): Promise<void> }> {
  let restoreCalls = 0;
  const server = createServer((req, res) => {
    if (req.method === "POST" && req.url?.endsWith("/iac-code/session/ensure-restored")) {
      restoreCalls++;
      req.resume();
      res.writeHead(404, { "Content-Type": "application/json" }).end(JSON.stringify({ status: "not_found" }));
      return;
    }
    const forward = request(new URL(req.url ?? "/", target), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on("error", () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    restoreCalls: () => restoreCalls,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const rpcTo = (kernel: ScriptedA2AServer, taskId: string) =>
  kernel.requests.filter((r) => (r.params as { message?: { taskId?: string }; id?: string } | undefined)?.message?.taskId === taskId);

describe("the observer route on another replica", () => {
  it("streams a run of A from B (same kernel) to its one terminal event; a replica on another kernel says why it cannot", async () => {
    const { a, b } = replicas;
    // A 10 s run: the observation below starts while it still streams text, however loaded the machine.
    const input = replicas.input({ prompt: "slow count" });
    const run = await postRun(a.url, input);
    await run.live!.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    const executionId = sessionEventOf(run.live!.events)["executionId"] as string;
    const ids = { threadId: input.threadId, runId: input.runId, rosInvocationId: "invocation-1" };

    // While it runs, the third replica reads the same record but its kernel does not know the task: a 404 that
    // says so, before any stream.
    const refused = await subscribe(elsewhere.url, executionId, ids);
    expect(refused.status).toBe(404);
    const envelope = (await refused.json()) as { error: { code: string; message: string } };
    expect(envelope.error.code).toBe("EXECUTION_NOT_FOUND");
    expect(envelope.error.message).toMatch(/another replica/);
    // An execution nobody knows is the plain not-found.
    const unknown = await subscribe(elsewhere.url, "no-such-execution", ids);
    expect(await unknown.json()).toEqual({ error: { code: "EXECUTION_NOT_FOUND", message: "The execution was not found." } });

    // B shares the kernel: the observation follows the run to its end.
    const observed = await subscribe(b.url, executionId, ids);
    expect(observed.status).toBe(200);
    const { events } = readSse(await observed.text());
    expect(streamProblems(events)).toEqual([]);
    expect(events[0]).toMatchObject({ type: "RUN_STARTED", threadId: input.threadId, runId: input.runId });
    expect(events.filter(isTerminal)).toEqual([expect.objectContaining({ type: "RUN_FINISHED", outcome: { type: "success" } })]);
    expect(events.some((e) => e.type === "TEXT_MESSAGE_CONTENT")).toBe(true);
    expect((await finishRun(run)).at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  }, 30_000);
});

/** A deploy parked at its permission on `url`: the input, the interrupt and the parked task. */
async function parkOn(url: string) {
  const input = replicas.input({ prompt: "deploy the stack" });
  const parked = await runWithHttpAgent(url, input);
  const [interrupt] = interruptsOf(parked.events);
  return { input, interrupt: interrupt!, taskId: sessionEventOf(parked.events)["taskId"] as string };
}

describe("an interrupt resumed on a replica whose kernel cannot resume it", () => {
  it("while the replica that parked it runs: EXECUTION_LOST saying where it waits, the interrupt kept; answered there, it completes", async () => {
    const { a, kernel } = replicas;
    const { input, interrupt, taskId } = await parkOn(a.url);

    const started = Date.now();
    const refused = await runWithHttpAgent(elsewhere.url, resumeInput(input, [allowOnce(interrupt.id)]));
    expect(typesOf(refused.events)).toEqual(["RUN_STARTED", "RUN_ERROR"]);
    expect(runErrorOf(refused.events)).toMatchObject({ code: "EXECUTION_LOST", message: expect.stringContaining("another replica") });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(dataPartsTo(kernel, taskId)).toEqual([]);
    expect(rpcTo(ownKernel, taskId).filter((r) => r.method.startsWith("Send"))).toEqual([]);

    const resumed = await runWithHttpAgent(a.url, resumeInput(input, [allowOnce(interrupt.id)]));
    expect(resumed.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(dataPartsTo(kernel, taskId)).toHaveLength(1);
  }, 30_000);

  it("once the replica that parked it is gone: a prompt EXECUTION_LOST, no kernel gets the answer, the thread is usable again", async () => {
    const { kernel } = replicas;
    const parking = await replicas.spawn();
    const { input, interrupt, taskId } = await parkOn(parking.url);
    await parking.kill("SIGKILL");

    const started = Date.now();
    const lost = await runWithHttpAgent(elsewhere.url, resumeInput(input, [allowOnce(interrupt.id)]));
    expect(typesOf(lost.events)).toEqual(["RUN_STARTED", "RUN_ERROR"]);
    // Its kernel first says it cannot restore the session the interrupt waits in.
    expect(runErrorOf(lost.events)).toMatchObject({ code: "EXECUTION_LOST", message: "The iac-code session to resume is unavailable." });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(dataPartsTo(kernel, taskId)).toEqual([]);
    expect(rpcTo(ownKernel, taskId).filter((r) => r.method.startsWith("Send"))).toEqual([]);
    const next = await runWithHttpAgent(elsewhere.url, replicas.input({ threadId: input.threadId, prompt: "hello again" }));
    expect(next.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  }, 30_000);

  it("reaching the task's kernel but not its session (the parking replica gone) is EXECUTION_LOST too, before any answer is sent", async () => {
    const { kernel } = replicas;
    const proxy = await kernelThatCannotRestore(kernel.url);
    try {
      const restoring = await replicas.spawn(proxy.url);
      const parking = await replicas.spawn();
      const { input, interrupt, taskId } = await parkOn(parking.url);
      await parking.kill("SIGKILL");

      const lost = await runWithHttpAgent(restoring.url, resumeInput(input, [allowOnce(interrupt.id)]));
      expect(typesOf(lost.events)).toEqual(["RUN_STARTED", "RUN_ERROR"]);
      expect(runErrorOf(lost.events)).toMatchObject({ code: "EXECUTION_LOST", message: "The iac-code session to resume is unavailable." });
      expect(proxy.restoreCalls()).toBe(1);
      expect(dataPartsTo(kernel, taskId)).toEqual([]);
      await restoring.kill("SIGTERM");
    } finally {
      await proxy.close();
    }
  }, 30_000);
});

describe("Redis killed under running replicas, then restarted (empty)", () => {
  it("admissions are 503 STATE_UNAVAILABLE, a run that must write fails closed, then everything works again", async () => {
    const { a, b, kernel, redis } = replicas;
    expect(await storeHealth(a.url)).toEqual({ kind: "redis", status: "ready" });

    // "pause" makes the kernel wait before it asks permission: Redis dies between the session and the interrupt.
    const input = replicas.input({ prompt: "deploy, with a pause before asking" });
    const run = await postRun(a.url, input);
    await run.live!.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
    const taskId = sessionEventOf(run.live!.events)["taskId"] as string;
    await redis.kill();

    for (const url of [a.url, b.url]) {
      expect(await postRaw(url, replicas.input())).toMatchObject({ status: 503, json: { error: { code: "STATE_UNAVAILABLE" } } });
    }
    const events = await finishRun(run);
    expect(runErrorOf(events).code).toBe("STATE_PERSISTENCE_FAILED");
    // The interrupt could not be stored, so it was never announced, and the kernel's task was stopped.
    expect(events.some((e) => e.type === "RUN_FINISHED")).toBe(false);
    expect(cancelCount(kernel, taskId)).toBe(1);
    for (const url of [a.url, b.url]) expect(await eventually(async () => (await storeHealth(url)).status === "down", 5_000)).toBe(true);

    await redis.restart();
    for (const url of [a.url, b.url]) expect(await eventually(async () => (await storeHealth(url)).status === "ready", 10_000)).toBe(true);
    // Admission again, on the same thread (its state went with Redis) and on a new one.
    const again = await runWithHttpAgent(b.url, replicas.input({ threadId: input.threadId }));
    expect(again.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    // The relay subscribed again: a cancel sent to B still stops a run streaming from A.
    const slowInput = replicas.input({ prompt: "slow count" });
    const slow = await postRun(a.url, slowInput);
    await slow.live!.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    const executionId = sessionEventOf(slow.live!.events)["executionId"] as string;
    const cancelled = await postCancel(b.url, executionId, { threadId: slowInput.threadId, rosInvocationId: "invocation-1" });
    expect(cancelled).toMatchObject({ status: 200, json: { status: "cancelled" } });
    expect(runErrorOf(await finishRun(slow)).code).toBe("CANCELLED");

    const metrics = await (await fetch(new URL("metrics", a.url))).text();
    expect(metrics).toMatch(/^agui_gateway_state_store_errors_total\{op="[a-z_]+"\} [1-9]/m);
    expect(metrics).toMatch(/^agui_gateway_state_store_latency_seconds_count\{op="lease_acquire"\} [1-9]/m);
  }, 40_000);
});
