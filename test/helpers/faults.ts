// Plumbing for the fault, fuzz, crash-point and load tests, shared with `npm run soak` (bench/soak.ts). Nothing
// here imports vitest: checks return lists of problems (strings), and the caller asserts the list is empty, so
// the soak can run the same checks outside the test runner.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { runInput, type InputOverrides } from "./run-input.js";
import { readdirSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import fc from "fast-check";
import type { A2AMessage, A2AStreamResponse, JsonObject } from "../../operators/types.js";
import { RequestMalformedError } from "@a2a-js/sdk/errors";
import { startScriptedA2AServer, type ScriptItem, type ScriptedA2AServer, type TurnContext } from "../../src/demo/index.js";
import { startGateway, type RunningGateway } from "../../src/gateway.js";
import type { FsLayer } from "../../src/state/file-store.js";
import { FileThreadStore } from "../../src/state/file-store.js";
import { isObject } from "../../operators/lib/json.js";
import { parseSse, type WireEvent as Event } from "./sse.js";
import { streamProblems } from "./checks.js";
import { silentLogger } from "./logger.js";
import { httpCall, postJson, type Reply } from "./http.js";
import { statusFrame } from "./frames.js";

export { httpCall, postJson, type Reply } from "./http.js";

export { RUN_ERROR_CODES, streamProblems } from "./checks.js";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const CLI = path.join(REPO, "dist", "src", "cli.js");

export { silentLogger } from "./logger.js";

/** Every code a pre-SSE JSON envelope may carry (seeds' table + the HTTP layer's own). */
export const ENVELOPE_CODES: ReadonlySet<string> = new Set([
  "UNAUTHORIZED",
  "USER_ID_MISMATCH",
  "AUTH_UNAVAILABLE",
  "REQUEST_HEADERS_TOO_LARGE",
  "USER_RUN_LIMIT",
  "USER_RATE_LIMITED",
  "UNSUPPORTED_MEDIA_TYPE",
  "REQUEST_TOO_LARGE",
  "INVALID_JSON",
  "INVALID_INPUT",
  "NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "STATE_UNAVAILABLE",
  "DUPLICATE_RUN_ID",
  "RUN_ID_CONFLICT",
  "THREAD_BUSY",
  "THREAD_BINDING_CONFLICT",
  "RESUME_REQUIRED",
  "INCOMPLETE_RESUME",
  "UNKNOWN_INTERRUPT",
  "RESUME_PAYLOAD_INVALID",
  "RESUME_ALREADY_APPLIED",
  "EXECUTION_EXPIRED",
  "EXECUTION_LOST",
  "EXECUTION_NOT_FOUND",
  "STATE_PERSISTENCE_FAILED",
  "A2A_UNAVAILABLE",
  "A2A_PROTOCOL_ERROR",
  "A2A_EXECUTION_FAILED",
  "CANCELLED",
  "SERVER_BUSY",
  "REQUEST_TIMEOUT",
]);

export type { WireEvent as Event } from "./sse.js";

/** A valid RunAgentInput with fresh ids for workspace `cwd`, as a plain JSON object to mutate. */
export function inputFor(cwd: string, overrides: { prompt?: string; iacCode?: JsonObject; [key: string]: unknown } = {}): Record<string, unknown> {
  return runInput(cwd, overrides as InputOverrides) as unknown as Record<string, unknown>;
}

/** SSE bytes → events, with a problem for every record that breaks the framing contract. */
export function sseEvents(text: string): { events: Event[]; problems: string[] } {
  const { events, problems } = parseSse(text);
  return { events, problems };
}

/** A refusal must be exactly {"error":{"code","message"}} with a known code and a < 500 status (503 only for state). */
export function envelopeProblems(reply: Reply): string[] {
  const problems: string[] = [];
  // The 5xx the seeds allow: 503 for a thread whose state cannot be read or written.
  // Plus 503 SERVER_BUSY: the shared request-body budget is spent (issue 14).
  const stateCodes = ["STATE_UNAVAILABLE", "STATE_PERSISTENCE_FAILED", "SERVER_BUSY"];
  if (reply.status >= 500 && !(reply.status === 503 && stateCodes.includes(reply.json?.error?.code))) problems.push(`status ${reply.status}`);
  if (!String(reply.headers["content-type"] ?? "").startsWith("application/json")) problems.push(`content-type ${String(reply.headers["content-type"])}`);
  const json = reply.json as { error?: { code?: unknown; message?: unknown } } | undefined;
  if (!json || Object.keys(json).join() !== "error" || !json.error) return [...problems, `not an envelope: ${reply.text.slice(0, 120)}`];
  if (Object.keys(json.error).sort().join() !== "code,message") problems.push(`envelope keys ${Object.keys(json.error).join()}`);
  if (!ENVELOPE_CODES.has(String(json.error.code))) problems.push(`unknown code ${String(json.error.code)}`);
  if (typeof json.error.message !== "string" || json.error.message === "") problems.push("no message");
  return problems;
}

/** An answer to POST /: a refusal envelope or a 200 SSE stream that is a valid AG-UI run. */
export function replyProblems(reply: Reply): string[] {
  if (reply.status === 200 && String(reply.headers["content-type"] ?? "").startsWith("text/event-stream")) {
    const { events, problems } = sseEvents(reply.text);
    return [...problems, ...streamProblems(events)];
  }
  return envelopeProblems(reply);
}

/** POST / with `input`, read to its end: its status, its events, and every problem replyProblems finds in it. */
export async function readRun(url: string, input: unknown): Promise<{ status: number; events: Event[]; problems: string[] }> {
  const reply = await postJson(url, input);
  const { events } = sseEvents(reply.text);
  return { status: reply.status, events, problems: replyProblems(reply) };
}

/** Events less what differs from one run to the next: the clock, and the thread, run, execution and context ids. */
export function comparableEvents(events: readonly Event[]): unknown[] {
  return events.map((event) => {
    const { timestamp: _t, threadId: _th, runId: _r, ...rest } = event as Record<string, unknown>;
    return JSON.parse(JSON.stringify(rest).replaceAll(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<uuid>").replaceAll(/agui-[0-9a-f]{40}/g, "<context>"));
  });
}

export function runErrorCode(events: readonly Event[]): string | undefined {
  const last = events.at(-1);
  return last?.type === "RUN_ERROR" ? String(last["code"]) : undefined;
}

/** Runs `fn` over `items` with at most `limit` in flight; results in input order. */
export async function mapPool<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  });
  await Promise.all(workers);
  return results;
}

export function openFdCount(): number {
  return readdirSync("/proc/self/fd").length;
}

// ---- an fs layer with injected errno failures -----------------------------------------------------

export type FsOp = "mkdir" | "chmod" | "open-temp" | "write" | "fsync" | "rename" | "dir-fsync" | "read";

export function errnoError(code: string, op: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected failure, ${op}`), { code, errno: -1, syscall: op });
}

/**
 * A FileThreadStore fs layer that fails chosen operations with a chosen errno, only for thread files whose path
 * contains `only` (so other threads in the same directory stay healthy). `arm(op, code, times)` fails the next
 * `times` calls of `op`; `failing` can be toggled for every op at once (a read-only disk).
 */
export class FaultyFs {
  private readonly armed = new Map<FsOp, { code: string; times: number }>();
  readonly injected: { op: FsOp; code: string; file: string }[] = [];
  constructor(private only: string | undefined = undefined) {}

  target(only: string | undefined): void {
    this.only = only;
  }

  arm(op: FsOp, code: string, times = Number.POSITIVE_INFINITY): void {
    this.armed.set(op, { code, times });
  }

  disarm(): void {
    this.armed.clear();
  }

  /** The store writes and reads through handles: remember which file each one is. */
  private readonly paths = new WeakMap<object, string>();
  private pathOf(handle: unknown): string {
    return typeof handle === "object" && handle !== null ? (this.paths.get(handle) ?? "") : String(handle);
  }

  private check(op: FsOp, file: string): void {
    const rule = this.armed.get(op);
    if (!rule || rule.times <= 0) return;
    if (this.only !== undefined && !file.includes(this.only) && op !== "dir-fsync") return;
    rule.times--;
    this.injected.push({ op, code: rule.code, file });
    throw errnoError(rule.code, op);
  }

  readonly fs: Partial<FsLayer> = {
    mkdir: (async (p: Parameters<typeof fsp.mkdir>[0], o: Parameters<typeof fsp.mkdir>[1]) => {
      this.check("mkdir", String(p));
      return fsp.mkdir(p, o);
    }) as FsLayer["mkdir"],
    chmod: (async (p: Parameters<typeof fsp.chmod>[0], m: Parameters<typeof fsp.chmod>[1]) => {
      this.check("chmod", String(p));
      return fsp.chmod(p, m);
    }) as FsLayer["chmod"],
    open: (async (p: Parameters<typeof fsp.open>[0], flags?: string | number, mode?: number) => {
      const file = String(p);
      const isTemp = file.endsWith(".tmp");
      const isDir = flags === "r" && !file.endsWith(".json");
      if (isTemp) this.check("open-temp", file);
      const handle = await fsp.open(p, flags, mode);
      this.paths.set(handle, file);
      if (isTemp || isDir) {
        const sync = handle.sync.bind(handle);
        handle.sync = async () => {
          this.check(isTemp ? "fsync" : "dir-fsync", file);
          return sync();
        };
      }
      return handle;
    }) as FsLayer["open"],
    writeFile: (async (h: Parameters<typeof fsp.writeFile>[0], data: string, o: Parameters<typeof fsp.writeFile>[2]) => {
      this.check("write", this.pathOf(h));
      return fsp.writeFile(h, data, o);
    }) as FsLayer["writeFile"],
    rename: (async (from: Parameters<typeof fsp.rename>[0], to: Parameters<typeof fsp.rename>[1]) => {
      this.check("rename", String(to));
      return fsp.rename(from, to);
    }) as FsLayer["rename"],
    readFile: (async (h: Parameters<typeof fsp.readFile>[0], o?: Parameters<typeof fsp.readFile>[1]) => {
      this.check("read", this.pathOf(h));
      return fsp.readFile(h, o);
    }) as FsLayer["readFile"],
  };
}

// ---- an upstream that numbers its text deltas (load) -------------------------------------------

/** A turn of `count` text deltas "<i>;" in one message, then COMPLETED; the client checks the sequence. */
export function* numberedTurn(count: number): Generator<ScriptItem> {
  yield statusFrame("TASK_STATE_WORKING", { sessionId: "load-session" });
  for (let i = 0; i < count; i++) yield statusFrame("TASK_STATE_WORKING", { text: `${i};`, messageId: "m-load" });
  yield statusFrame("TASK_STATE_COMPLETED");
}

/** Problems with a numbered run: deltas must read 0;1;2;…;count-1; exactly. */
export function sequenceProblems(events: readonly Event[], count: number): string[] {
  const text = events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => String(e["delta"])).join("");
  const numbers = text.split(";").slice(0, -1).map(Number);
  if (numbers.length !== count) return [`${numbers.length} deltas, expected ${count}`];
  const gap = numbers.findIndex((n, i) => n !== i);
  return gap >= 0 ? [`delta ${gap} is ${numbers[gap]}`] : [];
}

// ---- crash points -------------------------------------------------------------------------------

export const CRASH_PHASES = ["before-write", "after-write", "after-fsync", "after-rename", "after-dir-fsync"] as const;
export type CrashPhase = (typeof CRASH_PHASES)[number];
export interface CrashPoint {
  save: number;
  phase: CrashPhase;
}

/** A permission wait the crash upstream holds for a task. */
interface Parked {
  inputId: string;
  toolUseId: string;
}

/**
 * The kernel for crash tests: "deploy …" parks its task on one permission; an answer for exactly that pending
 * permission is applied (counted in `applied`) and finishes the turn; any other answer is refused with -32602,
 * like iac-code. It outlives every gateway process, so it is the witness of what was applied.
 */
export interface CrashUpstream {
  server: ScriptedA2AServer;
  /** inputId → how many times the kernel applied an answer for it. */
  applied: Map<string, number>;
  /** inputId → how many answer messages arrived for it (applied or refused). */
  received: Map<string, number>;
  close(): Promise<void>;
}

export async function startCrashUpstream(port?: number): Promise<CrashUpstream> {
  const parked = new Map<string, Parked>();
  const applied = new Map<string, number>();
  const received = new Map<string, number>();
  const status = (turn: TurnContext, state: string, iac: JsonObject = {}, text?: string): A2AStreamResponse =>
    statusFrame(state, {
      taskId: turn.taskId,
      contextId: turn.contextId,
      ...(text !== undefined && { text, messageId: `${turn.taskId}-${turn.turnIndex}` }),
      iac: { iacCodeSessionId: `session-${turn.contextId}`, ...iac },
    });
  const script = function* (turn: TurnContext): Generator<ScriptItem> {
    const answer = answerOf(turn.userMessage);
    if (answer) {
      const inputId = String(answer["inputId"]);
      received.set(inputId, (received.get(inputId) ?? 0) + 1);
      const wait = parked.get(turn.taskId);
      if (!wait || wait.inputId !== inputId) throw new RequestMalformedError("permission_resume_invalid: no pending permission for this task");
      parked.delete(turn.taskId);
      applied.set(inputId, (applied.get(inputId) ?? 0) + 1);
      yield status(turn, "TASK_STATE_WORKING", { inputReceived: { kind: "permission", inputId, toolUseId: wait.toolUseId } });
      yield status(turn, "TASK_STATE_WORKING", { tool: { status: "completed", toolUseId: wait.toolUseId, name: "ros_deploy", result: "done" } });
      yield status(turn, "TASK_STATE_WORKING", {}, "Deployed.");
      yield status(turn, "TASK_STATE_INPUT_REQUIRED");
      return;
    }
    const prompt = (turn.userMessage.parts ?? []).map((p) => p.text ?? "").join("");
    yield status(turn, "TASK_STATE_WORKING");
    yield status(turn, "TASK_STATE_WORKING", {}, `On it: ${prompt}.`);
    if (!/deploy/.test(prompt)) {
      yield status(turn, "TASK_STATE_INPUT_REQUIRED");
      return;
    }
    const wait = { inputId: `permission-${turn.taskId}`, toolUseId: `call-${turn.taskId}` };
    parked.set(turn.taskId, wait);
    yield status(turn, "TASK_STATE_WORKING", { tool: { status: "started", toolUseId: wait.toolUseId, name: "ros_deploy" } });
    yield status(turn, "TASK_STATE_INPUT_REQUIRED", {
      input: {
        schemaVersion: 1,
        kind: "permission",
        requestTaskId: turn.taskId,
        contextId: turn.contextId,
        inputId: wait.inputId,
        toolUseId: wait.toolUseId,
        toolName: "ros_deploy",
        title: "Deploy",
        prompt: "Deploy - allow once?",
        options: [
          { id: "allow_once", label: "Allow once" },
          { id: "deny", label: "Deny" },
        ],
        required: true,
      },
    });
  };
  const server = await startScriptedA2AServer({ script, ...(port !== undefined && { port }) });
  return { server, applied, received, close: () => server.close() };
}

function answerOf(message: A2AMessage): JsonObject | undefined {
  for (const part of message.parts ?? []) {
    const data = part.data as JsonObject | undefined;
    if (data && typeof data === "object" && data["kind"] === "permission") return data;
  }
  return undefined;
}

export interface CrashOutcome {
  point: CrashPoint;
  /** The gateway process died of SIGKILL at the point (false: the scenario never reached that save). */
  crashed: boolean;
  /** Where in the scenario the process died. */
  stage: string;
  problems: string[];
}

interface CliChild {
  url: string;
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Loaded into the crash-point CLI with `node --import`: the crash hook lives in the test, not in src/. */
const CRASH_POINT_PRELOAD = pathToFileURL(path.join(REPO, "test", "helpers", "crash-point-preload.mjs")).href;

function spawnCli(args: string[], env: Record<string, string>, timeoutMs = 20_000): Promise<CliChild> {
  const child = spawn(process.execPath, ["--import", CRASH_POINT_PRELOAD, CLI, ...args], { cwd: REPO, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  let out = "";
  let err = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the CLI did not start: ${out}${err}`));
    }, timeoutMs);
    child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve({ url: match[1]!, child, exited });
      }
    });
    void exited.then((e) => {
      clearTimeout(timer);
      reject(new Error(`the CLI exited (${e.code ?? e.signal}) before listening: ${out}${err}`));
    });
  });
}

/** POST / that tolerates the gateway dying mid-stream: `dead` when the connection broke. */
async function tryRun(url: string, body: unknown): Promise<{ dead: true } | { dead: false; reply: Reply; events: Event[] }> {
  try {
    const reply = await postJson(url, body);
    const events = reply.status === 200 ? sseEvents(reply.text).events : [];
    // A stream cut by the kill has no terminal event: the same as a broken connection.
    if (reply.status === 200 && !["RUN_FINISHED", "RUN_ERROR"].includes(events.at(-1)?.type ?? "")) return { dead: true };
    return { dead: false, reply, events };
  } catch {
    return { dead: true };
  }
}

/**
 * One crash point: a real CLI with IAC_CODE_AGUI_TEST_CRASH_POINT (crash-point-preload.mjs) runs deploy → interrupt → resume → next turn on
 * a fresh state dir until it kills itself; then a clean in-process gateway on the same dir must find every thread
 * file intact and every interrupt either resumable (answer applied once) or cleanly refused.
 */
export async function runCrashPoint(upstream: CrashUpstream, root: string, point: CrashPoint): Promise<CrashOutcome> {
  const dir = await fsp.mkdtemp(path.join(root, `p${point.save}-${point.phase}-`));
  const workspace = path.join(dir, "ws");
  const stateDir = path.join(dir, "state");
  await fsp.mkdir(workspace);
  const problems: string[] = [];
  const first = inputFor(workspace, { prompt: "deploy the stack" });
  const child = await spawnCli(["--a2a-url", upstream.server.url, "--port", "0", "--state-dir", stateDir], {
    IAC_CODE_AGUI_ALLOWED_CWDS: dir,
    IAC_CODE_AGUI_TEST_CRASH_POINT: `${point.save}:${point.phase}`,
  });
  let stage = "completed";
  let announced: string | undefined;
  let resumed = false;
  const resumeOf = (interruptId: string) => ({
    ...structuredClone(first),
    runId: randomUUID(),
    resume: [{ interruptId, status: "resolved", payload: { decision: "allow_once" } }],
  });
  try {
    const turn = await tryRun(child.url, first);
    if (turn.dead) stage = "turn";
    else {
      problems.push(...replyProblems(turn.reply).map((p) => `turn: ${p}`));
      const last = turn.events.at(-1) as { outcome?: { type: string; interrupts?: { id: string }[] } } | undefined;
      announced = last?.outcome?.interrupts?.[0]?.id;
      if (!announced) problems.push(`turn did not end at an interrupt: ${turn.reply.text.slice(-300)}`);
      else {
        const resume = await tryRun(child.url, resumeOf(announced));
        if (resume.dead) stage = "resume";
        else {
          resumed = true;
          problems.push(...replyProblems(resume.reply).map((p) => `resume: ${p}`));
          const next = await tryRun(child.url, { ...inputFor(workspace, { prompt: "and now list it" }), threadId: first["threadId"] });
          if (next.dead) stage = "next turn";
          else problems.push(...replyProblems(next.reply).map((p) => `next turn: ${p}`));
        }
      }
    }
  } finally {
    // A save after the client has its terminal event would break "end before announce": give such a crash point a
    // moment to show itself (the test expects none).
    if (stage === "completed") await Promise.race([child.exited, new Promise((resolve) => setTimeout(resolve, 1_000))]);
    if (child.child.exitCode === null && child.child.signalCode === null) {
      if (stage === "completed") stage = "never";
      child.child.kill("SIGKILL");
    } else if (stage === "completed") stage = "after the last run";
  }
  const exit = await child.exited;
  const crashed = exit.signal === "SIGKILL" && stage !== "never";
  if (stage !== "never" && exit.signal !== "SIGKILL") problems.push(`the gateway died at ${stage} without the crash point (${exit.code ?? exit.signal})`);

  problems.push(...(await threadFileProblems(stateDir)));
  const threadId = String(first["threadId"]);
  const store = new FileThreadStore({ dir: stateDir });
  let record: Awaited<ReturnType<FileThreadStore["load"]>>;
  try {
    record = await store.load(threadId);
  } catch (error) {
    problems.push(`the thread does not load after the crash: ${String(error)}`);
    return { point, crashed, stage, problems };
  }
  const pendingIds = Object.keys(record?.execution.pending ?? {});
  if (announced !== undefined && !resumed && !pendingIds.includes(announced) && (upstream.applied.get(announced) ?? 0) === 0) {
    problems.push("an announced interrupt is neither pending on disk nor applied");
  }

  // A clean gateway on the same directory: what a client holding the interrupt (announced, or recovered by
  // another client from the durable pending set) gets when it resumes.
  const gateway = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: upstream.server.url, stateDir, allowedRoots: [dir], logger: silentLogger });
  try {
    const interruptId = announced ?? pendingIds[0];
    if (interruptId !== undefined) {
      const before = upstream.applied.get(interruptId) ?? 0;
      const resume = await postJson(gateway.url, resumeOf(interruptId));
      problems.push(...replyProblems(resume).map((p) => `resume after restart: ${p}`));
      const events = resume.status === 200 ? sseEvents(resume.text).events : [];
      const last = events.at(-1);
      const code = resume.status === 200 ? runErrorCode(events) : (resume.json?.error?.code as string | undefined);
      const after = upstream.applied.get(interruptId) ?? 0;
      if (last?.type === "RUN_FINISHED") {
        if (after !== 1 || before !== 0) problems.push(`resume succeeded but the kernel applied the answer ${after} times (${before} before)`);
      } else if (code !== "EXECUTION_LOST" && code !== "RESUME_ALREADY_APPLIED") {
        problems.push(`resume after restart ended with ${resume.status} ${code ?? last?.type}, not success/EXECUTION_LOST/RESUME_ALREADY_APPLIED`);
      }
    }
    // The thread is usable afterwards: a plain turn (or, when an interrupt is still pending, RESUME_REQUIRED).
    const again = await postJson(gateway.url, { ...inputFor(workspace, { prompt: "are you there" }), threadId });
    problems.push(...replyProblems(again).map((p) => `turn after restart: ${p}`));
    const ok = again.status === 200 ? sseEvents(again.text).events.at(-1)?.type === "RUN_FINISHED" : again.json?.error?.code === "RESUME_REQUIRED";
    if (!ok) problems.push(`turn after restart: ${again.status} ${again.text.slice(-200)}`);
  } finally {
    await gateway.close();
  }
  for (const [inputId, n] of upstream.applied) if (n > 1) problems.push(`answer ${inputId} applied ${n} times`);
  await fsp.rm(dir, { recursive: true, force: true });
  return { point, crashed, stage, problems };
}

/** Every *.json in threads/ parses as an object; temp files may be left but are named so nothing reads them. */
export async function threadFileProblems(stateDir: string): Promise<string[]> {
  const problems: string[] = [];
  const threads = path.join(stateDir, "threads");
  let names: string[];
  try {
    names = await fsp.readdir(threads);
  } catch {
    return problems;
  }
  for (const name of names) {
    if (name.endsWith(".tmp")) {
      if (!name.startsWith(".")) problems.push(`temp file not hidden: ${name}`);
      continue;
    }
    if (!name.endsWith(".json")) {
      problems.push(`unexpected file ${name}`);
      continue;
    }
    try {
      const doc = JSON.parse(await fsp.readFile(path.join(threads, name), "utf8")) as { schemaVersion?: unknown };
      if (doc.schemaVersion !== 1) problems.push(`${name}: schemaVersion ${String(doc.schemaVersion)}`);
    } catch (error) {
      problems.push(`${name} is corrupt: ${String(error)}`);
    }
  }
  return problems;
}

export type { RunningGateway };

// ---- fuzz: hostile requests against POST / and the other routes ------------------------------------

export interface FuzzContext {
  /** The allowed root and a workspace under it. */
  root: string;
  workspace: string;
  token: string;
}

export interface RequestCase {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | Uint8Array | undefined;
  /** What the body was built from, for the failure message. */
  kind: string;
}

const HOSTILE_IDS = [
  "../../etc/passwd", "..", ".", "a\u0000b", "CON", "nul.json", "Com1", "x".repeat(5_000), "\u{1F642}".repeat(80),
  "UPPER-case", "__proto__", "constructor", "/abs/path", "a/b\\c", " ", "\t\n", "trailing.", "\ud800", "%2e%2e%2f",
];

/** Header-safe text (node:http refuses bytes outside tab, 0x20–0x7e, 0x80–0xff). */
function headerText(maxLength: number) {
  return fc
    .array(fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff })), { maxLength })
    .map((codes) => String.fromCharCode(...codes));
}

export function requestCaseArbitrary(ctx: FuzzContext) {
  const anyJson = fc.jsonValue({ maxDepth: 4 });
  const hostileString = fc.oneof(fc.constantFrom(...HOSTILE_IDS), fc.string({ maxLength: 40 }), fc.string({ unit: "binary", maxLength: 40 }));
  const valid = () => inputFor(ctx.workspace) as Record<string, any>;
  const keys = ["threadId", "runId", "state", "messages", "tools", "context", "forwardedProps", "resume", "parentRunId"];
  const iacKeys = ["schemaVersion", "rosInvocationId", "cwd", "model", "llmApiKey", "thinking", "userId", "channel", "preferredLanguage",
    "candidatePresentation", "runMode", "pipelineName", "cleanupOnly", "alibabaCloud", "llmHeaders", "unknownKey"];
  const part = fc.oneof(
    fc.record({ type: fc.constant("text"), text: fc.oneof(fc.string({ maxLength: 50 }), anyJson) }),
    fc.record({
      type: fc.constantFrom("image", "audio", "video", "document", "binary", "bogus"),
      source: fc.oneof(
        fc.record({ type: fc.constant("data"), mimeType: fc.constantFrom("image/png", "image/gif", "text/html", "", "image/svg+xml"), value: fc.oneof(fc.base64String({ maxLength: 64 }), fc.string({ maxLength: 20 })) }),
        fc.record({ type: fc.constant("url"), value: fc.webUrl() }),
        anyJson,
      ),
    }),
    anyJson,
  );
  const message = fc.record(
    { id: fc.oneof(fc.string({ maxLength: 10 }), anyJson), role: fc.constantFrom("user", "assistant", "system", "tool", "developer", "activity", "nobody"), content: fc.oneof(fc.string({ maxLength: 60 }), fc.array(part, { maxLength: 4 }), anyJson) },
    { requiredKeys: ["role"] },
  );
  const resumeEntry = fc.record(
    { interruptId: fc.oneof(fc.string({ maxLength: 20 }), anyJson), status: fc.constantFrom("resolved", "cancelled", "bogus"), payload: anyJson },
    { requiredKeys: [] },
  );
  const object = fc.oneof(
    { weight: 3, arbitrary: fc.record({ threadId: hostileString, runId: hostileString }).map((ids) => ({ kind: "hostile ids", value: { ...valid(), ...ids } })) },
    { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...keys), anyJson).map(([k, v]) => ({ kind: `top-level ${k}`, value: { ...valid(), [k]: v } })) },
    { weight: 1, arbitrary: fc.constantFrom(...keys).map((k) => { const v = valid(); delete v[k]; return { kind: `without ${k}`, value: v }; }) },
    { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...iacKeys), anyJson).map(([k, v]) => { const x = valid(); x.forwardedProps.iacCode[k] = v; return { kind: `iacCode.${k}`, value: x }; }) },
    { weight: 2, arbitrary: fc.oneof(fc.constantFrom("..", "../..", "relative/dir", "/etc", "/proc/self", "\u0000", "", "/"), hostileString.map((s) => `${ctx.root}/${s}`), hostileString.map((s) => `${ctx.root}/../${s}`))
      .map((cwd) => { const x = valid(); x.forwardedProps.iacCode.cwd = cwd; return { kind: "cwd", value: x }; }) },
    { weight: 3, arbitrary: fc.array(message, { maxLength: 4 }).map((messages) => ({ kind: "messages", value: { ...valid(), messages } })) },
    { weight: 2, arbitrary: fc.array(resumeEntry, { maxLength: 3 }).map((resume) => ({ kind: "resume", value: { ...valid(), resume } })) },
    { weight: 1, arbitrary: fc.constantFrom("__proto__", "constructor", "prototype").map((k) => ({ kind: `${k} key`, value: JSON.parse(`{"${k}":{"polluted":true},${JSON.stringify(valid()).slice(1)}`) as unknown })) },
  );
  const bytes = fc.oneof(
    fc.uint8Array({ maxLength: 300 }).map((b) => ({ kind: "random bytes", body: b as string | Uint8Array })),
    fc.nat({ max: 400 }).map((n) => ({ kind: "truncated JSON", body: JSON.stringify(valid()).slice(0, n) })),
    fc.constant({ kind: "BOM + JSON", body: `\ufeff${JSON.stringify(valid())}` }),
    fc.tuple(fc.nat({ max: 300 }), fc.uint8Array({ minLength: 1, maxLength: 4 })).map(([at, bad]) => {
      const text = Buffer.from(JSON.stringify(valid()));
      const cut = Math.min(at, text.length);
      return { kind: "bytes spliced into JSON", body: Buffer.concat([text.subarray(0, cut), Buffer.from(bad.map((b) => b | 0x80)), text.subarray(cut)]) as Uint8Array };
    }),
    anyJson.map((v) => ({ kind: "any JSON", body: JSON.stringify(v) })),
    fc.constantFrom("1e99999", "[".repeat(200) + "]".repeat(200), `{"a":${"9".repeat(5000)}}`, "null", '""', "{}").map((body) => ({ kind: "odd JSON", body })),
  );
  const body = fc.oneof(
    { weight: 5, arbitrary: object.map(({ kind, value }) => ({ kind, body: JSON.stringify(value) as string | Uint8Array })) },
    { weight: 2, arbitrary: bytes },
  );
  const headers = fc.record({
    contentType: fc.oneof({ weight: 6, arbitrary: fc.constant("application/json") }, { weight: 1, arbitrary: fc.constantFrom("application/json; charset=utf-8", "APPLICATION/JSON ", "text/plain", "", "application/jsonx", "multipart/form-data; boundary=x") }, { weight: 1, arbitrary: headerText(30) }),
    auth: fc.oneof({ weight: 6, arbitrary: fc.constant(`Bearer ${ctx.token}`) }, { weight: 2, arbitrary: fc.constantFrom("", "Bearer", `bearer ${ctx.token}`, `Bearer  ${ctx.token}`, `Basic ${ctx.token}`, `Bearer ${ctx.token}x`, `Bearer \u00e9t\u00e9`) }, { weight: 1, arbitrary: headerText(60) }),
    language: fc.oneof(fc.constantFrom("", "ja", "pt-BR", "*", "de;q=abc", "zh-CN,zh;q=0.9", "fr;q=1e400"), headerText(40)),
    accept: fc.constantFrom("text/event-stream", "*/*", "", "application/json", "text/html;q=0.1"),
    extra: fc.dictionary(fc.constantFrom("X-Forwarded-For", "Cookie", "X-Request-Id", "Transfer-Encoding-Hint", "Expect-Hint"), headerText(40), { maxKeys: 2 }),
  });
  const route = fc.oneof(
    { weight: 12, arbitrary: fc.constant({ method: "POST", path: "/" }) },
    { weight: 1, arbitrary: fc.record({ method: fc.constantFrom("POST", "GET", "PUT", "DELETE", "PATCH", "OPTIONS"), path: fc.oneof(fc.constantFrom("/", "/health", "/metrics", "/extensions/iac-code/v1/executions/x/cancel", "/extensions/iac-code/v1/executions/%2e%2e/subscribe", "//", "/a/../b", "/%00"), fc.array(fc.string({ maxLength: 8 }).map(encodeURIComponent), { maxLength: 4 }).map((s) => `/${s.join("/")}`)) }) },
  );
  return fc.tuple(route, body, headers).map(([r, b, h]): RequestCase => {
    const out: Record<string, string> = { ...h.extra };
    if (h.contentType) out["Content-Type"] = h.contentType;
    if (h.auth) out["Authorization"] = h.auth;
    if (h.language) out["Accept-Language"] = h.language;
    if (h.accept) out["Accept"] = h.accept;
    return { method: r.method, path: r.path, headers: out, body: r.method === "GET" ? undefined : b.body, kind: b.kind };
  });
}

/** One hostile request: never a 5xx or a dropped connection; a refusal is a known envelope; a 200 run is valid AG-UI. */
export async function requestCaseProblems(baseUrl: string, c: RequestCase): Promise<string[]> {
  let reply: Reply;
  try {
    reply = await httpCall(baseUrl, { path: c.path, method: c.method, headers: c.headers, ...(c.body !== undefined && { body: c.body }) });
  } catch (error) {
    return [`no answer: ${String(error)}`];
  }
  const where = `${c.method} ${c.path} [${c.kind}] → ${reply.status}`;
  const type = String(reply.headers["content-type"] ?? "");
  let problems: string[];
  if (reply.status === 200 && c.path === "/health") problems = [];
  else if (reply.status === 200 && c.path === "/metrics") problems = type.startsWith("text/plain") ? [] : [`metrics type ${type}`];
  else if (reply.status === 200 && type.startsWith("application/json")) {
    problems = ["cancelled", "already_terminal"].includes(reply.json?.status) ? [] : [`200 JSON ${reply.text.slice(0, 100)}`];
  } else problems = replyProblems(reply);
  return problems.map((p) => `${where}: ${p}`);
}

// ---- fuzz: hostile A2A frames ---------------------------------------------------------------------

export type FrameStep =
  | { kind: "frame"; result: unknown }
  | { kind: "raw"; text: string }
  | { kind: "error"; error: unknown }
  | { kind: "destroy" };

export interface A2ACase {
  steps: FrameStep[];
  /** The first step makes the stream unreadable: the run must end with A2A_PROTOCOL_ERROR. */
  mustBeProtocolError: boolean;
}

export function a2aCaseArbitrary(options: { hugeBytes?: number } = {}) {
  const anyJson = fc.jsonValue({ maxDepth: 3 });
  const state = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom("TASK_STATE_WORKING", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_SUBMITTED", "TASK_STATE_REJECTED", "TASK_STATE_AUTH_REQUIRED") },
    { weight: 1, arbitrary: fc.oneof(fc.constantFrom("BOGUS", "", "completed"), anyJson) },
  );
  const text = fc.oneof(
    { weight: 8, arbitrary: fc.string({ maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
    { weight: 1, arbitrary: anyJson },
    ...(options.hugeBytes ? [{ weight: 1, arbitrary: fc.constant("h".repeat(options.hugeBytes)) }] : []),
  );
  const iac = fc.oneof(
    fc.constant({}),
    fc.record({ thinking: fc.record({ type: fc.constantFrom("raw_thinking", "tool_trace", "x"), text }, { requiredKeys: [] }) }, { requiredKeys: [] }),
    fc.record({ tool: fc.record({ status: fc.constantFrom("started", "input_delta", "input_complete", "completed", "failed", "??"), toolUseId: fc.constantFrom("t1", "t2", ""), name: fc.string({ maxLength: 8 }), result: anyJson }, { requiredKeys: [] }) }),
    fc.record({ usage: fc.record({ inputTokens: anyJson, outputTokens: fc.nat() }, { requiredKeys: [] }) }),
    fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 3 }),
  );
  const statusUpdate = fc.record(
    {
      status: fc.record({ state, message: fc.record({ messageId: fc.constantFrom("m1", "m2"), role: fc.constantFrom("ROLE_AGENT", "ROLE_USER", "x"), parts: fc.oneof(fc.array(fc.record({ text }, { requiredKeys: [] }), { maxLength: 3 }), anyJson) }, { requiredKeys: [] }) }, { requiredKeys: [] }),
      metadata: fc.oneof(iac.map((i) => ({ iac_code: i })), anyJson),
      taskId: fc.oneof({ weight: 9, arbitrary: fc.constant("TASK") }, { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 6 }), anyJson) }),
      unknownField: anyJson,
    },
    { requiredKeys: ["status"] },
  );
  const result = fc.oneof(
    { weight: 8, arbitrary: statusUpdate.map((s) => ({ statusUpdate: s })) },
    { weight: 1, arbitrary: fc.record({ artifactUpdate: fc.record({ artifact: fc.record({ artifactId: fc.string({ maxLength: 5 }), parts: fc.array(fc.record({ text }, { requiredKeys: [] }), { maxLength: 2 }) }, { requiredKeys: [] }), append: anyJson }, { requiredKeys: [] }) }) },
    { weight: 1, arbitrary: fc.oneof(anyJson, fc.record({ statusUpdate: statusUpdate, task: anyJson }), fc.constant({})) },
  );
  const broken = fc.oneof(
    fc.string({ maxLength: 30 }).map((s) => `data: {${s.replace(/\n/g, " ")}\n\n`),
    fc.constantFrom("data: not json\n\n", "data: [1,2\n\n", 'data: {"jsonrpc":"2.0","id":1}\n\n', "data: 42\n\n", 'data: {"jsonrpc":"2.0","result":null}\n\n'),
  );
  const odd = fc.constantFrom(": keep-alive\n\n", "event: ping\ndata: {\"jsonrpc\":\"2.0\",\"result\":{\"statusUpdate\":{\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n", "retry: 10\n\n", "\n\n", "id: 7\n");
  const step: fc.Arbitrary<FrameStep> = fc.oneof(
    { weight: 10, arbitrary: result.map((r): FrameStep => ({ kind: "frame", result: r })) },
    { weight: 1, arbitrary: broken.map((t): FrameStep => ({ kind: "raw", text: t })) },
    { weight: 1, arbitrary: odd.map((t): FrameStep => ({ kind: "raw", text: t })) },
    { weight: 1, arbitrary: fc.oneof(fc.record({ code: fc.integer({ min: -32700, max: -32000 }), message: fc.string({ maxLength: 20 }), data: anyJson }, { requiredKeys: ["code"] }), anyJson).map((e): FrameStep => ({ kind: "error", error: e })) },
    { weight: 1, arbitrary: fc.constant<FrameStep>({ kind: "destroy" }) },
  );
  return fc.oneof(
    { weight: 5, arbitrary: fc.array(step, { minLength: 1, maxLength: 8 }).map((steps): A2ACase => ({ steps, mustBeProtocolError: false })) },
    { weight: 1, arbitrary: fc.tuple(broken, fc.array(step, { maxLength: 3 })).map(([first, rest]): A2ACase => ({
      steps: [{ kind: "raw", text: first }, ...rest],
      // A reset right behind the bad record may reach the client first: then it is the transport that failed.
      mustBeProtocolError: !rest.some((s) => s.kind === "destroy"),
    })) },
  );
}

/** A raw upstream that plays `cases[i]` for a user message "case-<i>"; every other call gets a canceled task. */
export function a2aFuzzHandler(cases: Map<number, A2ACase>) {
  return async (ex: import("../../src/demo/index.js").RawExchange, res: import("../../src/demo/index.js").RawResponder): Promise<void> => {
    if (ex.method !== "SendStreamingMessage") {
      res.json(200, { jsonrpc: "2.0", id: ex.id, result: { id: String(ex.params?.id ?? "TASK"), contextId: "", status: { state: "TASK_STATE_CANCELED" } } });
      return;
    }
    const message = ex.params?.message as A2AMessage | undefined;
    const contextId = String(message?.contextId ?? "");
    const index = Number(/case-(\d+)/.exec((message?.parts ?? []).map((p) => p.text ?? "").join(""))?.[1] ?? -1);
    const c = cases.get(index);
    res.sseStart();
    for (const s of c?.steps ?? []) {
      if (s.kind === "frame") {
        const fill = (value: unknown): unknown => {
          if (!isObject(value)) return value;
          const out: Record<string, unknown> = { ...value };
          for (const key of ["statusUpdate", "artifactUpdate"]) {
            const inner = out[key];
            if (isObject(inner)) out[key] = { contextId, ...inner, taskId: inner["taskId"] === "TASK" || inner["taskId"] === undefined ? `task-${index}` : inner["taskId"] };
          }
          return out;
        };
        res.sseFrame(fill(s.result));
      } else if (s.kind === "raw") res.sseRaw(s.text);
      else if (s.kind === "error") res.sseRaw(`event: error\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: ex.id, error: s.error })}\n\n`);
      else {
        res.destroy();
        return;
      }
    }
    res.end();
  };
}


const A2A_RUN_CODES = new Set(["A2A_PROTOCOL_ERROR", "A2A_UNAVAILABLE", "A2A_EXECUTION_FAILED", "CANCELLED", "SESSION_BACKUP_NOT_READY"]);

/** One A2A fuzz run: 200, a valid AG-UI stream, and a terminal that is a success or an A2A-side error. */
export async function a2aCaseProblems(gatewayUrl: string, workspace: string, index: number, c: A2ACase): Promise<string[]> {
  let reply: Reply;
  try {
    reply = await postJson(gatewayUrl, inputFor(workspace, { prompt: `case-${index}` }));
  } catch (error) {
    return [`case ${index}: no answer: ${String(error)}`];
  }
  const where = `case ${index} ${JSON.stringify(c.steps).slice(0, 300)}`;
  if (reply.status !== 200) return [`${where}: status ${reply.status} ${reply.text.slice(0, 200)}`];
  const { events, problems } = sseEvents(reply.text);
  problems.push(...streamProblems(events));
  const code = runErrorCode(events);
  if (code !== undefined && !A2A_RUN_CODES.has(code)) problems.push(`RUN_ERROR ${code}`);
  if (c.mustBeProtocolError && code !== "A2A_PROTOCOL_ERROR") problems.push(`expected A2A_PROTOCOL_ERROR, got ${code ?? events.at(-1)?.type}`);
  return problems.map((p) => `${where}: ${p}`);
}
