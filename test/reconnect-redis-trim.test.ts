// A fast run on replica A, read from replica B through Redis by a client that keeps cutting its connection after a
// random number of records and reconnecting with Last-Event-ID: the run outpaces the reader and its copy is trimmed
// behind it, yet every answer continues exactly at its cursor, or is refused (REPLAY_EXPIRED); never a gap.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect, it } from "vitest";
import { startRawA2AServer } from "../src/demo/index.js";
import { startGateway } from "../src/gateway.js";
import { runInput, silentLogger } from "./helpers/e2e.js";
import { startRedis } from "./helpers/redis.js";
import { SseSplitter } from "./helpers/sse.js";

const FRAMES = 100_000;
const BURST = 2_000;

it("a reader on another replica that falls behind the trimmed copy is cut, never handed a gap", async () => {
  const redis = await startRedis();
  // The kernel streams a turn of 100k text frames in bursts, as fast as the gateway takes them.
  const upstream = await startRawA2AServer({
    handle: (ex, res) => {
      if (ex.method !== "SendStreamingMessage") return res.json(200, { jsonrpc: "2.0", id: ex.id, result: { id: ex.params?.id, status: { state: "TASK_STATE_CANCELED" } } });
      const taskId = `task-${ex.params.message.messageId}`;
      const contextId = ex.params.message.contextId;
      const frame = (status: unknown) => `data: ${JSON.stringify({ jsonrpc: "2.0", id: ex.id, result: { statusUpdate: { taskId, contextId, status } } })}\n\n`;
      res.sseStart();
      res.sseRaw(frame({ state: "TASK_STATE_WORKING" }));
      let sent = 0;
      const burst = () => {
        const frames: string[] = [];
        for (; frames.length < BURST && sent < FRAMES; sent++) {
          frames.push(frame({ state: "TASK_STATE_WORKING", message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text: `${sent};` }] } }));
        }
        res.sseRaw(frames.join(""));
        if (sent < FRAMES) return void setImmediate(burst);
        res.sseRaw(frame({ state: "TASK_STATE_COMPLETED" }));
        res.end();
      };
      burst();
    },
  });
  const root = await mkdtemp(path.join(tmpdir(), "agui-redis-trim-"));
  const options = { host: "127.0.0.1", port: 0, a2aUrl: upstream.url, allowedRoots: [root], logger: silentLogger, stateStore: redis.url, reconnectGraceSeconds: 10 };
  const a = await startGateway(options);
  const b = await startGateway(options);
  try {
    const body = runInput(root);
    const gaps: string[] = [];
    let last = 0;
    let finished = false;
    for (let connection = 0; connection < 200 && !finished; connection++) {
      const controller = new AbortController();
      const response = await fetch(connection === 0 ? a.url : b.url, {
        method: "POST",
        headers: { "Content-Type": "application/json", ...(connection > 0 && { "Last-Event-ID": `${body.runId}:${last}` }) },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (response.status !== 200) {
        expect({ status: response.status, code: ((await response.json()) as { error: { code: string } }).error.code }).toEqual({ status: 409, code: "REPLAY_EXPIRED" });
        break;
      }
      const splitter = new SseSplitter();
      const cutAfter = 1 + Math.floor(Math.random() * 10_000);
      let read = 0;
      try {
        for await (const chunk of response.body!) {
          for (const record of splitter.pushRecords(chunk as Uint8Array)) {
            const seq = Number(record.id!.slice(record.id!.lastIndexOf(":") + 1));
            if (seq !== last + 1) gaps.push(`connection ${connection}: ${seq} after ${last}`);
            last = seq;
            read += 1;
            if (record.event.type === "RUN_FINISHED") finished = true;
          }
          if (finished || read >= cutAfter) break;
        }
      } catch {
        // The gateway cut a reader that fell behind: reconnect from the last record.
      }
      controller.abort();
    }
    expect(gaps).toEqual([]);
    expect(last).toBeGreaterThan(1_000);
  } finally {
    await a.close();
    await b.close();
    await upstream.close();
    await redis.stop();
    await rm(root, { recursive: true, force: true });
  }
}, 120_000);
