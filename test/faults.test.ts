// Faults the other e2e files do not cover. Upstream: a stream that stalls, JSON-RPC error frames mid-stream, a
// kernel restarted between an interrupt and its resume. Disk: every recovery-critical write failing with ENOSPC,
// EROFS, EACCES or EIO at each step of the atomic replace, a read-only state dir, corrupt and symlinked thread
// files — each refused as the seeds say, the A2A task cancelled, other threads unaffected.
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRawA2AServer, type RawA2AServer, type RawExchange, type RawResponder } from "../src/demo/index.js";
import { startGateway, type RunningGateway } from "../src/gateway.js";
import { FileThreadStore } from "../src/state/file-store.js";
import type { ThreadRecord, ThreadStore } from "../src/state/thread-store.js";
import {
  FaultyFs,
  envelopeProblems,
  inputFor,
  postJson,
  silentLogger,
  runErrorCode,
  sseEvents,
  startCrashUpstream,
  streamProblems,
  type CrashUpstream,
  type Event,
  type FsOp,
} from "./helpers/faults.js";

let root: string;
let workspace: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "agui-faults-"));
  workspace = path.join(root, "ws");
  await mkdir(workspace);
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

async function waitUntil(check: () => boolean, ms = 5_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return check();
}

function runOf(reply: { status: number; text: string }): Event[] {
  expect(reply.status, reply.text.slice(0, 300)).toBe(200);
  const { events, problems } = sseEvents(reply.text);
  expect([...problems, ...streamProblems(events)]).toEqual([]);
  return events;
}

const interruptsOf = (events: Event[]) => ((events.at(-1) as { outcome?: { interrupts?: { id: string }[] } }).outcome?.interrupts ?? []);
const sessionOf = (events: Event[]) => (events.find((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1")?.["value"] ?? {}) as Record<string, string>;
const resumeOf = (first: Record<string, unknown>, interruptId: string) => ({
  ...structuredClone(first),
  runId: `resume-${Math.random()}`,
  resume: [{ interruptId, status: "resolved", payload: { decision: "allow_once" } }],
});

// ---- upstream faults ------------------------------------------------------------------------------

describe("upstream faults", () => {
  let raw: RawA2AServer;
  let gateway: RunningGateway;
  const behaviours = new Map<string, (ex: RawExchange, res: RawResponder) => Promise<void> | void>();

  beforeAll(async () => {
    raw = await startRawA2AServer({
      handle: async (ex, res) => {
        if (ex.method !== "SendStreamingMessage") {
          res.json(200, { jsonrpc: "2.0", id: ex.id, result: { id: ex.params?.id, status: { state: "TASK_STATE_CANCELED" } } });
          return;
        }
        const prompt = String(ex.params?.message?.parts?.[0]?.text ?? "");
        await behaviours.get(prompt)?.(ex, res);
      },
    });
    gateway = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: raw.url, allowedRoots: [root], upstreamIdleTimeoutSeconds: 1, logger: silentLogger, validateEvents: true });
  });

  afterAll(async () => {
    await gateway?.close();
    await raw?.close();
  });

  const working = (ex: RawExchange, taskId: string, text?: string) => ({
    statusUpdate: {
      taskId,
      contextId: ex.params.message.contextId,
      status: { state: "TASK_STATE_WORKING", ...(text !== undefined && { message: { messageId: "m1", role: "ROLE_AGENT", parts: [{ text }] } }) },
    },
  });

  it("a stream that stalls past upstreamIdleTimeoutSeconds: RUN_ERROR A2A_UNAVAILABLE, text closed, CancelTask sent", async () => {
    behaviours.set("stall", async (ex, res) => {
      res.sseStart();
      res.sseFrame(working(ex, "task-stall", "half a sent"));
      await res.closed;
    });
    const started = Date.now();
    const events = runOf(await postJson(gateway.url, inputFor(workspace, { prompt: "stall" })));
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(events.map((e) => e.type).slice(-4)).toEqual(["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_ERROR"]);
    expect(runErrorCode(events)).toBe("A2A_UNAVAILABLE");
    // Nobody reads that task any more: the seeds cancel it (reference-adapter §4.7, unexpected exception).
    expect(await waitUntil(() => raw.requests.some((r) => r.method === "CancelTask" && r.params?.id === "task-stall"))).toBe(true);
  });

  it.each([
    ["a plain error", { code: -32603, message: "internal error" }, ["A2A_EXECUTION_FAILED", "A2A_UNAVAILABLE"]],
    ["task not found", { code: -32001, message: "Task not found" }, ["A2A_EXECUTION_FAILED", "A2A_UNAVAILABLE"]],
    ["backup not ready (retryable)", { code: -32603, message: "busy", data: { code: "SESSION_BACKUP_NOT_READY", retryable: true } }, ["SESSION_BACKUP_NOT_READY"]],
  ])("a JSON-RPC error frame mid-stream (%s) ends the run with RUN_ERROR, the open text closed first", async (name, error, codes) => {
    behaviours.set(`error ${name}`, (ex, res) => {
      res.sseStart();
      res.sseFrame(working(ex, `task-${name}`, "partial "));
      res.sseError(error);
      res.end();
    });
    const events = runOf(await postJson(gateway.url, inputFor(workspace, { prompt: `error ${name}` })));
    expect(events.map((e) => e.type).slice(-2)).toEqual(["TEXT_MESSAGE_END", "RUN_ERROR"]);
    expect(codes).toContain(runErrorCode(events));
    // The kernel's own words never reach the client.
    expect(String(events.at(-1)?.["message"])).not.toContain(error.message);
  });

  it("an error frame whose error is not a JSON-RPC error object is A2A_PROTOCOL_ERROR", async () => {
    behaviours.set("bad error", (ex, res) => {
      res.sseStart();
      res.sseFrame(working(ex, "task-bad-error"));
      res.sseRaw(`event: error\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: ex.id, error: "nope" })}\n\n`);
      res.end();
    });
    expect(runErrorCode(runOf(await postJson(gateway.url, inputFor(workspace, { prompt: "bad error" }))))).toBe("A2A_PROTOCOL_ERROR");
  });
});

describe("a kernel restarted between the interrupt and the resume (same URL, empty memory)", () => {
  it("the resume is EXECUTION_LOST, a retry is EXECUTION_LOST again (never UNKNOWN_INTERRUPT), nothing is sent, and the thread runs on", async () => {
    let kernel = await startCrashUpstream();
    const port = kernel.server.port;
    const stateDir = path.join(root, "state-restart");
    const gateway = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: kernel.server.url, stateDir, allowedRoots: [root], logger: silentLogger, validateEvents: true });
    try {
      const first = inputFor(workspace, { prompt: "deploy it" });
      const [interrupt] = interruptsOf(runOf(await postJson(gateway.url, first)));
      expect(interrupt).toBeDefined();
      await kernel.close();
      kernel = await startCrashUpstream(port);
      for (let attempt = 0; attempt < 2; attempt++) {
        const reply = await postJson(gateway.url, resumeOf(first, interrupt!.id));
        const code = reply.status === 200 ? runErrorCode(runOf(reply)) : reply.json?.error?.code;
        expect(code, reply.text.slice(0, 300)).toBe("EXECUTION_LOST");
      }
      expect(kernel.received.size).toBe(0);
      const next = runOf(await postJson(gateway.url, { ...inputFor(workspace, { prompt: "hello again" }), threadId: first["threadId"] }));
      expect(next.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    } finally {
      await gateway.close();
      await kernel.close();
    }
  });
});

// ---- disk faults ---------------------------------------------------------------------------------

/** Counts the saves of each thread and arms the fault fs on the chosen one. */
class FaultAtSave implements ThreadStore {
  readonly counts = new Map<string, number>();
  plan: { threadId: string; save: number; op: FsOp; code: string } | undefined;
  constructor(
    private readonly inner: FileThreadStore,
    private readonly faulty: FaultyFs,
  ) {}

  load(threadId: string): Promise<ThreadRecord | undefined> {
    return this.inner.load(threadId);
  }

  save(record: ThreadRecord): Promise<void> {
    const n = (this.counts.get(record.threadId) ?? 0) + 1;
    this.counts.set(record.threadId, n);
    const plan = this.plan;
    if (plan && plan.threadId === record.threadId && plan.save === n) {
      this.faulty.target(record.threadId);
      this.faulty.arm(plan.op, plan.code, 1);
    }
    return this.inner.save(record);
  }

  remove(threadId: string): Promise<void> {
    return this.inner.remove(threadId);
  }
}

describe("disk faults at every recovery-critical write", () => {
  let kernel: CrashUpstream;
  let gateway: RunningGateway;
  let store: FaultAtSave;
  let faulty: FaultyFs;
  let stateDir: string;

  beforeAll(async () => {
    kernel = await startCrashUpstream();
    stateDir = path.join(root, "state-disk");
    faulty = new FaultyFs();
    store = new FaultAtSave(new FileThreadStore({ dir: stateDir, fs: faulty.fs }), faulty);
    gateway = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: kernel.server.url, store, allowedRoots: [root], logger: silentLogger, validateEvents: true });
  });

  afterAll(async () => {
    await gateway?.close();
    await kernel?.close();
  });

  const cancelledTask = (taskId: string | undefined) => waitUntil(() => taskId !== undefined && kernel.server.cancelled.includes(taskId));

  // The saves of deploy → resume on one thread: 1 admission, 2 taskId/session, 3 interrupt commit,
  // 4 resume admission, 5 resume reconcile, 6 accepted answer.
  const OPS: [FsOp, string][] = [["open-temp", "EROFS"], ["write", "ENOSPC"], ["fsync", "EIO"], ["rename", "EACCES"], ["dir-fsync", "EIO"]];

  it.each(OPS)("admission write (%s %s): 503 STATE_UNAVAILABLE, nothing sent, and the same body then runs", async (op, code) => {
    const input = inputFor(workspace, { prompt: "deploy admission" });
    store.plan = { threadId: String(input["threadId"]), save: 1, op, code };
    const before = kernel.server.requests.length;
    const refused = await postJson(gateway.url, input);
    expect(envelopeProblems(refused)).toEqual([]);
    expect([refused.status, refused.json?.error?.code]).toEqual([503, "STATE_UNAVAILABLE"]);
    expect(kernel.server.requests.length).toBe(before);
    expect(interruptsOf(runOf(await postJson(gateway.url, input)))).toHaveLength(1);
  });

  it.each(OPS)("taskId/session write (%s %s): RUN_ERROR STATE_PERSISTENCE_FAILED, no interrupt, the task cancelled", async (op, code) => {
    const input = inputFor(workspace, { prompt: "deploy session" });
    store.plan = { threadId: String(input["threadId"]), save: 2, op, code };
    const events = runOf(await postJson(gateway.url, input));
    expect(runErrorCode(events)).toBe("STATE_PERSISTENCE_FAILED");
    expect(events.some((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1")).toBe(false);
    const taskId = kernel.server.requests.findLast((r) => r.method === "SendStreamingMessage" && (r.params as any).message.contextId !== undefined && (r.params as any).message.messageId === (input["messages"] as any)[0].id);
    expect(taskId).toBeDefined();
    expect(await waitUntil(() => kernel.server.cancelled.length > 0)).toBe(true);
  });

  it.each(OPS)("interrupt commit (%s %s): STATE_PERSISTENCE_FAILED, the interrupt never announced, the task cancelled", async (op, code) => {
    const input = inputFor(workspace, { prompt: "deploy commit" });
    store.plan = { threadId: String(input["threadId"]), save: 3, op, code };
    const events = runOf(await postJson(gateway.url, input));
    expect(runErrorCode(events)).toBe("STATE_PERSISTENCE_FAILED");
    expect(await cancelledTask(sessionOf(events)["taskId"])).toBe(true);
    // Nothing pending survives: a new turn is not RESUME_REQUIRED.
    store.plan = undefined;
    const next = runOf(await postJson(gateway.url, { ...inputFor(workspace, { prompt: "plain" }), threadId: input["threadId"] }));
    expect(next.at(-1)).toMatchObject({ type: "RUN_FINISHED" });
  });

  async function parked(prompt: string) {
    const input = inputFor(workspace, { prompt });
    store.plan = undefined;
    const events = runOf(await postJson(gateway.url, input));
    const [interrupt] = interruptsOf(events);
    expect(interrupt).toBeDefined();
    return { input, interruptId: interrupt!.id, taskId: sessionOf(events)["taskId"]! };
  }

  it.each(OPS)("resume admission (%s %s): 503 STATE_UNAVAILABLE, the interrupt stays pending and a retry applies it once", async (op, code) => {
    const p = await parked("deploy resume-admission");
    store.plan = { threadId: String(p.input["threadId"]), save: 4, op, code };
    const refused = await postJson(gateway.url, resumeOf(p.input, p.interruptId));
    expect([refused.status, refused.json?.error?.code]).toEqual([503, "STATE_UNAVAILABLE"]);
    expect(kernel.received.get(p.interruptId)).toBeUndefined();
    const retried = runOf(await postJson(gateway.url, resumeOf(p.input, p.interruptId)));
    expect(retried.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(kernel.applied.get(p.interruptId)).toBe(1);
  });

  it.each(OPS)("resume reconcile (%s %s): STATE_PERSISTENCE_FAILED before the answer is sent, the task cancelled", async (op, code) => {
    const p = await parked("deploy reconcile");
    store.plan = { threadId: String(p.input["threadId"]), save: 5, op, code };
    const events = runOf(await postJson(gateway.url, resumeOf(p.input, p.interruptId)));
    expect(runErrorCode(events)).toBe("STATE_PERSISTENCE_FAILED");
    expect(kernel.received.get(p.interruptId)).toBeUndefined();
    expect(await cancelledTask(p.taskId)).toBe(true);
  });

  it.each(OPS)("accepted-answer commit (%s %s): STATE_PERSISTENCE_FAILED, the answer applied once, the task cancelled", async (op, code) => {
    const p = await parked("deploy accept");
    store.plan = { threadId: String(p.input["threadId"]), save: 6, op, code };
    const events = runOf(await postJson(gateway.url, resumeOf(p.input, p.interruptId)));
    expect(runErrorCode(events)).toBe("STATE_PERSISTENCE_FAILED");
    expect(kernel.applied.get(p.interruptId)).toBe(1);
    expect(await cancelledTask(p.taskId)).toBe(true);
  });
});

describe("a read-only state dir, corrupt and symlinked thread files", () => {
  let kernel: CrashUpstream;
  let gateway: RunningGateway;
  let faulty: FaultyFs;
  let stateDir: string;

  beforeAll(async () => {
    kernel = await startCrashUpstream();
    stateDir = path.join(root, "state-ro");
    faulty = new FaultyFs();
    gateway = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: kernel.server.url, store: new FileThreadStore({ dir: stateDir, fs: faulty.fs }), allowedRoots: [root], logger: silentLogger, validateEvents: true });
  });

  afterAll(async () => {
    await gateway?.close();
    await kernel?.close();
  });

  it.each([["EROFS"], ["EACCES"]])("every write failing with %s: new threads are 503 STATE_UNAVAILABLE while a thread on a healthy path runs", async (code) => {
    const blocked = inputFor(workspace, { prompt: "plain" });
    faulty.target(String(blocked["threadId"]));
    for (const op of ["mkdir", "chmod", "open-temp", "write", "fsync", "rename"] as FsOp[]) faulty.arm(op, code);
    try {
      const [refused, healthy] = await Promise.all([postJson(gateway.url, blocked), postJson(gateway.url, inputFor(workspace, { prompt: "plain" }))]);
      expect(envelopeProblems(refused)).toEqual([]);
      expect([refused.status, refused.json?.error?.code]).toEqual([503, "STATE_UNAVAILABLE"]);
      expect(runOf(healthy).at(-1)).toMatchObject({ type: "RUN_FINISHED" });
      expect(faulty.injected.some((i) => i.code === code)).toBe(true);
    } finally {
      faulty.disarm();
    }
  });

  it.each([
    ["corrupt JSON", async (file: string) => writeFile(file, '{"schemaVersion":1,"threadId":', { mode: 0o600 })],
    ["a valid document for another thread", async (file: string) => writeFile(file, JSON.stringify({ schemaVersion: 1, threadId: "someone-else" }), { mode: 0o600 })],
    ["a symlink to a valid file", async (file: string) => {
      await writeFile(`${file}.real`, "{}", { mode: 0o600 });
      await symlink(`${file}.real`, file);
    }],
  ])("%s: POST / and the cancel route answer 503 STATE_UNAVAILABLE for that thread only", async (_name, damage) => {
    const input = inputFor(workspace, { prompt: "deploy then damage" });
    const events = runOf(await postJson(gateway.url, input));
    const session = sessionOf(events);
    const file = new FileThreadStore({ dir: stateDir }).fileFor(String(input["threadId"]));
    await rm(file);
    await damage(file);
    const next = await postJson(gateway.url, { ...inputFor(workspace, { prompt: "again" }), threadId: input["threadId"] });
    // The thread is still cached while its interrupt is pending, so a restart-free gateway may still serve it;
    // a fresh gateway must refuse it.
    const fresh = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: kernel.server.url, stateDir, allowedRoots: [root], logger: silentLogger });
    try {
      for (const reply of [
        await postJson(fresh.url, resumeOf(input, interruptsOf(events)[0]!.id)),
        await postJson(`${fresh.url}extensions/iac-code/v1/executions/${session["executionId"]}/cancel`, { threadId: input["threadId"], rosInvocationId: "invocation-1" }),
      ]) {
        expect(envelopeProblems(reply), reply.text).toEqual([]);
        expect([reply.status, reply.json?.error?.code]).toEqual([503, "STATE_UNAVAILABLE"]);
      }
      const other = runOf(await postJson(fresh.url, inputFor(workspace, { prompt: "plain" })));
      expect(other.at(-1)).toMatchObject({ type: "RUN_FINISHED" });
    } finally {
      await fresh.close();
    }
    expect(next.status).toBeLessThan(500);
  });
});
