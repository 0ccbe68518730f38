// The demo upstream keeps its sessions in memory while the gateway's thread records outlive it (a state dir, a
// shared Redis). The demo names a context's session the same way every time it starts, so the banner's curl works
// after a restart and on every `--demo` replica; a kernel that really changes a thread's session is still refused.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedA2AServer, type TurnScript } from "../src/demo/index.js";
import { ensureCliBuilt, runBannerCurl, runErrorOf, startCli, startDurableStack, type CliGateway } from "./helpers/durable.js";
import { expectValidRun, frame, readSse, postRaw, sessionEventOf, typesOf } from "./helpers/e2e.js";
import { startRedis, type RedisServer } from "./helpers/redis.js";

describe("two --demo replicas on one Redis", () => {
  let redis: RedisServer;
  let root: string;
  let a: CliGateway;
  let b: CliGateway;

  beforeAll(async () => {
    ensureCliBuilt();
    redis = await startRedis();
    root = await mkdtemp(path.join(tmpdir(), "agui-demo-replicas-"));
    // The state dir is never used with --state-store; it is given so nothing lands in ~/.iac-code.
    const spawn = () => startCli(["--demo", "--port", "0", "--state-store", redis.url, "--state-dir", path.join(root, "state")], { IAC_CODE_CONFIG_DIR: root });
    [a, b] = await Promise.all([spawn(), spawn()]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a, b].map((child) => child?.kill("SIGKILL")));
    await redis?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("the banner's thread moves A → B → A: each replica's curl finishes it, in one session", async () => {
    const sessions: unknown[] = [];
    for (const [name, replica] of [["A", a], ["B", b], ["A again", a]] as const) {
      // A's banner names one runId, already used: the second visit sends it with a fresh one.
      const banner = name === "A again" ? replica.stdout().replace(/"runId":"[^"]+"/, `"runId":"run-again"`) : replica.stdout();
      const events = await runBannerCurl(banner, root);
      expect(events.at(-1), name).toMatchObject({ type: "RUN_FINISHED", threadId: "demo-thread-1", outcome: { type: "success" } });
      sessions.push(sessionEventOf(events)["sessionId"]);
    }
    expect(sessions[0]).toEqual(expect.any(String));
    expect(new Set(sessions).size).toBe(1);
  });
});

describe("a kernel that changes a thread's session", () => {
  /** A kernel with no session restore whose every turn runs in `sessionId` (a real kernel restarted under us). */
  const kernelIn = (sessionId: string): TurnScript => () => [
    frame.working({ sessionId, text: "ok", messageId: `m-${sessionId}` }),
    frame.status("TASK_STATE_COMPLETED", { sessionId }),
  ];

  it("is still A2A_PROTOCOL_ERROR on the thread's next turn, before anything of that turn is shown", async () => {
    const stack = await startDurableStack({ script: kernelIn("session-first-kernel") });
    const other = await startScriptedA2AServer({ script: kernelIn("session-other-kernel") });
    try {
      const first = stack.input();
      const done = readSse((await postRaw(stack.gateway.url, first)).text).events;
      expectValidRun(done);
      expect(done.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
      expect(sessionEventOf(done)["sessionId"]).toBe("session-first-kernel");

      await stack.restart({ a2aUrl: other.url });
      const reply = await postRaw(stack.gateway.url, stack.input({ threadId: first.threadId }));
      expect(reply.status).toBe(200);
      const { events } = readSse(reply.text);
      expectValidRun(events);
      expect(typesOf(events).filter((type) => type !== "CUSTOM")).toEqual(["RUN_STARTED", "RUN_ERROR"]);
      expect(runErrorOf(events)).toMatchObject({ code: "A2A_PROTOCOL_ERROR", message: "The iac-code session identity changed unexpectedly." });
    } finally {
      await other.close();
      await stack.close();
    }
  });
});
