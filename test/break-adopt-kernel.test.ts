// Breaking adoption (src/runs/adopt.ts) from the kernel's side: a task that fails while no gateway runs, and a kernel
// that goes away while the restarted gateway follows the adopted task. Each test has a kernel of its own.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { EventSchema } from "@ag-ui/core/schemas";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { demoSessionId, startScriptedA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import { ensureCliBuilt, startCliOnState, type CliGateway } from "./helpers/durable.js";
import { frame, openSse, promptOf, runInput, slowTurn, type WireEvent } from "./helpers/e2e.js";

const FAILING = "fail after a while";

let current: CliGateway | undefined;
let upstream: ScriptedA2AServer | undefined;
let root: string | undefined;

async function setUp() {
  upstream = await startScriptedA2AServer({
    script: (turn) => {
      const sessionId = demoSessionId(turn.contextId);
      if (promptOf(turn) === FAILING) {
        return [frame.working({ sessionId }), ...Array.from({ length: 10 }, (_, i) => [frame.working({ text: `tick ${i} `, messageId: "m-f" }), { delayMs: 40 }]).flat(), frame.status("TASK_STATE_FAILED", { text: "boom" })] as never;
      }
      return slowTurn(sessionId, 60, 40);
    },
  });
  root = await mkdtemp(path.join(tmpdir(), "agui-break-adopt-k-"));
  await mkdir(path.join(root, "ws-1"));
}
const start = async () => {
  current = await startCliOnState(upstream!.url, root!, ["--reconnect-grace", "30"]);
};
const url = (p = "") => new URL(p, current!.url).toString();
const count = (events: readonly WireEvent[], type: string) => events.filter((e) => e.type === type).length;

async function orphan(prompt: string, pauseMs = 0) {
  await start();
  const input = runInput(path.join(root!, "ws-1"), { prompt, threadId: randomUUID() });
  const first = await openSse(url(), input);
  await first.until(() => count(first.events, "TEXT_MESSAGE_CONTENT") >= 2);
  const taskId = /"taskId":"([^"]+)"/.exec(JSON.stringify(first.events))![1]!;
  await current!.kill("SIGKILL");
  first.abort();
  if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
  await start();
  return { input, taskId };
}

describe("adoption when the kernel's task fails or the kernel goes away", () => {
  beforeAll(() => ensureCliBuilt(), 120_000);
  afterEach(async () => {
    await current?.kill("SIGKILL");
    current = undefined;
    await upstream?.close();
    upstream = undefined;
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("the task fails while no gateway runs: the connect ends with the run's RUN_ERROR, the thread idle", async () => {
    await setUp();
    const { input, taskId } = await orphan(FAILING, 1_000);
    const c = await openSse(url("connect"), { threadId: input.threadId, runId: randomUUID(), forwardedProps: input.forwardedProps });
    const events = await c.rest();
    for (const event of events) expect(() => EventSchema.parse(event)).not.toThrow();
    expect(events[0]?.type).toBe("RUN_STARTED");
    expect(events.at(-1)?.type, JSON.stringify(events.at(-1))).toBe("RUN_ERROR");
    expect(upstream!.cancelled).not.toContain(taskId);
    const status = (await (await fetch(url(`threads/${input.threadId}`))).json()) as { status: string };
    expect(status.status).toBe("idle");
  }, 60_000);

  it("the kernel goes away while the adopted task is followed: the connect ends, the thread is not left running", async () => {
    await setUp();
    const { input } = await orphan("write a long text");
    const c = await openSse(url("connect"), { threadId: input.threadId, runId: randomUUID(), forwardedProps: input.forwardedProps });
    await c.until((e) => e.type === "RUN_STARTED");
    await new Promise((r) => setTimeout(r, 300));
    await upstream!.close();
    upstream = undefined;
    const events = await c.rest(15_000);
    for (const event of events) expect(() => EventSchema.parse(event)).not.toThrow();
    const status = (await (await fetch(url(`threads/${input.threadId}`))).json()) as { status: string };
    expect(status.status).not.toBe("running");
    // The run's own terminal event (A2A_UNAVAILABLE), even when the conversation cannot be read from the kernel.
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(["RUN_STARTED"]));
    expect(["RUN_ERROR", "RUN_FINISHED"], `last event ${JSON.stringify(events.at(-1))}`).toContain(events.at(-1)?.type);
  }, 60_000);
});
