// Load: 100 simultaneous POSTs on one thread admit exactly one run; 1,000 runs on different threads each stream
// 1,000 numbered text deltas in order with none lost; neither file descriptors nor heap grow with the run count.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { Agent as HttpAgent } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRawA2AServer, startScriptedA2AServer, type RawA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import { startGateway, type RunningGateway } from "../src/gateway.js";
import { envelopeProblems, inputFor, mapPool, openFdCount, silentLogger, sequenceProblems, sseEvents, streamProblems } from "./helpers/faults.js";

const EVENTS_PER_RUN = 1_000;
const RUNS = 1_000;
const CONCURRENCY = 50;

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

let root: string;
let workspace: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "agui-load-"));
  workspace = path.join(root, "ws");
  await mkdir(workspace);
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe("one thread, 100 simultaneous POSTs", () => {
  let upstream: ScriptedA2AServer;
  let gateway: RunningGateway;

  beforeAll(async () => {
    // Each turn holds its stream open long enough for all 100 admissions to be decided.
    upstream = await startScriptedA2AServer({
      script: () => [
        { statusUpdate: { status: { state: "TASK_STATE_WORKING", message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text: "held" }] } } } },
        { delayMs: 1_500 },
        { statusUpdate: { status: { state: "TASK_STATE_COMPLETED" } } },
      ],
    });
    gateway = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: upstream.url, allowedRoots: [root], logger: silentLogger, validateEvents: true });
  });

  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  it("admits exactly one; the other 99 are 409 THREAD_BUSY envelopes", async () => {
    const threadId = "one-busy-thread";
    const replies = await Promise.all(
      Array.from({ length: 100 }, async () => {
        const response = await fetch(gateway.url, {
          method: "POST",
          headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
          body: JSON.stringify({ ...inputFor(workspace), threadId }),
        });
        const text = await response.text();
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        return { status: response.status, headers: { "content-type": response.headers.get("content-type") ?? undefined }, body: Buffer.from(text), text, ...(json !== undefined && { json }) };
      }),
    );
    const admitted = replies.filter((r) => r.status === 200);
    expect(admitted).toHaveLength(1);
    const { events, problems } = sseEvents(admitted[0]!.text);
    expect([...problems, ...streamProblems(events)]).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    const refused = replies.filter((r) => r.status !== 200);
    expect(refused.map((r) => (r.json as { error?: { code?: string } } | undefined)?.error?.code)).toEqual(Array.from({ length: 99 }, () => "THREAD_BUSY"));
    for (const r of refused) expect(envelopeProblems(r)).toEqual([]);
    expect(upstream.requests.filter((r) => r.method === "SendStreamingMessage")).toHaveLength(1);
  });
});

describe(`${RUNS} runs on different threads, ${EVENTS_PER_RUN} numbered deltas each`, () => {
  let upstream: RawA2AServer;
  let gateway: RunningGateway;

  beforeAll(async () => {
    // One write per turn: the upstream is not what is being measured.
    upstream = await startRawA2AServer({
      handle: (ex, res) => {
        if (ex.method !== "SendStreamingMessage") return res.json(200, { jsonrpc: "2.0", id: ex.id, result: { id: ex.params?.id, status: { state: "TASK_STATE_CANCELED" } } });
        const taskId = `task-${ex.params.message.messageId}`;
        const contextId = ex.params.message.contextId;
        const frame = (status: unknown) => `data: ${JSON.stringify({ jsonrpc: "2.0", id: ex.id, result: { statusUpdate: { taskId, contextId, status } } })}\n\n`;
        const parts = [frame({ state: "TASK_STATE_WORKING" })];
        for (let i = 0; i < EVENTS_PER_RUN; i++) parts.push(frame({ state: "TASK_STATE_WORKING", message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text: `${i};` }] } }));
        parts.push(frame({ state: "TASK_STATE_COMPLETED" }));
        res.sseStart();
        res.sseRaw(parts.join(""));
        res.end();
      },
    });
    // What the replay keeps of ended runs is bounded by design (the bench measures it); here it must be gone once
    // its retention has passed, like everything else a run leaves.
    gateway = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: upstream.url, allowedRoots: [root], logger: silentLogger, replay: { retentionSeconds: 0.1 } });
  });

  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  async function round(runs: number, agent: HttpAgent): Promise<string[]> {
    const problems = await mapPool(Array.from({ length: runs }, (_, i) => i), CONCURRENCY, async (i) => {
      const text = await new Promise<string>((resolve, reject) => {
        const body = JSON.stringify(inputFor(workspace, { prompt: `run ${i}` }));
        const url = new URL(gateway.url);
        import("node:http").then(({ request }) => {
          const req = request({ host: url.hostname, port: url.port, path: "/", method: "POST", agent, headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) } }, (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
            res.on("error", reject);
          });
          req.on("error", reject);
          req.end(body);
        }, reject);
      });
      const { events, problems } = sseEvents(text);
      // Checking every event's schema on a million events would measure the checker; the verifier runs on a sample.
      if (i % 50 === 0) problems.push(...streamProblems(events));
      if (events.at(-1)?.type !== "RUN_FINISHED") problems.push(`ended with ${events.at(-1)?.type}`);
      problems.push(...sequenceProblems(events, EVENTS_PER_RUN));
      return problems.map((p) => `run ${i}: ${p}`);
    });
    return problems.flat();
  }

  it("delivers every delta in order, and fd / heap stay flat between a warm-up and the full load", async () => {
    // Client sockets are closed before each count; what may remain is the gateway's pool to the upstream,
    // bounded by the concurrency, whereas a per-run leak would grow with the 1,000 runs.
    const settle = async (agent: HttpAgent) => {
      agent.destroy();
      await new Promise((r) => setTimeout(r, 300));
      gc();
    };
    const warm = new HttpAgent({ keepAlive: true, maxSockets: CONCURRENCY });
    expect(await round(200, warm)).toEqual([]);
    await settle(warm);
    const fdsBefore = openFdCount();
    const heapBefore = process.memoryUsage().heapUsed;

    const agent = new HttpAgent({ keepAlive: true, maxSockets: CONCURRENCY });
    const started = Date.now();
    expect((await round(RUNS, agent)).slice(0, 10)).toEqual([]);
    const seconds = (Date.now() - started) / 1000;
    console.info(`load: ${RUNS} runs × ${EVENTS_PER_RUN} events in ${seconds.toFixed(1)} s (${Math.round((RUNS * EVENTS_PER_RUN) / seconds)} events/s)`);
    await settle(agent);

    expect(gateway.runs.activeRunCount).toBe(0);
    expect(openFdCount() - fdsBefore, "file descriptors left over by the load").toBeLessThanOrEqual(2 * CONCURRENCY);
    expect(process.memoryUsage().heapUsed - heapBefore, "heap growth over the load").toBeLessThan(48 * 1024 * 1024);
  }, 110_000);
});
