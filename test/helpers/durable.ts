// Plumbing for the durable-thread end-to-end tests: resume inputs built from a finished run, what the
// upstream received on a task, a FileThreadStore whose renames can be made to fail, a gateway that can
// be restarted on the same state dir, and the real CLI as a child process.
import { execFile, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import * as fsp from "node:fs/promises";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { HttpAgent, type Interrupt, type RunAgentInput } from "@ag-ui/client";
import { expect } from "vitest";
import type { A2AMessage, JsonObject } from "../../operators/types.js";
import { demoSessionId, startScriptedA2AServer, type ScriptedA2AServer, type TurnScript } from "../../src/demo/index.js";
import { startGateway, type GatewayOptions, type RunningGateway } from "../../src/gateway.js";
import type { ResumeEntry } from "../../src/runs/input.js";
import type { FsLayer } from "../../src/state/file-store.js";
import { expectValidRun, frame, promptOf, readSse, runInput, silentLogger, slowTurn, type InputOverrides, type WireEvent } from "./e2e.js";
import { e2eDemoScript } from "./pacing.js";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const CLI_PATH = path.join(REPO, "dist", "src", "cli.js");

export type { ResumeEntry };

// ---- runs and their interrupts -----------------------------------------------------------------

/** An agent for a resume in a new process: its pendingInterrupts are the first run's outcome. */
export function agentWithPending(url: string, input: RunAgentInput, interrupts: Interrupt[]): HttpAgent {
  const agent = new HttpAgent({ url, threadId: input.threadId, initialMessages: input.messages, initialState: input.state });
  agent.pendingInterrupts = interrupts;
  return agent;
}

/** The interrupts of a run that ended with RUN_FINISHED outcome interrupt (fails otherwise). */
export function interruptsOf(events: readonly WireEvent[]): Interrupt[] {
  const last = events.at(-1);
  expect(last?.type, "the run ends with RUN_FINISHED").toBe("RUN_FINISHED");
  const outcome = last!["outcome"] as { type: string; interrupts?: Interrupt[] };
  expect(outcome.type).toBe("interrupt");
  return outcome.interrupts ?? [];
}

/** The RUN_ERROR that ends a run (fails otherwise). */
export function runErrorOf(events: readonly WireEvent[]): { code?: string; message: string } {
  const last = events.at(-1);
  expect(last?.type, "the run ends with RUN_ERROR").toBe("RUN_ERROR");
  return last as unknown as { code?: string; message: string };
}

/** A resume of `first`'s thread: same threadId and forwardedProps, a new runId, the given answers. */
export function resumeInput(first: RunAgentInput, resume: ResumeEntry[], overrides: Partial<RunAgentInput> = {}): RunAgentInput {
  return { ...structuredClone(first), runId: randomUUID(), resume, ...overrides };
}

/** The iacCode extension of an input, for tests that change one field of it. */
export function iacCodeOf(input: RunAgentInput): JsonObject {
  return (input.forwardedProps as { iacCode: JsonObject }).iacCode;
}

export const allowOnce = (interruptId: string): ResumeEntry => ({ interruptId, status: "resolved", payload: { decision: "allow_once" } });

// ---- what the upstream saw -----------------------------------------------------------------------

export interface SentMessage {
  method: string;
  message: A2AMessage;
}

/** Every message (streaming or not) the upstream received for `taskId`, in order. */
export function messagesToTask(upstream: ScriptedA2AServer, taskId: string): SentMessage[] {
  return upstream.requests.flatMap((r) => {
    if (r.method !== "SendStreamingMessage" && r.method !== "SendMessage") return [];
    const message = (r.params as { message?: A2AMessage }).message;
    return message && message.taskId === taskId ? [{ method: r.method, message }] : [];
  });
}

/** The data parts among those messages: the permission answers the kernel got. */
export function dataPartsTo(upstream: ScriptedA2AServer, taskId: string): JsonObject[] {
  return messagesToTask(upstream, taskId).flatMap((m) => (m.message.parts ?? []).flatMap((p) => (p.data ? [p.data as JsonObject] : [])));
}

export function cancelCount(upstream: ScriptedA2AServer, taskId: string): number {
  return upstream.cancelled.filter((id) => id === taskId).length;
}

/** The demo agent at the run's pacing (pacing.ts): "deploy" asks a ros_deploy permission, the answer goes to the same task. */
export function demoScript(): TurnScript {
  return e2eDemoScript();
}

/** The demo agent, plus "slow …" (streams for 10 s) and "fail …" (the kernel's task fails at once). */
export function demoWithSlowAndFailing(): TurnScript {
  const demo = demoScript();
  return (turn) => {
    const prompt = promptOf(turn);
    if (prompt.startsWith("slow")) return slowTurn(demoSessionId(turn.contextId));
    if (prompt.startsWith("fail")) return [frame.working({ sessionId: demoSessionId(turn.contextId) }), frame.status("TASK_STATE_FAILED", { text: "boom" })];
    return demo(turn);
  };
}

// ---- a FileThreadStore whose atomic replace can fail --------------------------------------------

/**
 * An fs layer for FileThreadStore: `rename` (the atomic replace that makes a save durable) throws ENOSPC
 * once `failAfter(n)` allowed n more successful saves. Each attempted save is recorded with whether the
 * document it was about to publish held a pending interrupt.
 */
export class RenameFault {
  private successes = 0;
  private limit = Number.POSITIVE_INFINITY;
  readonly attempts: { failed: boolean; hasPending: boolean; threadId: string }[] = [];

  readonly fs: Partial<FsLayer> = {
    rename: (async (from: Parameters<typeof fsp.rename>[0], to: Parameters<typeof fsp.rename>[1]) => {
      const doc = JSON.parse(await fsp.readFile(from, "utf8")) as { threadId: string; execution: { pending: object } };
      const hasPending = Object.keys(doc.execution.pending).length > 0;
      const failed = this.successes >= this.limit;
      this.attempts.push({ failed, hasPending, threadId: doc.threadId });
      if (failed) throw Object.assign(new Error("ENOSPC: no space left on device, rename"), { code: "ENOSPC", errno: -28 });
      await fsp.rename(from, to);
      this.successes++;
    }) as FsLayer["rename"],
  };

  /** Let `n` more saves succeed, then fail every one after them. */
  failAfter(n: number): void {
    this.limit = this.successes + n;
  }

  heal(): void {
    this.limit = Number.POSITIVE_INFINITY;
  }
}

// ---- an in-process gateway that can be restarted -----------------------------------------------

export interface DurableStack {
  upstream: ScriptedA2AServer;
  gateway: RunningGateway;
  /** The allowed root; `workspace` and `otherWorkspace` live below it. */
  root: string;
  workspace: string;
  otherWorkspace: string;
  stateDir: string;
  input(overrides?: InputOverrides): RunAgentInput;
  /** Stops the gateway and starts a fresh one (empty memory) on the same state dir and upstream. */
  restart(options?: Partial<GatewayOptions>): Promise<RunningGateway>;
  close(): Promise<void>;
}

export interface DurableStackOptions {
  script?: TurnScript;
  upstreamToken?: string;
  /** Default: a FileThreadStore on `stateDir` (pass `store` here to replace it). */
  gateway?: Partial<GatewayOptions>;
  /** Bring an upstream the test controls (it is closed with the stack). */
  upstream?: ScriptedA2AServer;
}

export async function startDurableStack(options: DurableStackOptions = {}): Promise<DurableStack> {
  const upstream =
    options.upstream ??
    (await startScriptedA2AServer({
      script: options.script ?? demoScript(),
      ...(options.upstreamToken !== undefined && { token: options.upstreamToken }),
    }));
  const root = await mkdtemp(path.join(tmpdir(), "agui-durable-"));
  const workspace = path.join(root, "ws-1");
  const otherWorkspace = path.join(root, "ws-2");
  const stateDir = path.join(root, "state");
  await mkdir(workspace);
  await mkdir(otherWorkspace);
  const launch = (extra: Partial<GatewayOptions> = {}) =>
    startGateway({
      host: "127.0.0.1",
      port: 0,
      a2aUrl: upstream.url,
      allowedRoots: [root],
      logger: silentLogger,
      // The gateway's own self-check, as in the shared e2e stacks: every closed gateway must report no violation.
      validateEvents: true,
      ...(options.gateway?.store === undefined && { stateDir }),
      ...options.gateway,
      ...extra,
    });
  let gateway: RunningGateway;
  try {
    gateway = await launch();
  } catch (error) {
    await upstream.close();
    throw error;
  }
  let violations = 0;
  const stop = async (running: RunningGateway) => {
    violations += (await running.metrics.validationViolations.get()).values.reduce((n, v) => n + v.value, 0);
    await running.close();
  };
  const stack: DurableStack = {
    upstream,
    gateway,
    root,
    workspace,
    otherWorkspace,
    stateDir,
    input: (overrides) => runInput(workspace, overrides),
    restart: async (extra) => {
      await stop(stack.gateway);
      stack.gateway = await launch(extra);
      return stack.gateway;
    },
    close: async () => {
      await stop(stack.gateway);
      await upstream.close();
      await rm(root, { recursive: true, force: true });
      expect(violations, "events the gateway's --validate-events self-check flagged").toBe(0);
    },
  };
  return stack;
}

/** POST to the cancel extension. */
export async function postCancel(
  gatewayUrl: string,
  executionId: string,
  body: { threadId: string; rosInvocationId: string },
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any }> {
  const response = await fetch(new URL(`extensions/iac-code/v1/executions/${encodeURIComponent(executionId)}/cancel`, gatewayUrl), {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = { unparsed: text };
  }
  return { status: response.status, json };
}

// ---- the real CLI ----------------------------------------------------------------------------

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(full));
    else if (entry.name.endsWith(".ts") && !/\.(spec|test)\.ts$/.test(entry.name)) newest = Math.max(newest, statSync(full).mtimeMs);
  }
  return newest;
}

/**
 * Builds dist/ (tsc -p tsconfig.build.json) when dist/src/cli.js is missing or older than a source file. tsc
 * emits even when some other in-progress file has a type error, so the build counts as done when cli.js is
 * fresh afterwards.
 */
export function ensureCliBuilt(): void {
  // The console page (vite) is not needed here: the CLI only serves it with --console/--demo.
  const sources = Math.max(...["src", "operators", "marbles"].map((d) => newestMtime(path.join(REPO, d))));
  if (existsSync(CLI_PATH) && statSync(CLI_PATH).mtimeMs >= sources) return;
  const started = Date.now();
  const result = spawnSync(process.execPath, [path.join(REPO, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"], {
    cwd: REPO,
    encoding: "utf8",
    timeout: 120_000,
  });
  const fresh = existsSync(CLI_PATH) && statSync(CLI_PATH).mtimeMs >= started - 1_000;
  if (!fresh) throw new Error(`could not build dist/: ${result.stdout}${result.stderr}`);
}

export interface CliGateway {
  url: string;
  child: ChildProcess;
  /** Everything the process wrote to stdout (its banner). */
  stdout(): string;
  /** Everything the process wrote to stderr (its logs). */
  stderr(): string;
  /** Resolves with the exit signal/code once the process is gone. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The CLI on `upstreamUrl`, its state in `<root>/state`, `root` the workspaces' allowed root, a free port. */
export function startCliOnState(upstreamUrl: string, root: string, args: string[] = [], env: Record<string, string> = {}): Promise<CliGateway> {
  return startCli(["--a2a-url", upstreamUrl, "--port", "0", "--state-dir", path.join(root, "state"), ...args], { IAC_CODE_AGUI_ALLOWED_CWDS: root, ...env });
}

/**
 * Spawns `node dist/src/cli.js <args>` and waits for its "listening on <url>" line (at most `timeoutMs`: the bound is for
 * a process that never comes up; on a loaded machine a start takes seconds). The child gets this process's environment
 * with `env` over it, less the variables named in `unset`.
 */
export function startCli(args: string[], env: Record<string, string>, timeoutMs = 30_000, unset: readonly string[] = []): Promise<CliGateway> {
  const inherited = { ...process.env };
  for (const name of unset) delete inherited[name];
  const child = spawn(process.execPath, [CLI_PATH, ...args], {
    cwd: REPO,
    env: { ...inherited, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the CLI did not start within ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      resolve({
        url: match[1]!,
        child,
        stdout: () => stdout,
        stderr: () => stderr,
        exited,
        kill: (signal = "SIGTERM") => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        },
      });
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the CLI exited (${code ?? signal}) before listening:\n${stdout}\n${stderr}`));
    });
  });
}

/**
 * The CLI banner's "Try it" command exactly as printed (its continuation line included), run by a shell with the
 * real curl in `cwd`; the events it printed, each valid, the run well-formed.
 */
export async function runBannerCurl(bannerText: string, cwd: string): Promise<WireEvent[]> {
  const command = /^ {2}curl -N [^\n]*\\\n {4}-d '[^\n]*$/m.exec(bannerText)?.[0];
  expect(command, bannerText).toBeDefined();
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile("sh", ["-c", `${command!} -sS --max-time 30`], { cwd, timeout: 40_000 }, (error, out, err) =>
      error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out),
    ),
  );
  const { events } = readSse(stdout);
  expect(events.length, stdout).toBeGreaterThan(0);
  expectValidRun(events);
  return events;
}
