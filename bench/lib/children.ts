// Servers run in child processes so the measured one has a core to itself; this is the parent side:
// spawn on plain node, a tiny request/reply protocol over IPC, and a registry that kills every child on
// the way out (normal end, failure, Ctrl-C).
import { buildSync } from "esbuild";
import { basename } from "node:path";
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ChildReply, ChildRequest } from "./child-ipc.js";

export interface ChildHandle<Ready = Record<string, unknown>> {
  name: string;
  pid: number;
  ready: Ready;
  call<T = unknown>(cmd: string, args?: unknown, timeoutMs?: number): Promise<T>;
  rssBytes(): Promise<number>;
  /** User + system CPU time the child has used so far, ms. */
  cpuMs(): Promise<number>;
  /** Time the child's main thread has been busy so far (its event loop not waiting), ms. */
  busyMs(): Promise<number>;
  /** Asks the child to exit (flushes a --cpu-prof profile), then kills it if it lingers. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();

/** A process not started by spawnChild (the Python reference) that must die with the bench too. */
export function trackProcess(child: ChildProcess): void {
  live.add(child);
  child.once("exit", () => live.delete(child));
}

export function killAllChildren(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  live.clear();
}

process.once("exit", killAllChildren);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    killAllChildren();
    process.exit(130);
  });
}

export interface SpawnOptions {
  args?: unknown;
  execArgv?: string[];
  env?: NodeJS.ProcessEnv;
  startTimeoutMs?: number;
}

/** Bundles a child script (packages left external) next to node_modules, so plain node can run it. */
function compileChild(source: string): string {
  const outfile = fileURLToPath(new URL(`../.build/${basename(source).replace(/\.ts$/, ".mjs")}`, import.meta.url));
  buildSync({ entryPoints: [source], bundle: true, platform: "node", format: "esm", packages: "external", outfile, logLevel: "warning" });
  return outfile;
}

/** `script` is a path relative to bench/children/ (a .ts file, compiled for plain node). */
export async function spawnChild<Ready = Record<string, unknown>>(name: string, script: string, options: SpawnOptions = {}): Promise<ChildHandle<Ready>> {
  const source = fileURLToPath(new URL(`../children/${script}`, import.meta.url));
  const args = JSON.stringify(options.args ?? {});
  // Children run on plain node, like the gateway in production: tsx costs ~35 MB of RSS and start-up time
  // that would be charged to whatever is measured. Only a child that must load TypeScript sources keeps it.
  const needsTsx = /\.ts"/.test(args);
  const path = needsTsx ? source : compileChild(source);
  const child = fork(path, [args], {
    execArgv: [...(needsTsx ? ["--import", "tsx"] : []), ...(options.execArgv ?? [])],
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "inherit", "pipe", "ipc"],
  });
  const disconnects = forwardStderr(child);
  live.add(child);
  child.once("exit", () => live.delete(child));
  let nextId = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  void exited.then(() => {
    for (const p of pending.values()) {
      clearTimeout(p.timer);
      p.reject(new Error(`${name} exited`));
    }
    pending.clear();
  });
  const ready = await new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start in time`)), options.startTimeoutMs ?? 30_000);
    child.on("message", (message: ChildReply) => {
      if (message.type === "ready") {
        clearTimeout(timer);
        resolve(message.value as Ready);
        return;
      }
      if (message.type === "fatal") {
        clearTimeout(timer);
        reject(new Error(`${name}: ${message.error}`));
        return;
      }
      const waiter = message.id !== undefined ? pending.get(message.id) : undefined;
      if (!waiter) return;
      pending.delete(message.id!);
      clearTimeout(waiter.timer);
      if (message.type === "ok") waiter.resolve(message.value);
      else waiter.reject(new Error(`${name}: ${message.error}`));
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited during start-up (${code ?? signal})`));
    });
  });
  const call = <T>(cmd: string, args?: unknown, timeoutMs = 30_000): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (!child.connected) {
        reject(new Error(`${name} is gone`));
        return;
      }
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${name}: ${cmd} timed out`));
      }, timeoutMs);
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      const request: ChildRequest = { id, cmd, args };
      child.send(request);
    });
  return {
    name,
    pid: child.pid!,
    ready,
    call,
    rssBytes: () => call<number>("rss"),
    cpuMs: () => call<number>("cpu"),
    busyMs: () => call<number>("busy"),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (child.connected) child.send({ id: 0, cmd: "exit" } satisfies ChildRequest);
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
      if (disconnects.count > 0) {
        console.log(`  ${name}: ${disconnects.count} client-disconnect stack traces (read/write ECONNRESET, EPIPE) on its stderr, not shown`);
      }
    },
  };
}

/**
 * Koa's default error handler prints every client hang-up (ECONNRESET, EPIPE) as a stack trace; thousands of
 * them at the end of the idle run would bury the table. Those are counted; anything else goes to stderr.
 */
function forwardStderr(child: ChildProcess): { count: number } {
  const disconnects = { count: 0 };
  let pending = "";
  const flush = (text: string) => {
    for (const block of text.split(/\n\s*\n/)) {
      if (/Error: (read|write) (ECONNRESET|EPIPE)/.test(block)) disconnects.count++;
      else if (block.trim() !== "") process.stderr.write(block.replace(/^\n+/, "") + "\n");
    }
  };
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    pending += chunk;
    const cut = pending.lastIndexOf("\n\n");
    if (cut < 0) return;
    flush(pending.slice(0, cut));
    pending = pending.slice(cut + 2);
  });
  child.stderr!.on("end", () => flush(pending));
  return disconnects;
}
