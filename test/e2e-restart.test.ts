// kill -9 between an interrupt and its resume: the real CLI (`node dist/src/cli.js`) with a state dir, in front
// of a scripted A2A 1.0 upstream that lives in this test process and so outlives every gateway process. The
// interrupt must be durable before it is announced, and an applied answer must never be applied twice.
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildResumeArray } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import {
  agentWithPending,
  dataPartsTo,
  demoScript,
  ensureCliBuilt,
  interruptsOf,
  resumeInput,
  runErrorOf,
  startCli,
  type CliGateway,
  type ResumeEntry,
} from "./helpers/durable.js";
import { runInput, runWithHttpAgent, sessionEventOf, typesOf } from "./helpers/e2e.js";

let upstream: ScriptedA2AServer;
let root: string;
let workspace: string;
let stateDir: string;
const children: CliGateway[] = [];

beforeAll(async () => {
  ensureCliBuilt();
  upstream = await startScriptedA2AServer({ script: demoScript() });
  root = await mkdtemp(path.join(tmpdir(), "agui-restart-"));
  workspace = path.join(root, "ws-1");
  stateDir = path.join(root, "state");
  await mkdir(workspace);
}, 120_000);

afterAll(async () => {
  for (const child of children) await child.kill("SIGKILL");
  await upstream?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

async function gatewayProcess(): Promise<CliGateway> {
  const child = await startCli(["--a2a-url", upstream.url, "--port", "0", "--state-dir", stateDir], {
    IAC_CODE_AGUI_ALLOWED_CWDS: root,
  });
  children.push(child);
  return child;
}

describe("a gateway killed with SIGKILL while an interrupt is pending", () => {
  it("a fresh process on the same state dir resumes it once; replays are RESUME_ALREADY_APPLIED, also after another kill", async () => {
    const first = await gatewayProcess();
    const input = runInput(workspace, { prompt: "deploy the stack, then crash" });
    const parked = await runWithHttpAgent(first.url, input);
    const interrupts = interruptsOf(parked.events);
    expect(interrupts).toHaveLength(1);
    const interrupt = interrupts[0]!;
    const session = sessionEventOf(parked.events);
    const taskId = session["taskId"] as string;

    // Announced means durable: the pending interrupt is on disk before the process dies.
    const file = JSON.parse(await readFile(path.join(stateDir, "threads", `${input.threadId}.json`), "utf8"));
    expect(Object.keys(file.execution.pending)).toEqual([interrupt.id]);
    expect(await first.kill("SIGKILL")).toEqual({ code: null, signal: "SIGKILL" });

    const second = await gatewayProcess();
    expect(second.url).not.toBe(first.url);
    // A new client process: its HttpAgent only knows the interrupts from the first run's outcome.
    const agent = agentWithPending(second.url, input, interrupts);
    const resume = buildResumeArray(agent.pendingInterrupts, {
      [interrupt.id]: { status: "resolved", payload: { decision: "allow_once" } },
    }) as ResumeEntry[];
    const resumed = await runWithHttpAgent(second.url, resumeInput(input, resume), { agent });
    expect(resumed.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(sessionEventOf(resumed.events)).toMatchObject({ taskId, executionId: session["executionId"] });
    expect(resumed.agent.pendingInterrupts).toEqual([]);
    const answers = dataPartsTo(upstream, taskId);
    expect(answers).toEqual([expect.objectContaining({ inputId: interrupt.id, requestTaskId: taskId, decision: "allow_once" })]);

    const replay = await runWithHttpAgent(second.url, resumeInput(input, resume));
    expect(typesOf(replay.events)).toEqual(["RUN_STARTED", "RUN_ERROR"]);
    expect(runErrorOf(replay.events).code).toBe("RESUME_ALREADY_APPLIED");
    expect(dataPartsTo(upstream, taskId)).toHaveLength(1);

    // The applied answer is durable too: another kill -9 and another process still refuse to apply it again.
    await second.kill("SIGKILL");
    const third = await gatewayProcess();
    const lateReplay = await runWithHttpAgent(third.url, resumeInput(input, resume));
    expect(typesOf(lateReplay.events)).toEqual(["RUN_STARTED", "RUN_ERROR"]);
    expect(runErrorOf(lateReplay.events).code).toBe("RESUME_ALREADY_APPLIED");
    expect(dataPartsTo(upstream, taskId)).toHaveLength(1);
    await third.kill("SIGTERM");
  }, 30_000);
});
