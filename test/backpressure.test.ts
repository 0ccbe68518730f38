// A client that stops reading must stop the gateway reading upstream: the kernel's socket backs up
// instead of the gateway's memory growing. When the client reads again, every event arrives in order.
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type RunningGateway } from "../src/gateway.js";
import { runInput, silentLogger, waitFor } from "./helpers/e2e.js";

const FRAMES = 200_000;
let upstream: Server;
let gateway: RunningGateway;
let written = 0;
let finished = false;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c));
    req.on("end", () => {
      const { id, params } = JSON.parse(body) as { id: string; params: { message: { contextId: string } } };
      const contextId = params.message.contextId;
      const frame = (result: unknown) => `data: ${JSON.stringify({ jsonrpc: "2.0", id, result })}\n\n`;
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      let i = 0;
      const pump = () => {
        while (i < FRAMES) {
          const text = { statusUpdate: { taskId: "t", contextId, status: { state: "TASK_STATE_WORKING", message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text: `${i} ` }] } } } };
          i++;
          written = i;
          if (!res.write(frame(text))) return void res.once("drain", pump);
        }
        res.end(frame({ statusUpdate: { taskId: "t", contextId, status: { state: "TASK_STATE_INPUT_REQUIRED" } } }));
        finished = true;
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  gateway = await startGateway({
    host: "127.0.0.1",
    port: 0,
    a2aUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/`,
    allowedRoots: [process.cwd()],
    logger: silentLogger,
  });
});
afterAll(async () => {
  await gateway.close();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
});

/** Resolves true once `value()` has not changed for `quietMs`, false if it still changes after `deadlineMs`. */
async function settled(value: () => number, quietMs: number, deadlineMs: number): Promise<boolean> {
  const deadline = Date.now() + deadlineMs;
  let last = value();
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, quietMs));
    const now = value();
    if (now === last && now > 0) return true;
    last = now;
  }
  return false;
}

describe("backpressure", () => {
  it("a paused reader holds the upstream back; resuming delivers every event in order", async () => {
    const body = JSON.stringify(runInput(process.cwd()));
    const received: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      const req = request(gateway.url, { method: "POST", headers: { "Content-Type": "application/json" } }, (res) => {
        res.pause();
        let buffer = "";
        // While nobody reads, the upstream read stops: once the socket buffers fill, nothing more is pulled.
        // Wait for the upstream writes to settle (no growth for 500 ms) rather than for a fixed time, so a
        // loaded machine that fills the buffers slowly still passes and a gateway that keeps reading fails.
        void settled(() => written, 500, 30_000).then((stalled) => {
          expect(stalled).toBe(true);
          expect(finished).toBe(false);
          expect(written).toBeLessThan(FRAMES / 2);
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            buffer += chunk;
            let cut: number;
            while ((cut = buffer.indexOf("\n\n")) >= 0) {
              // Each record is `id: …` then `data: …`; the data line is what is checked.
              const record = buffer.slice(0, cut).replace(/^id: [^\n]*\n/, "");
              buffer = buffer.slice(cut + 2);
              if (record.startsWith("data: ")) received.push(record);
            }
          });
          res.on("end", () => resolve());
          res.resume();
        }).catch(reject);
      });
      req.on("error", reject);
      req.end(body);
    });
    await waitFor(() => written > 0, 5_000);
    await done;
    const deltas = received
      .map((r) => JSON.parse(r.slice(6)) as { type: string; delta?: string })
      .filter((e) => e.type === "TEXT_MESSAGE_CONTENT")
      .map((e) => Number(e.delta));
    expect(deltas).toHaveLength(FRAMES);
    expect(deltas.every((n, i) => n === i)).toBe(true);
    expect(JSON.parse(received.at(-1)!.slice(6))).toMatchObject({ type: "RUN_FINISHED" });
  }, 60_000);
});
