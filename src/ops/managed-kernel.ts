// The managed local A2A child (reference-adapter §1.4): without --a2a-url and --demo the gateway runs
// `iac-code a2a` itself on a free loopback port, with a fresh bearer token only the two of them know.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, constants, statSync } from "node:fs";
import { request } from "node:http";
import { createServer, type AddressInfo } from "node:net";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { createInterface } from "node:readline";

export interface ManagedKernelOptions {
  /** Default "iac-code", looked up on the PATH of `env`. A path (with a separator) is used as given. */
  command?: string;
  /** The child's base environment (default process.env); also the PATH searched for `command`. */
  env?: NodeJS.ProcessEnv;
  /** Default 20000. */
  startupTimeoutMs?: number;
  /** Time the child gets between SIGTERM and SIGKILL, and after SIGKILL. Default 5000. */
  stopGraceMs?: number;
  logger?: { info(...a: unknown[]): void; warn(...a: unknown[]): void };
}

export interface ManagedKernel {
  url: string;
  token: string;
  pid: number;
  stop(): Promise<void>;
}

export class KernelNotFoundError extends Error {
  constructor(command: string) {
    super(
      `\`${command}\` was not found on PATH, so no local A2A kernel can be started. Install iac-code, pass ` +
        "--a2a-url http://127.0.0.1:<port>/ (or IAC_CODE_AGUI_A2A_URL) for a running `iac-code a2a`, or --demo for the " +
        "built-in demo upstream.",
    );
    this.name = "KernelNotFoundError";
  }
}

const HOST = "127.0.0.1";
const HEALTH_TRY_TIMEOUT_MS = 500;
const HEALTH_RETRY_MS = 100;

/** The executable `command` resolves to on `env.PATH`, like a shell would find it; undefined if none. */
export function findOnPath(command: string, env: NodeJS.ProcessEnv): string | undefined {
  if (command === "") return undefined;
  if (command.includes("/") || (process.platform === "win32" && command.includes("\\"))) {
    const path = isAbsolute(command) ? command : resolve(command);
    return isExecutableFile(path) ? path : undefined;
  }
  const extensions = process.platform === "win32" ? ["", ...(env.PATHEXT ?? ".EXE;.CMD;.BAT;.COM").split(";")] : [""];
  for (const dir of (env.PATH ?? env.Path ?? "").split(delimiter)) {
    if (dir === "") continue;
    for (const ext of extensions) {
      const candidate = join(dir, command + ext);
      if (isExecutableFile(candidate)) return candidate;
    }
  }
  return undefined;
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Starts `iac-code a2a` and resolves once its /health answers 200 to our token. */
export async function startManagedKernel(options: ManagedKernelOptions = {}): Promise<ManagedKernel> {
  const command = options.command ?? "iac-code";
  const baseEnv = options.env ?? process.env;
  const executable = findOnPath(command, baseEnv);
  if (executable === undefined) throw new KernelNotFoundError(command);

  const port = await freeLoopbackPort();
  const token = randomBytes(32).toString("base64url");
  const env: NodeJS.ProcessEnv = { ...baseEnv, IACCODE_A2A_HTTP_TOKEN: token };
  if (env.IAC_CODE_AGUI_ALLOWED_CWDS !== undefined && env.IACCODE_A2A_ALLOWED_CWDS === undefined) {
    env.IACCODE_A2A_ALLOWED_CWDS = env.IAC_CODE_AGUI_ALLOWED_CWDS;
  }
  const args = ["a2a", "--host", HOST, "--port", String(port), "--thinking-exposure", "all"];
  const child = spawn(executable, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  const exited = exitOf(child);
  forwardOutput(child, options.logger);
  // If the gateway dies without stopping us, the kernel must not outlive it.
  const killOnExit = () => child.kill("SIGTERM");
  process.once("exit", killOnExit);

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      process.removeListener("exit", killOnExit);
      await terminate(child, exited, options.stopGraceMs ?? 5_000);
    })());

  const url = `http://${HOST}:${port}/`;
  try {
    await waitForHealth(url, token, exited, options.startupTimeoutMs ?? 20_000);
  } catch (error) {
    await stop();
    throw error;
  }
  options.logger?.info({ url, pid: child.pid }, "managed A2A kernel ready");
  return { url, token, pid: child.pid!, stop };
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

function exitOf(child: ChildProcess): Promise<Exit> {
  return new Promise((resolve) => {
    // 'error' without 'exit' means the process never started (EACCES, ENOENT…).
    child.on("error", (error) => {
      if (child.pid === undefined) resolve({ code: null, signal: null, error });
    });
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
}

function forwardOutput(child: ChildProcess, logger: ManagedKernelOptions["logger"]): void {
  // Always read both pipes: a child blocked on a full pipe would hang.
  for (const [stream, name] of [[child.stdout, "stdout"], [child.stderr, "stderr"]] as const) {
    if (!stream) continue;
    createInterface({ input: stream, crlfDelay: Infinity }).on("line", (line) => {
      if (line.trim() !== "") logger?.info({ kernel: "iac-code", stream: name, pid: child.pid }, line);
    });
  }
}

async function waitForHealth(url: string, token: string, exited: Promise<Exit>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exit: Exit | undefined;
  void exited.then((e) => (exit = e));
  while (Date.now() < deadline) {
    if (exit) throw startupExitError(exit);
    if ((await healthStatus(`${url}health`, token, Math.min(HEALTH_TRY_TIMEOUT_MS, deadline - Date.now()))) === 200) return;
    await Promise.race([sleep(HEALTH_RETRY_MS), exited]);
  }
  if (exit) throw startupExitError(exit);
  throw new Error("The local A2A process did not become ready in time.");
}

function startupExitError(exit: Exit): Error {
  if (exit.error) return new Error(`The local A2A process could not be started: ${exit.error.message}`, { cause: exit.error });
  return new Error(`The local A2A process exited during startup (exit code ${exit.code ?? exit.signal}).`);
}

/** The HTTP status of one health probe; undefined when it could not be had in time. */
function healthStatus(url: string, token: string, timeoutMs: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    if (timeoutMs <= 0) return resolve(undefined);
    // No agent: a fresh connection per probe, closed after it, so nothing lingers once we are ready.
    const req = request(url, { method: "GET", agent: false, headers: { Authorization: `Bearer ${token}` }, timeout: timeoutMs });
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(undefined));
    req.end();
  });
}

async function terminate(child: ChildProcess, exited: Promise<Exit>, graceMs: number): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  if (await settlesWithin(exited, graceMs)) return;
  child.kill("SIGKILL");
  await settlesWithin(exited, graceMs);
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Asks the OS for a free loopback port. Another process may take it before the child binds it (a known, small race). */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, HOST, () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
