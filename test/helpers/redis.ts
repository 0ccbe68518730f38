// A real redis-server per test file, on a free 127.0.0.1 port, with no persistence and its own temp dir. The global
// setup (test/helpers/redis-global-setup.ts) makes sure the binary is there; tests never mock Redis.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

export interface RedisServer {
  url: string;
  port: number;
  /** SIGTERM, then wait for the exit. */
  stop(): Promise<void>;
  /** SIGKILL (a crash), then wait for the exit. */
  kill(): Promise<void>;
  /** Starts again on the same port, empty (nothing is persisted). */
  restart(): Promise<void>;
  /** SIGSTOP: connections stay open and nothing answers (a hung server). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
}

export interface StartRedisOptions {
  requirepass?: string;
}

const START_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

// Servers still running when the test process exits (a crash, a missing afterAll) are killed with it.
const running = new Set<{ child: ChildProcess; dir: string }>();
process.once("exit", () => {
  for (const { child, dir } of running) {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});

export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  let current: { child: ChildProcess; dir: string; exited: Promise<void> } | undefined;
  // While the server is killed, the port is held by a listener that drops every connection: otherwise another
  // test file's server could be started on it, and a client waiting for "our" Redis would find that one.
  let held: net.Server | undefined;

  async function launch(): Promise<void> {
    await release();
    const dir = mkdtempSync(path.join(os.tmpdir(), "agui-redis-"));
    const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning"];
    if (options.requirepass !== undefined) args.push("--requirepass", options.requirepass);
    const child = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
    const entry = { child, dir };
    running.add(entry);
    let output = "";
    let spawnError: Error | undefined;
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString("utf8")).slice(-4_000);
    };
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    const exited = new Promise<void>((resolve) => {
      child.once("exit", () => {
        running.delete(entry);
        rmSync(dir, { recursive: true, force: true });
        resolve();
      });
      child.once("error", (error) => {
        spawnError = error;
        running.delete(entry);
        rmSync(dir, { recursive: true, force: true });
        resolve();
      });
    });
    current = { child, dir, exited };
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await answersPing(port))) {
      if (spawnError !== undefined || child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
        child.kill("SIGKILL");
        await exited;
        const why = spawnError?.message ?? (output.trim() || "no output");
        throw new Error(`redis-server did not start on 127.0.0.1:${port}: ${why}`);
      }
      await delay(50);
    }
  }

  async function end(signal: NodeJS.Signals, hold: boolean): Promise<void> {
    const server = current;
    current = undefined;
    if (server === undefined) return;
    server.child.kill(signal);
    server.child.kill("SIGCONT");
    const timer = setTimeout(() => server.child.kill("SIGKILL"), STOP_TIMEOUT_MS);
    await server.exited;
    clearTimeout(timer);
    if (hold) held = await holdPort(port);
  }

  async function release(): Promise<void> {
    const listener = held;
    held = undefined;
    if (listener !== undefined) await new Promise<void>((resolve) => listener.close(() => resolve()));
  }

  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: async () => {
      await end("SIGTERM", false);
      await release();
    },
    kill: () => end("SIGKILL", true),
    restart: async () => {
      await end("SIGTERM", true);
      await launch();
    },
    pause: () => void current?.child.kill("SIGSTOP"),
    resume: () => void current?.child.kill("SIGCONT"),
  };
}

/**
 * Listens on the port and closes every connection at once (a refused connection, as far as a client can tell);
 * undefined when someone took the port in between.
 */
async function holdPort(port: number): Promise<net.Server | undefined> {
  const server = net.createServer((socket) => socket.destroy());
  server.unref();
  return new Promise((resolve) => {
    server.once("error", () => resolve(undefined));
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

/** A port nobody listens on right now: bind port 0 on loopback, read it, close. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** True once the server answers PING (PONG, or NOAUTH when it wants a password: it is up either way). */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    let reply = "";
    const done = (up: boolean) => {
      socket.destroy();
      resolve(up);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once("error", () => done(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk) => {
      reply += chunk.toString("latin1");
      if (reply.includes("\r\n")) done(reply.startsWith("+PONG") || reply.startsWith("-NOAUTH"));
    });
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
