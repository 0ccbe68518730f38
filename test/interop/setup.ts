// Interop prerequisites and processes. As vitest's globalSetup it makes sure a venv under test/interop/.venv
// holds the pinned `iac-code[a2a,agui]` (installing it once, reusing it after) and hands the outcome to the
// test files through `inject("interop")`. The test files then use the helpers below to start the real
// `iac-code a2a` kernel (and the reference `iac-code agui`) on loopback, pointed at their own fake LLM.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";

/** The iac-code release the interop suite is pinned to (`pip index versions iac-code`: newest on 2026-08). */
export const IAC_CODE_VERSION = "0.16.0";
/**
 * iac-code only bounds a2a-sdk to `>=1.0.2,<2`, and a2a-sdk 1.2+ dropped `encode_page_token`, which
 * iac-code 0.16.0's A2A dispatcher imports: the kernel dies at start-up unless the SDK is held at 1.1.x
 * (upstream's own uv.lock uses 1.1.0).
 */
export const A2A_SDK_VERSION = "1.1.5";
const REQUIREMENTS = [`iac-code[a2a,agui]==${IAC_CODE_VERSION}`, `a2a-sdk[http-server,signing]==${A2A_SDK_VERSION}`];
const INSTALL_TIMEOUT_MS = 8 * 60_000;

export type InteropPrereqs =
  | { ok: true; bin: string; version: string; installSeconds: number; cached: boolean }
  | { ok: false; reason: string };

declare module "vitest" {
  export interface ProvidedContext {
    interop: InteropPrereqs;
  }
}

const here = path.dirname(fileURLToPath(import.meta.url));
export const VENV = path.join(here, ".venv");
const venvBin = (name: string) => path.join(VENV, "bin", name);

/** Set INTEROP_REQUIRED=1 (e.g. on a CI lane that must exercise the real kernel) to fail instead of skipping. */
export const INTEROP_REQUIRED = process.env["INTEROP_REQUIRED"] === "1";

function run(command: string, args: string[], timeoutMs: number): { ok: boolean; out: string } {
  const result = spawnSync(command, args, { encoding: "utf8", timeout: timeoutMs, env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: "1" } });
  const out = `${result.stdout ?? ""}${result.stderr ?? ""}${result.error ? String(result.error) : ""}`.trim();
  return { ok: result.status === 0, out };
}

function lastLines(text: string, count = 4): string {
  return text.split("\n").filter(Boolean).slice(-count).join(" | ");
}

// Imports what the two commands need at start-up, then prints "<iac-code version> <a2a-sdk version>".
const PROBE = [
  "import importlib.metadata as m",
  "import iac_code.a2a.app, iac_code.a2a.transports.dispatcher, iac_code.agui.server",
  "print(m.version('iac-code'), m.version('a2a-sdk'))",
].join("; ");

/** "<iac-code> <a2a-sdk>" as installed in the venv, if the venv works and both commands can start. */
function installedVersions(): string | undefined {
  if (!existsSync(venvBin("iac-code"))) return undefined;
  const probe = run(venvBin("python"), ["-c", PROBE], 60_000);
  return probe.ok ? probe.out.split("\n").at(-1) : undefined;
}

export function ensureIacCode(): InteropPrereqs {
  const started = Date.now();
  const seconds = () => Math.round((Date.now() - started) / 100) / 10;
  const wanted = `${IAC_CODE_VERSION} ${A2A_SDK_VERSION}`;
  if (installedVersions() === wanted) return { ok: true, bin: venvBin("iac-code"), version: IAC_CODE_VERSION, installSeconds: seconds(), cached: true };

  const python = run("python3", ["-c", "import sys; assert sys.version_info >= (3, 10), sys.version; print(sys.version.split()[0])"], 30_000);
  if (!python.ok) return { ok: false, reason: `python3 >= 3.10 is not available (${lastLines(python.out, 2) || "not found"})` };
  if (!existsSync(venvBin("python"))) {
    const venv = run("python3", ["-m", "venv", VENV], 120_000);
    if (!venv.ok) return { ok: false, reason: `python3 -m venv failed: ${lastLines(venv.out)}` };
  }
  const pip = run(venvBin("python"), ["-m", "pip", "install", "--quiet", ...REQUIREMENTS], INSTALL_TIMEOUT_MS);
  if (!pip.ok) return { ok: false, reason: `pip install ${REQUIREMENTS.join(" ")} failed (no package index reachable?): ${lastLines(pip.out)}` };
  const after = installedVersions();
  if (after !== wanted) return { ok: false, reason: `after pip install the venv reports "${after ?? "iac-code not importable"}", wanted "${wanted}"` };
  return { ok: true, bin: venvBin("iac-code"), version: IAC_CODE_VERSION, installSeconds: seconds(), cached: false };
}

/** vitest globalSetup: install once per `npm run test:interop`, tell every test file the outcome. */
export default function setup(project: TestProject): void {
  const prereqs = ensureIacCode();
  const banner = prereqs.ok
    ? `[interop] iac-code ${prereqs.version} ${prereqs.cached ? "already in" : "installed into"} ${VENV} (${prereqs.installSeconds}s)`
    : `[interop] SKIPPING the real-kernel interop suite: ${prereqs.reason}`;
  process.stderr.write(`${banner}\n`);
  project.provide("interop", prereqs);
}

// ---- processes ---------------------------------------------------------------------------------

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

export interface PythonServer {
  url: string;
  port: number;
  child: ChildProcess;
  /** stdout + stderr so far (for failure messages). */
  log(): string;
  stop(): Promise<void>;
}

async function waitHealthy(url: string, token: string | undefined, child: ChildProcess, log: () => string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`exited during startup (code ${child.exitCode}): ${log().slice(-2000)}`);
    try {
      const response = await fetch(new URL("health", url), {
        headers: token ? { Authorization: `Bearer ${token}` } : {},
        signal: AbortSignal.timeout(1_000),
      });
      await response.body?.cancel();
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  throw new Error(`not healthy after ${timeoutMs} ms: ${log().slice(-2000)}`);
}

async function startPython(bin: string, args: string[], env: NodeJS.ProcessEnv, port: number, token: string | undefined): Promise<PythonServer> {
  const child = spawn(bin, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  // A spawn failure (ENOENT) shows up as a non-null exitCode in waitHealthy, not as an uncaught 'error'.
  child.on("error", (error) => {
    output += `\n${String(error)}`;
  });
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString("utf8")).slice(-20_000);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const url = `http://127.0.0.1:${port}/`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await waitHealthy(url, token, child, () => output, 30_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, port, child, log: () => output, stop };
}

export interface Kernel extends PythonServer {
  token: string;
  /** The allowed workspace root; `workspace` is an existing directory below it. */
  root: string;
  workspace: string;
  /** The temp dir holding HOME, the config dir and the workspaces; removed by `stop`. */
  tmp: string;
}

/** The real `iac-code a2a` on loopback, `openai_compatible` pointed at `llmBaseUrl` (a2a-upstream.md §9.4). */
export async function startKernel(bin: string, llmBaseUrl: string): Promise<Kernel> {
  const tmp = await mkdtemp(path.join(tmpdir(), "agui-interop-"));
  const home = path.join(tmp, "home");
  const config = path.join(tmp, "iac-config");
  const root = path.join(tmp, "ws");
  const workspace = path.join(root, "project");
  await Promise.all([mkdir(home), mkdir(config), mkdir(workspace, { recursive: true })]);
  const token = `interop-${Math.random().toString(36).slice(2)}`;
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env["PATH"],
    LANG: "C.UTF-8",
    HOME: home,
    IAC_CODE_CONFIG_DIR: config,
    IAC_CODE_PROVIDER: "openai_compatible",
    IAC_CODE_MODEL: "fake-model",
    IAC_CODE_BASE_URL: llmBaseUrl,
    IAC_CODE_API_KEY: "dummy",
    IACCODE_A2A_HTTP_TOKEN: token,
    IACCODE_A2A_ALLOWED_CWDS: root,
    DISABLE_TELEMETRY: "1",
    IAC_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    ALIBABA_CLOUD_ECS_METADATA_DISABLED: "true",
    NO_PROXY: "127.0.0.1,localhost",
  };
  const server = await startPython(bin, ["a2a", "--host", "127.0.0.1", "--port", String(port), "--thinking-exposure", "all"], env, port, token).catch(
    async (error: unknown) => {
      await rm(tmp, { recursive: true, force: true });
      throw new Error(`iac-code a2a ${error instanceof Error ? error.message : String(error)}`);
    },
  );
  return {
    ...server,
    token,
    root,
    workspace,
    tmp,
    stop: async () => {
      await server.stop();
      await rm(tmp, { recursive: true, force: true });
    },
  };
}

/** The reference Python adapter `iac-code agui` in front of an already running kernel (reference-adapter.md §1.1). */
export async function startReferenceAdapter(bin: string, kernel: Kernel, stateDir: string): Promise<PythonServer> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env["PATH"],
    LANG: "C.UTF-8",
    HOME: path.join(kernel.tmp, "home"),
    IAC_CODE_CONFIG_DIR: path.join(kernel.tmp, "iac-config"),
    IAC_CODE_AGUI_A2A_TOKEN: kernel.token,
    IAC_CODE_AGUI_ALLOWED_CWDS: kernel.root,
    DISABLE_TELEMETRY: "1",
    IAC_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    NO_PROXY: "127.0.0.1,localhost",
  };
  const args = ["agui", "--host", "127.0.0.1", "--port", String(port), "--a2a-url", kernel.url, "--state-dir", stateDir];
  return startPython(bin, args, env, port, undefined).catch((error: unknown) => {
    throw new Error(`iac-code agui ${error instanceof Error ? error.message : String(error)}`);
  });
}
