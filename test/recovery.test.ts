// A gateway process killed mid-run leaves the run's A2A task running with nobody to read it (issue 14,
// item 5). The next gateway on the same state dir cancels it — at start-up, or on the thread's next access
// when the process that died was not yet gone at this gateway's start — and clears the mark.
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedA2AServer, type ScriptedA2AServer, type TurnScript } from "../src/demo/index.js";
import { startGateway, type RunningGateway } from "../src/gateway.js";
import { cancelCount, ensureCliBuilt, startCli, type CliGateway } from "./helpers/durable.js";
import { frame, openSse, postRaw, promptOf, runInput, silentLogger } from "./helpers/e2e.js";
import { sseEvents } from "./helpers/faults.js";

const SESSION = "session-recovery";
// "long": a turn that works until it is cancelled; anything else a short turn in the same iac-code session.
const script: TurnScript = (turn) =>
  promptOf(turn) === "long"
    ? [frame.working({ sessionId: SESSION, text: "working…", messageId: "m-long" }), { waitForCancel: true }]
    : [frame.working({ sessionId: SESSION, text: "done", messageId: `m-${turn.taskId}` }), frame.status("TASK_STATE_COMPLETED", { sessionId: SESSION })];

let upstream: ScriptedA2AServer;
let root: string;
let workspace: string;
let stateDir: string;
const children: CliGateway[] = [];
const gateways: RunningGateway[] = [];

beforeAll(async () => {
  ensureCliBuilt();
  upstream = await startScriptedA2AServer({ script });
  root = await mkdtemp(path.join(tmpdir(), "agui-recovery-"));
  workspace = path.join(root, "ws");
  stateDir = path.join(root, "state");
  await mkdir(workspace);
}, 120_000);

afterAll(async () => {
  for (const child of children) await child.kill("SIGKILL");
  for (const gateway of gateways) await gateway.close();
  await upstream?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

async function stored(threadId: string): Promise<{ execution: { taskId: string | null; executionId: string }; terminalExecutionIds: string[] }> {
  return JSON.parse(await readFile(path.join(stateDir, "threads", `${threadId}.json`), "utf8"));
}

/** A CLI gateway that admits a "long" run, waits until its task id is durable, and is then SIGKILLed. */
async function crashMidRun(): Promise<{ threadId: string; taskId: string; executionId: string; input: ReturnType<typeof runInput> }> {
  const child = await startCli(["--a2a-url", upstream.url, "--port", "0", "--state-dir", stateDir], { IAC_CODE_AGUI_ALLOWED_CWDS: root });
  children.push(child);
  const input = runInput(workspace, { prompt: "long" });
  const live = await openSse(child.url, input);
  expect(await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT")).toBeDefined();
  const record = await stored(input.threadId);
  expect(record.execution.taskId).not.toBeNull();
  expect(await child.kill("SIGKILL")).toEqual({ code: null, signal: "SIGKILL" });
  live.abort();
  return { threadId: input.threadId, taskId: record.execution.taskId!, executionId: record.execution.executionId, input };
}

function launch(): Promise<RunningGateway> {
  return startGateway({ host: "127.0.0.1", port: 0, a2aUrl: upstream.url, stateDir, allowedRoots: [root], logger: silentLogger }).then((g) => {
    gateways.push(g);
    return g;
  });
}

describe("a run that was active when its gateway died", () => {
  it("is cancelled upstream and its mark cleared when the next gateway starts", async () => {
    const crashed = await crashMidRun();
    expect(cancelCount(upstream, crashed.taskId)).toBe(0);
    const gateway = await launch();
    expect(await gateway.recovery).toBeGreaterThanOrEqual(1);
    expect(cancelCount(upstream, crashed.taskId)).toBe(1);
    const after = await stored(crashed.threadId);
    expect(after.execution.taskId).toBeNull();
    expect(after.terminalExecutionIds).toContain(crashed.executionId);
    // The thread serves its next turn.
    const next = await postRaw(gateway.url, { ...runInput(workspace), threadId: crashed.threadId });
    expect(next.status).toBe(200);
    expect(sseEvents(next.text).events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect((await fetch(new URL("/health", gateway.url))).status).toBe(200);
  }, 60_000);

  it("is cancelled on the thread's next access when it died after this gateway started", async () => {
    const gateway = await launch();
    await gateway.recovery;
    const crashed = await crashMidRun();
    const next = await postRaw(gateway.url, { ...runInput(workspace), threadId: crashed.threadId });
    expect(next.status).toBe(200);
    expect(sseEvents(next.text).events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(cancelCount(upstream, crashed.taskId)).toBe(1);
    expect((await stored(crashed.threadId)).terminalExecutionIds).toContain(crashed.executionId);
    expect((await fetch(new URL("/health", gateway.url))).status).toBe(200);
  }, 60_000);
});
