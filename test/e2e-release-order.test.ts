// A run's end is durable before its terminal event is written: the client that read RUN_FINISHED may act on it
// at once, wherever it goes next. Real processes: gateways (the CLI) are SIGKILLed the moment the client has the
// terminal event, and the answer goes to a replica that never saw the run (shared Redis), or to a fresh process on
// the same state dir. Neither may answer THREAD_BUSY: the run that ended holds nothing any more.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { RunAgentInput } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import { streamProblems } from "./helpers/checks.js";
import { allowOnce, demoScript, ensureCliBuilt, interruptsOf, resumeInput, startCli, type CliGateway } from "./helpers/durable.js";
import { runInput } from "./helpers/e2e.js";
import { finishRun, postRun, startReplicas, type Replicas } from "./helpers/replicas.js";
import { isTerminal, type WireEvent } from "./helpers/sse.js";

/** Runs `input` to its interrupt on `gateway` and SIGKILLs the process the moment the terminal event arrives. */
async function parkThenKill(gateway: CliGateway, input: RunAgentInput): Promise<WireEvent[]> {
  const posted = await postRun(gateway.url, input);
  expect(posted.status).toBe(200);
  const terminal = await posted.live!.until(isTerminal);
  const killed = gateway.kill("SIGKILL");
  expect(terminal).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt" } });
  await killed;
  expect(streamProblems(posted.live!.events), "the stream up to its terminal event").toEqual([]);
  return posted.live!.events;
}

/** The answer is admitted (never THREAD_BUSY) and the run it starts ends in success. */
async function answerIsAdmitted(url: string, input: RunAgentInput, events: readonly WireEvent[]): Promise<void> {
  const [interrupt] = interruptsOf(events);
  const answered = await postRun(url, resumeInput(input, [allowOnce(interrupt!.id)]));
  expect(answered.status === 200 ? "admitted" : answered.json?.error?.code).toBe("admitted");
  expect((await finishRun(answered)).at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
}

describe("two replicas on one Redis: A is SIGKILLed the moment its run parks", () => {
  let replicas: Replicas;

  beforeAll(async () => {
    replicas = await startReplicas();
  }, 120_000);

  afterAll(async () => {
    await replicas?.close();
  });

  it("50 rounds: every answer sent to B is admitted", async () => {
    const ROUNDS = 50;
    const AT_ONCE = 5;
    for (let round = 0; round < ROUNDS; round += AT_ONCE) {
      await Promise.all(
        Array.from({ length: AT_ONCE }, async () => {
          const doomed = await replicas.spawn();
          const input = replicas.input({ prompt: "deploy the stack" });
          const events = await parkThenKill(doomed, input);
          await answerIsAdmitted(replicas.b.url, input, events);
        }),
      );
    }
  }, 300_000);
});

describe("one replica with a state dir: SIGKILLed the moment its run parks, then restarted", () => {
  let upstream: ScriptedA2AServer;
  let root: string;
  const children: CliGateway[] = [];

  beforeAll(async () => {
    ensureCliBuilt();
    upstream = await startScriptedA2AServer({ script: demoScript() });
    root = await mkdtemp(path.join(tmpdir(), "agui-release-"));
    await mkdir(path.join(root, "ws-1"));
  }, 120_000);

  afterAll(async () => {
    for (const child of children) await child.kill("SIGKILL");
    await upstream?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const gatewayProcess = async () => {
    const child = await startCli(["--a2a-url", upstream.url, "--port", "0", "--state-dir", path.join(root, "state")], { IAC_CODE_AGUI_ALLOWED_CWDS: root });
    children.push(child);
    return child;
  };

  it("10 rounds: the restarted process admits every answer", async () => {
    for (let round = 0; round < 10; round++) {
      const input = runInput(path.join(root, "ws-1"), { prompt: "deploy the stack" });
      const events = await parkThenKill(await gatewayProcess(), input);
      const restarted = await gatewayProcess();
      await answerIsAdmitted(restarted.url, input, events);
      await restarted.kill("SIGKILL");
    }
  }, 300_000);
});
