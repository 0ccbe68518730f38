// `npm run bench` (full) / `npm run bench -- --quick` (under 5 minutes on 2 cores): every figure is a ratio
// or a distribution measured in this run against a baseline measured in this run. Servers run in child
// processes (upstream, relays, gateway) and the measuring client runs here. Writes bench/results.json.
// Flags: --quick, --profile (cpu profile of the throughput and many-streams gateways, top self-time functions printed),
// --only=key,key (run some scenarios: throughput,latency,admission,python,state,pipeline,slow,idle,tracing,replay,redis-replay,many),
// --many-counts=N,N (the concurrencies of the many-streams scenario, `many`; default 1000,5000),
// --idle-count=N (fewer idle streams, for a quick look), --gateway-dist=DIR (bench a compiled tree other than dist/, e.g. a patched copy, for an A/B comparison),
// --compare-dist=DIR (throughput also times the gateway built in DIR, e.g. an older commit's, in the same rotation: compareRatio).
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { ROOT, resolveGatewayBuild } from "./lib/build.js";
import { killAllChildren, spawnChild } from "./lib/children.js";
import type { BenchContext } from "./lib/context.js";
import { hotSpots } from "./lib/profile.js";
import { round } from "./lib/stats.js";
import { startGatewaySystem, startRelaySystem, type System } from "./lib/systems.js";
import { admission, admissionCpuPerRun, admissionFileVsRedis } from "./scenarios/admission.js";
import { IDLE_TARGET, idleStreams } from "./scenarios/idle.js";
import { latency } from "./scenarios/latency.js";
import { manyStreams, manyStreamsFits } from "./scenarios/many-streams.js";
import { pipeline } from "./scenarios/pipeline.js";
import { pythonReference } from "./scenarios/python-ref.js";
import { slowReader } from "./scenarios/slow-reader.js";
import { reconnectLocal, redisReconnect, redisRun, replayCost, replayMemory } from "./scenarios/replay.js";
import { stateWrite, stateWriteRedis } from "./scenarios/state-write.js";
import { startRedis } from "../test/helpers/redis.js";
import { throughput } from "./scenarios/throughput.js";
import { startDiscardCollector, tracingCost } from "./scenarios/tracing.js";

const argv = process.argv.slice(2);
const quick = argv.includes("--quick");
const profile = argv.includes("--profile");
const only = argv.find((a) => a.startsWith("--only="))?.slice(7).split(",");
const gatewayDist = argv.find((a) => a.startsWith("--gateway-dist="))?.slice(15);
const compareDist = argv.find((a) => a.startsWith("--compare-dist="))?.slice(15);
const idleCount = Number(argv.find((a) => a.startsWith("--idle-count="))?.slice(13) ?? IDLE_TARGET);
const manyCounts = (argv.find((a) => a.startsWith("--many-counts="))?.slice(14) ?? "1000,5000").split(",").map(Number);
const wants = (name: string) => !only || only.includes(name);

const MANY_TARGET = "ratio ≥ 0.9, p99AddedMs ≤ 5, fairness ≥ 0.5";
const TARGETS = {
  floorRatio: "≥ 1.0",
  relayRatio: "reported",
  p99AddedLatencyMs: "≤ 2",
  idleStreams: `count ≥ ${IDLE_TARGET}, rssMB ≤ 450, liveKBPerStream ≤ 25`,
  pipelineEventsPerSec: "≥ 2,000,000",
  slowReader: "bounded: true",
  pythonReferenceRatio: "≥ 15",
  stateWriteMedianMs: "reported",
  stateWriteRedisMedianMs: "reported",
  admissionMedianMs: "reported",
  admissionCpuMsPerRun: "reported",
  admissionRedisMedianMs: "≤ admissionMedianMs + 2",
  compareRatio: "reported (--compare-dist)",
  tracingRatio: "reported (runs/s, tracing on ÷ off)",
  replayCostRatio: "≥ 0.95 (events/s, replay ÷ --replay-events 1)",
  replayMemoryPerRunKB: "reported",
  reconnectFirstEventMs: "reported (p50, p99)",
  redisRunRatio: "reported (events/s, Redis ÷ file store)",
  redisReconnectMs: "reported (p50, p99, on another replica)",
  manyStreams: MANY_TARGET,
  manyStreams5k: MANY_TARGET,
} as const;
type Key = keyof typeof TARGETS;

function passes(key: Key, value: unknown): boolean | undefined {
  // A key that is only reported (compareRatio without --compare-dist) has no verdict, measured or not.
  if (value === undefined) return TARGETS[key].startsWith("reported") ? undefined : false;
  switch (key) {
    case "floorRatio":
      return (value as number) >= 1.0;
    case "p99AddedLatencyMs":
      return (value as number) <= 2;
    case "idleStreams": {
      const v = value as { count: number; rssMB: number; liveKBPerStream: number | null };
      return v.count >= IDLE_TARGET && v.rssMB <= 450 && v.liveKBPerStream !== null && v.liveKBPerStream <= 25;
    }
    case "pipelineEventsPerSec":
      return (value as number) >= 2_000_000;
    case "slowReader":
      return (value as { bounded: boolean }).bounded;
    case "pythonReferenceRatio":
      return (value as number) >= 15;
    case "replayCostRatio":
      return (value as number) >= 0.95;
    case "manyStreams":
    case "manyStreams5k": {
      const v = value as { ratio: number; p99AddedMs: number; fairness: number };
      return v.ratio >= 0.9 && v.p99AddedMs <= 5 && v.fairness >= 0.5;
    }
    case "admissionRedisMedianMs":
      return typeof results.admissionMedianMs === "number" && (value as number) <= results.admissionMedianMs + 2;
    default:
      return undefined;
  }
}

const log = (line: string) => console.log(line);
const results: Partial<Record<Key, unknown>> = {};
const details: Record<string, unknown> = {};
const started = Date.now();

async function scenario(name: string, body: () => Promise<void>): Promise<void> {
  const at = Date.now();
  log(`▶ ${name}`);
  try {
    await body();
  } catch (error) {
    details[name] = { ...(details[name] as object | undefined), error: String(error instanceof Error ? error.message : error) };
    log(`  ✗ ${name} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  log(`  (${((Date.now() - at) / 1000).toFixed(1)} s)`);
}

async function main(): Promise<void> {
  log(`agui-gateway bench (${quick ? "quick" : "full"}), node ${process.version}, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  details.loadAverage = { start: loadavg().map((l) => round(l, 2)) };
  const build = resolveGatewayBuild(log, gatewayDist);
  log(`gateway build: ${build.note}`);
  const root = await mkdtemp(path.join(tmpdir(), "agui-bench-"));
  const workspace = path.join(root, "ws");
  await mkdir(workspace);
  const profileDir = path.join(tmpdir(), "agui-bench-profiles");
  const upstream = await spawnChild<{ url: string; port: number }>("upstream", "upstream.ts");
  let scratchCount = 0;
  const ctx: BenchContext = {
    quick,
    profile,
    build,
    upstream,
    root,
    workspace,
    scratch: async (name) => {
      const dir = path.join(root, "scratch", `${name}-${++scratchCount}`);
      await mkdir(dir, { recursive: true });
      return dir;
    },
    log,
  };
  // The Redis figures need a redis-server on PATH (`.ci/run` and the test setup install Debian's).
  const redis = wants("admission") || wants("state") || wants("redis-replay") ? await startRedis().catch((error: unknown) => {
    log(`redis-server unavailable, Redis figures omitted: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }) : undefined;
  const running: System[] = [];
  const stopAll = async () => {
    await Promise.all(running.splice(0).map((s) => s.stop().catch(() => undefined)));
  };
  try {
    // First: it runs in this process, whose heap the later scenarios' clients and buffers fill.
    if (wants("pipeline")) {
      await scenario("pipeline", async () => {
        const r = await pipeline(ctx);
        results.pipelineEventsPerSec = r.pipelineEventsPerSec;
        details.pipeline = r.detail;
      });
    }
    if (wants("throughput") || wants("latency") || wants("admission") || wants("python")) {
      const floor = await startRelaySystem(ctx, "floor");
      running.push(floor);
      const raw = await startRelaySystem(ctx, "raw");
      running.push(raw);
      if (profile) await mkdir(profileDir, { recursive: true });
      const gateway = await startGatewaySystem(ctx, "gateway", {
        stateDir: await ctx.scratch("gateway-state"),
        ...(profile && { execArgv: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] }),
      });
      running.push(gateway);
      if (wants("throughput")) {
        await scenario("throughput", async () => {
          let compare: System | undefined;
          if (compareDist !== undefined) {
            const other = resolveGatewayBuild(log, compareDist);
            log(`  compared with: ${other.note}`);
            compare = await startGatewaySystem(ctx, "gateway (compare)", { stateDir: await ctx.scratch("compare-state"), module: other.gateway });
            running.push(compare);
          }
          const r = await throughput(ctx, { floor, raw, gateway, ...(compare && { compare }) });
          results.floorRatio = r.floorRatio;
          results.relayRatio = r.relayRatio;
          if (r.compareRatio !== undefined) results.compareRatio = r.compareRatio;
          details.throughput = r.detail;
        });
      }
      if (wants("latency")) {
        await scenario("latency", async () => {
          const r = await latency(ctx, { raw, gateway });
          results.p99AddedLatencyMs = r.p99AddedLatencyMs;
          details.latency = r.detail;
        });
      }
      if (wants("admission")) {
        await scenario("admission", async () => {
          const perRun = await admissionCpuPerRun(gateway);
          results.admissionCpuMsPerRun = perRun.cpuMsPerRun;
          details.admissionPerRun = perRun;
          if (!redis) {
            const r = await admission(ctx, gateway);
            results.admissionMedianMs = r.admissionMedianMs;
            details.admission = r.detail;
            return;
          }
          const onRedis = await startGatewaySystem(ctx, "gateway (Redis state)", { stateStore: redis.url });
          running.push(onRedis);
          const r = await admissionFileVsRedis(ctx, gateway, onRedis);
          results.admissionMedianMs = r.admissionMedianMs;
          results.admissionRedisMedianMs = r.admissionRedisMedianMs;
          details.admission = r.detail;
        });
      }
      if (wants("python")) {
        await scenario("python reference", async () => {
          const r = await pythonReference(ctx, gateway);
          if (r.pythonReferenceRatio !== undefined) results.pythonReferenceRatio = r.pythonReferenceRatio;
          else log(`  pythonReferenceRatio omitted: ${String(r.detail.skipped)}`);
          details.pythonReference = r.detail;
        });
      }
      await stopAll();
      if (profile) await reportProfile(profileDir, gateway.child!.pid);
    }
    if (wants("tracing")) {
      await scenario("tracing", async () => {
        const collector = await startDiscardCollector();
        try {
          const off = await startGatewaySystem(ctx, "gateway (tracing off)", { stateDir: await ctx.scratch("tracing-off-state") });
          running.push(off);
          const on = await startGatewaySystem(ctx, "gateway (tracing on)", { stateDir: await ctx.scratch("tracing-on-state"), tracing: { exporterUrl: collector.tracesUrl } });
          running.push(on);
          let base: System | undefined;
          if (compareDist !== undefined) {
            const other = resolveGatewayBuild(log, compareDist);
            log(`  tracing off compared with: ${other.note}`);
            base = await startGatewaySystem(ctx, "gateway (compare)", { stateDir: await ctx.scratch("tracing-base-state"), module: other.gateway });
            running.push(base);
          }
          const r = await tracingCost(ctx, { off, on, ...(base && { base }) }, collector);
          results.tracingRatio = r.tracingRatio;
          details.tracing = r.detail;
          await stopAll();
        } finally {
          await collector.close();
        }
      });
    }
    if (wants("replay")) {
      await scenario("replay", async () => {
        // Two gateways alike but for what the replay keeps; both keep a run 30 s for a client that went away.
        const floor = await startRelaySystem(ctx, "floor");
        running.push(floor);
        const replay = await startGatewaySystem(ctx, "gateway (replay)", { stateDir: await ctx.scratch("replay-state"), reconnectGraceSeconds: 30 });
        running.push(replay);
        const tiny = await startGatewaySystem(ctx, "gateway (--replay-events 1)", { stateDir: await ctx.scratch("replay-tiny-state"), reconnectGraceSeconds: 30, replay: { events: 1 } });
        running.push(tiny);
        const cost = await replayCost(ctx, { floor, replay, tiny });
        results.replayCostRatio = cost.replayCostRatio;
        details.replayCost = cost.detail;
        const local = await reconnectLocal(ctx, replay);
        results.reconnectFirstEventMs = local.reconnectFirstEventMs;
        details.reconnect = local.detail;
        const memory = await replayMemory(ctx, { replay, tiny });
        results.replayMemoryPerRunKB = memory.replayMemoryPerRunKB;
        details.replayMemory = memory.detail;
        await stopAll();
      });
    }
    if (wants("redis-replay") && redis) {
      await scenario("replay with Redis", async () => {
        const file = await startGatewaySystem(ctx, "gateway (file store)", { stateDir: await ctx.scratch("redis-replay-file-state"), reconnectGraceSeconds: 30 });
        running.push(file);
        const a = await startGatewaySystem(ctx, "gateway (Redis, replica A)", { stateStore: redis.url, reconnectGraceSeconds: 30 });
        running.push(a);
        const b = await startGatewaySystem(ctx, "gateway (Redis, replica B)", { stateStore: redis.url, reconnectGraceSeconds: 30 });
        running.push(b);
        const run = await redisRun(ctx, { file, redis: a });
        results.redisRunRatio = run.redisRunRatio;
        details.redisRun = run.detail;
        const rejoin = await redisReconnect(ctx, { a, b });
        results.redisReconnectMs = rejoin.redisReconnectMs;
        details.redisReconnect = rejoin.detail;
        await stopAll();
      });
    }
    if (wants("state")) {
      await scenario("state write", async () => {
        const r = await stateWrite(ctx);
        results.stateWriteMedianMs = r.stateWriteMedianMs;
        details.stateWrite = r.detail;
        if (redis) {
          const onRedis = await stateWriteRedis(ctx, redis.url);
          results.stateWriteRedisMedianMs = onRedis.stateWriteRedisMedianMs;
          details.stateWriteRedis = onRedis.detail;
        }
      });
    }
    if (wants("slow")) {
      await scenario("slow reader", async () => {
        const gateway = await startGatewaySystem(ctx, "gateway (slow reader)");
        running.push(gateway);
        const r = await slowReader(ctx, gateway);
        results.slowReader = r.slowReader;
        details.slowReader = r.detail;
        await stopAll();
      });
    }
    if (wants("many")) {
      for (const count of manyCounts) {
        const key = count === 1000 ? "manyStreams" : count === 5000 ? "manyStreams5k" : undefined;
        if (!manyStreamsFits(count)) {
          log(`  many streams: ${count} needs ${2 * count + 128} descriptors in the floor relay, over the hard limit; skipped`);
          details[`manyStreams${count}`] = { skipped: "file-descriptor hard limit" };
          continue;
        }
        await scenario(`many streams (${count.toLocaleString("en")})`, async () => {
          const floor = await startRelaySystem(ctx, "floor");
          running.push(floor);
          if (profile) await mkdir(profileDir, { recursive: true });
          const gateway = await startGatewaySystem(ctx, "gateway", {
            stateDir: await ctx.scratch(`many-${count}-state`),
            ...(profile && { execArgv: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] }),
          });
          running.push(gateway);
          const r = await manyStreams(ctx, { floor, gateway }, count);
          if (key) results[key] = r.figure;
          details[`manyStreams${count}`] = { figure: r.figure, ...r.detail };
          await stopAll();
          if (profile) await reportProfile(profileDir, gateway.child!.pid);
        });
      }
    }
    if (wants("idle")) {
      await scenario("idle streams", async () => {
        // HTTP/2 upstream: over HTTP/1.1 every idle stream would hold a second socket, and two per stream
        // puts 10,000 streams past this machine's fd hard limit. Memory store: admissions hold no descriptors.
        const h2Upstream = await spawnChild<{ url: string; port: number }>("upstream (h2c)", "upstream.ts", { args: { http2: true } });
        try {
          const gateway = await startGatewaySystem(ctx, "gateway (idle)", { heartbeatSeconds: 1, upstream: { url: h2Upstream.ready.url, http2: true } });
          running.push(gateway);
          const r = await idleStreams(ctx, gateway, h2Upstream, idleCount);
          results.idleStreams = r.idleStreams;
          details.idleStreams = r.detail;
          await stopAll();
        } finally {
          await h2Upstream.stop().catch(() => undefined);
        }
      });
    }
  } finally {
    await stopAll();
    await redis?.stop().catch(() => undefined);
    await upstream.stop().catch(() => undefined);
    killAllChildren();
    await rm(root, { recursive: true, force: true }).catch(() => undefined);
  }
  (details.loadAverage as Record<string, number[]>).end = loadavg().map((l) => round(l, 2));
  printTable();
  const file = path.join(ROOT, "bench", "results.json");
  const targets = Object.fromEntries((Object.keys(TARGETS) as Key[]).map((k) => [k, TARGETS[k]]));
  await writeFile(
    file,
    JSON.stringify({ quick, date: new Date().toISOString(), node: process.version, build: build.note, seconds: Math.round((Date.now() - started) / 1000), results, targets, details }, null, 2) + "\n",
  );
  log(`wrote ${path.relative(process.cwd(), file)} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

function show(value: unknown): string {
  if (value === undefined) return "—";
  if (typeof value === "number") return value >= 10_000 ? Math.round(value).toLocaleString("en") : String(value);
  if (typeof value === "object" && value !== null) return Object.entries(value).map(([k, v]) => `${k}: ${show(v)}`).join(", ");
  return String(value);
}

function printTable(): void {
  const rows = (Object.keys(TARGETS) as Key[])
    .filter((key) => !only || results[key] !== undefined)
    .map((key) => {
      const verdict = passes(key, results[key]);
      return [key, show(results[key]), TARGETS[key], verdict === undefined ? "" : verdict ? "pass" : "FAIL"];
    });
  const header = ["key", "value", "target", ""];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  log("");
  log(line(header));
  log(widths.map((w) => "─".repeat(w)).join("  "));
  for (const row of rows) log(line(row));
  log("");
}

async function reportProfile(dir: string, pid: number): Promise<void> {
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread (tsx's loader has its own).
  const file = (await readdir(dir)).filter((f) => f.endsWith(".cpuprofile") && f.includes(`.${pid}.0.`)).sort().pop();
  if (!file) {
    log(`no cpu profile for pid ${pid} in ${dir}`);
    return;
  }
  const full = path.join(dir, file);
  const { busyMs, spots } = hotSpots(full);
  details.profile = { file: full, busyMs, top: spots };
  log(`gateway cpu profile ${full} (${busyMs} ms busy), top self time:`);
  for (const s of spots) log(`  ${String(s.percent).padStart(5)}%  ${String(s.selfMs).padStart(6)} ms  ${s.fn}  ${s.where}`);
}

main().catch((error: unknown) => {
  console.error(error);
  killAllChildren();
  process.exitCode = 1;
});
