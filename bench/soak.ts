// `npm run soak`: the large variants of the fault tests, outside CI. 100,000 hostile requests and 5,000 hostile
// A2A streams, 1,000 SIGKILL crash points, and a load of 5,000 runs × 1,000 events plus 1,000 POSTs on one thread.
// Bounded: every section has a fixed count, and SOAK_MAX_MINUTES (default 120) stops the remaining work early.
// Prints its figures and exits 1 if anything was lost or broke.
//   npx tsx bench/soak.ts [--fuzz 100000] [--a2a 5000] [--crash 1000] [--runs 5000]
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { startRawA2AServer, startScriptedA2AServer, createDemoScript } from "../src/demo/index.js";
import { startGateway } from "../src/gateway.js";
import {
  CRASH_PHASES,
  a2aCaseArbitrary,
  a2aCaseProblems,
  a2aFuzzHandler,
  inputFor,
  mapPool,
  openFdCount,
  postJson,
  silentLogger,
  requestCaseArbitrary,
  requestCaseProblems,
  runCrashPoint,
  sequenceProblems,
  sseEvents,
  startCrashUpstream,
  streamProblems,
  type A2ACase,
  type CrashPoint,
} from "../test/helpers/faults.js";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = new Map<string, number>();
for (let i = 2; i < process.argv.length - 1; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), Number(process.argv[i + 1]));
const FUZZ = args.get("fuzz") ?? 100_000;
const A2A = args.get("a2a") ?? 5_000;
const CRASH = args.get("crash") ?? 1_000;
const RUNS = args.get("runs") ?? 5_000;
const EVENTS = 1_000;
const deadline = Date.now() + Number(process.env["SOAK_MAX_MINUTES"] ?? 120) * 60_000;
const TOKEN = "soak-token";

const figures: Record<string, number | string> = {};
const problems: string[] = [];
const note = (section: string, found: string[]) => {
  for (const p of found) if (problems.length < 50) problems.push(`${section}: ${p}`);
  figures[`${section} problems`] = (Number(figures[`${section} problems`] ?? 0) || 0) + found.length;
};
const timeLeft = () => Date.now() < deadline;

/** Runs `total` items in batches so the deadline is checked between them; returns how many ran. */
async function batched<T>(total: number, batch: number, make: (from: number, count: number) => T[], run: (items: T[], from: number) => Promise<void>): Promise<number> {
  let done = 0;
  while (done < total && timeLeft()) {
    const count = Math.min(batch, total - done);
    await run(make(done, count), done);
    done += count;
  }
  return done;
}

async function fuzzSection(root: string, workspace: string): Promise<void> {
  const upstream = await startScriptedA2AServer({ script: createDemoScript({ frameDelayMs: 0 }) });
  const gateway = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: upstream.url, stateDir: path.join(root, "fuzz-state"), allowedRoots: [root], authToken: TOKEN, logger: silentLogger, validateEvents: true });
  const arbitrary = requestCaseArbitrary({ root, workspace, token: TOKEN });
  const started = Date.now();
  figures["fuzz cases"] = await batched(FUZZ, 2_000, (from, count) => fc.sample(arbitrary, { numRuns: count, seed: 1_000 + from }), async (cases) => {
    note("fuzz", (await mapPool(cases, 8, (c) => requestCaseProblems(gateway.url, c))).flat());
  });
  figures["fuzz seconds"] = Math.round((Date.now() - started) / 1000);
  const health = await fetch(new URL("/health", gateway.url));
  if (health.status !== 200) note("fuzz", ["unhealthy afterwards"]);
  figures["fuzz self-check violations"] = (await gateway.metrics.validationViolations.get()).values.reduce((n, v) => n + v.value, 0);
  await gateway.close();
  await upstream.close();

  const cases = new Map<number, A2ACase>();
  const raw = await startRawA2AServer({ handle: a2aFuzzHandler(cases) });
  const rawGateway = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: raw.url, allowedRoots: [root], logger: silentLogger, validateEvents: true });
  figures["a2a fuzz cases"] = await batched(A2A, 500, (from, count) => fc.sample(a2aCaseArbitrary({ hugeBytes: 1024 * 1024 }), { numRuns: count, seed: 2_000 + from }), async (batch, from) => {
    cases.clear();
    batch.forEach((c, i) => cases.set(from + i, c));
    note("a2a fuzz", (await mapPool(batch, 8, (c, i) => a2aCaseProblems(rawGateway.url, workspace, from + i, c))).flat());
  });
  await rawGateway.close();
  await raw.close();
}

async function crashSection(root: string): Promise<void> {
  const build = spawnSync(process.execPath, [path.join(REPO, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"], { cwd: REPO, encoding: "utf8" });
  if (build.status !== 0) console.warn(`tsc reported errors (dist may still be usable):\n${build.stdout.slice(0, 2000)}`);
  const upstream = await startCrashUpstream();
  const points: CrashPoint[] = Array.from({ length: CRASH }, (_, i) => ({ save: (Math.floor(i / CRASH_PHASES.length) % 11) + 1, phase: CRASH_PHASES[i % CRASH_PHASES.length]! }));
  let crashed = 0;
  let ran = 0;
  await batched(points.length, 20, (from, count) => points.slice(from, from + count), async (batch) => {
    const outcomes = await mapPool(batch, 2, (p) => runCrashPoint(upstream, root, p));
    ran += outcomes.length;
    crashed += outcomes.filter((o) => o.crashed).length;
    note("crash", outcomes.flatMap((o) => o.problems.map((p) => `${o.point.save}:${o.point.phase} (${o.stage}) ${p}`)));
  });
  figures["crash points"] = ran;
  figures["crash points that killed the gateway"] = crashed;
  figures["answers applied twice"] = [...upstream.applied.values()].filter((n) => n > 1).length;
  await upstream.close();
}

async function loadSection(root: string, workspace: string): Promise<void> {
  const upstream = await startRawA2AServer({
    handle: (ex, res) => {
      if (ex.method !== "SendStreamingMessage") return res.json(200, { jsonrpc: "2.0", id: ex.id, result: { id: ex.params?.id, status: { state: "TASK_STATE_CANCELED" } } });
      const taskId = `task-${ex.params.message.messageId}`;
      const frame = (status: unknown) => `data: ${JSON.stringify({ jsonrpc: "2.0", id: ex.id, result: { statusUpdate: { taskId, contextId: ex.params.message.contextId, status } } })}\n\n`;
      const parts = [frame({ state: "TASK_STATE_WORKING" })];
      for (let i = 0; i < EVENTS; i++) parts.push(frame({ state: "TASK_STATE_WORKING", message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text: `${i};` }] } }));
      parts.push(frame({ state: "TASK_STATE_COMPLETED" }));
      res.sseStart();
      res.sseRaw(parts.join(""));
      res.end();
    },
  });
  const gateway = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: upstream.url, allowedRoots: [root], logger: silentLogger });
  const fds = openFdCount();
  const heap = process.memoryUsage().heapUsed;
  const started = Date.now();
  let lost = 0;
  figures["load runs"] = await batched(RUNS, 500, (from, count) => Array.from({ length: count }, (_, i) => from + i), async (batch) => {
    const found = (await mapPool(batch, 100, async (i) => {
      const reply = await postJson(gateway.url, inputFor(workspace, { prompt: `run ${i}` }));
      const { events, problems: framing } = sseEvents(reply.text);
      const seq = sequenceProblems(events, EVENTS);
      if (seq.length > 0) lost++;
      return [...framing, ...seq, ...(i % 100 === 0 ? streamProblems(events) : [])].map((p) => `run ${i}: ${p}`);
    })).flat();
    note("load", found);
  });
  figures["load events/s"] = Math.round((Number(figures["load runs"]) * EVENTS) / ((Date.now() - started) / 1000));
  figures["load runs with lost or reordered events"] = lost;
  figures["load fd growth"] = openFdCount() - fds;
  figures["load heap growth MiB"] = Math.round((process.memoryUsage().heapUsed - heap) / 1024 / 1024);
  await gateway.close();
  await upstream.close();

  // 1,000 simultaneous POSTs on one thread: exactly one admitted.
  const held = await startScriptedA2AServer({ script: () => [{ statusUpdate: { status: { state: "TASK_STATE_WORKING" } } }, { delayMs: 5_000 }, { statusUpdate: { status: { state: "TASK_STATE_COMPLETED" } } }] });
  const busy = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: held.url, allowedRoots: [root], logger: silentLogger });
  const replies = await Promise.all(Array.from({ length: 1_000 }, () => postJson(busy.url, { ...inputFor(workspace), threadId: "soak-busy" }).catch(() => undefined)));
  figures["busy posts admitted"] = replies.filter((r) => r?.status === 200).length;
  figures["busy posts THREAD_BUSY"] = replies.filter((r) => r?.json?.error?.code === "THREAD_BUSY").length;
  if (figures["busy posts admitted"] !== 1 || figures["busy posts THREAD_BUSY"] !== 999) note("busy", [`admitted ${figures["busy posts admitted"]}, busy ${figures["busy posts THREAD_BUSY"]}`]);
  await busy.close();
  await held.close();
}

const root = await mkdtemp(path.join(tmpdir(), "agui-soak-"));
const workspace = path.join(root, "ws");
await mkdir(workspace);
const began = Date.now();
try {
  await fuzzSection(root, workspace);
  if (timeLeft()) await crashSection(root);
  if (timeLeft()) await loadSection(root, workspace);
} finally {
  await rm(root, { recursive: true, force: true });
}
figures["minutes"] = Math.round((Date.now() - began) / 6_000) / 10;
figures["stopped by the deadline"] = timeLeft() ? "no" : "yes";
const losses = Number(figures["load runs with lost or reordered events"] ?? 0) + Number(figures["answers applied twice"] ?? 0);
figures["losses"] = losses;
console.log(JSON.stringify(figures, null, 2));
for (const p of problems) console.log(`problem: ${p}`);
process.exit(problems.length === 0 && losses === 0 ? 0 : 1);
