// pythonReferenceRatio: the gateway and the Python reference adapter (`iac-code agui`, pinned) on the same
// upstream turn. Installs iac-code[agui] into bench/.venv once; when that is impossible the key is absent.
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { Agent, request } from "undici";
import { ROOT } from "../lib/build.js";
import { trackProcess } from "../lib/children.js";
import type { BenchContext } from "../lib/context.js";
import { median, round, sleep } from "../lib/stats.js";
import { gatewayLike, type System } from "../lib/systems.js";
import { THROUGHPUT_FRAMES, burst } from "./throughput.js";

export const IAC_CODE_VERSION = "0.16.0";
/** Full-length streams each system runs before the pairs. */
const WARM_UP_STREAMS = 4;
const VENV = path.join(ROOT, "bench", ".venv");
const IAC_CODE = path.join(VENV, "bin", "iac-code");
const run = promisify(execFile);

async function ensureInstalled(ctx: BenchContext): Promise<string | undefined> {
  if (existsSync(IAC_CODE)) {
    const { stdout } = await run(path.join(VENV, "bin", "python"), ["-c", "import importlib.metadata as m; print(m.version('iac-code'))"]).catch(() => ({ stdout: "" }));
    if (stdout.trim() === IAC_CODE_VERSION) return undefined;
  }
  ctx.log(`  installing iac-code[agui]==${IAC_CODE_VERSION} into bench/.venv (once)`);
  try {
    await run("python3", ["-m", "venv", VENV], { timeout: 60_000 });
    await run(path.join(VENV, "bin", "pip"), ["install", "-q", "--disable-pip-version-check", `iac-code[agui]==${IAC_CODE_VERSION}`], { timeout: 240_000 });
  } catch (error) {
    return `could not install iac-code[agui]==${IAC_CODE_VERSION}: ${String((error as Error).message).split("\n")[0]}`;
  }
  return existsSync(IAC_CODE) ? undefined : "pip finished but bench/.venv/bin/iac-code is missing";
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function startReference(ctx: BenchContext): Promise<System> {
  const scratch = await ctx.scratch("python-ref");
  const port = await freePort();
  const child = spawn(
    IAC_CODE,
    ["agui", "--host", "127.0.0.1", "--port", String(port), "--a2a-url", ctx.upstream.ready.url, "--state-dir", path.join(scratch, "state")],
    {
      env: {
        ...process.env,
        HOME: scratch,
        IAC_CODE_CONFIG_DIR: path.join(scratch, "config"),
        IAC_CODE_AGUI_ALLOWED_CWDS: ctx.root,
        DISABLE_TELEMETRY: "1",
        IAC_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  trackProcess(child);
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  };
  const url = `http://127.0.0.1:${port}/`;
  const agent = new Agent();
  try {
    for (let i = 0; i < 300; i++) {
      if (child.exitCode !== null) throw new Error(`iac-code agui exited (${child.exitCode}): ${stderr.slice(-400)}`);
      const ok = await request(`${url}health`, { dispatcher: agent, headersTimeout: 1_000 })
        .then(async (res) => (await res.body.dump(), res.statusCode === 200))
        .catch(() => false);
      if (ok) return gatewayLike(ctx, "python reference", url, undefined, stop);
      await sleep(200);
    }
    throw new Error(`iac-code agui did not answer /health within 60 s: ${stderr.slice(-400)}`);
  } catch (error) {
    await stop();
    throw error;
  } finally {
    await agent.close();
  }
}

/**
 * The same 100k-frame stream as throughput, through the reference and the gateway in pairs back to back,
 * who goes first alternating; each pair gives a ratio, and the median ratio is reported. Pairing cancels
 * the drift of a shared machine between runs (the ratio of medians of short streams swung 8–13 on the same code).
 */
export async function pythonReference(
  ctx: BenchContext,
  gateway: System,
): Promise<{ pythonReferenceRatio?: number; detail: Record<string, unknown> }> {
  const missing = await ensureInstalled(ctx);
  if (missing) return { detail: { skipped: missing } };
  const frames = THROUGHPUT_FRAMES;
  const pairs = ctx.quick ? 5 : 9;
  const reference = await startReference(ctx);
  const agent = new Agent({ keepAliveTimeout: 10_000 });
  try {
    // Both warmed up on full-length streams before anything is timed: the gateway's rate climbs over its first
    // four or five such streams (the JIT settling), the reference's does not move. Back to back, so the gateway's
    // last warm-up is not followed by an idle minute of the reference's.
    for (const system of [reference, gateway]) for (let i = 0; i < WARM_UP_STREAMS; i++) await burst(ctx, system, frames, agent);
    const python: number[] = [];
    const ours: number[] = [];
    const ratios: number[] = [];
    for (let pair = 0; pair < pairs; pair++) {
      const first = pair % 2 === 0 ? reference : gateway;
      const second = first === reference ? gateway : reference;
      const a = await burst(ctx, first, frames, agent);
      const b = await burst(ctx, second, frames, agent);
      const [p, g] = first === reference ? [a, b] : [b, a];
      python.push(p.framesPerSec);
      ours.push(g.framesPerSec);
      ratios.push(g.framesPerSec / p.framesPerSec);
      ctx.log(`  pair ${pair + 1}/${pairs} (${first.name} first): python reference ${Math.round(p.eventsPerSec).toLocaleString("en")} events/s (${p.records} records), gateway ${Math.round(g.eventsPerSec).toLocaleString("en")} events/s (${g.records} records), ratio ${round(ratios.at(-1)!, 2)}`);
    }
    // A miss means the upstream rendered inside a timed request (a contextId we did not predict).
    const { renderMisses } = await ctx.upstream.call<{ renderMisses: number }>("stats");
    return {
      pythonReferenceRatio: round(median(ratios), 2),
      detail: {
        version: IAC_CODE_VERSION,
        frames,
        pairs,
        pairRatios: ratios.map((r) => round(r, 2)),
        upstreamRenderMisses: renderMisses,
        upstreamFramesPerSec: { gateway: Math.round(median(ours)), "python reference": Math.round(median(python)) },
      },
    };
  } finally {
    await agent.close();
    await reference.stop();
  }
}
