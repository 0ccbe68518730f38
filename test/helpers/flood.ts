// Flood plumbing shared by test/flood.test.ts and `npx tsx bench/flood.ts`: uploads on fresh connections at a
// chosen pace, /health timed from a process of its own, and large JSON bodies. Nothing here imports vitest.
import { spawn } from "node:child_process";
import { request as httpRequest } from "node:http";
import { readReply, type Reply } from "./http.js";

/** POSTs `body` on a fresh connection, `chunk` bytes every `everyMs` (0: as fast as the socket takes it). */
export function upload(url: string, body: Buffer, opts: { chunk?: number; everyMs?: number; chunked?: boolean } = {}): Promise<Reply | Error> {
  const target = new URL(url);
  return new Promise((resolve) => {
    const headers: Record<string, string> = { "Content-Type": "application/json", Connection: "close" };
    if (!opts.chunked) headers["Content-Length"] = String(body.length);
    const req = httpRequest({ host: target.hostname, port: target.port, path: "/", method: "POST", headers, agent: false }, (res) => {
      readReply(res).then((reply) => {
        resolve(reply);
        req.destroy();
      }, resolve);
    });
    req.on("error", resolve);
    const chunk = opts.chunk ?? 256 * 1024;
    let at = 0;
    const pump = () => {
      while (at < body.length && !req.destroyed) {
        const piece = body.subarray(at, at + chunk);
        at += piece.length;
        const more = req.write(piece);
        if (opts.everyMs) return void setTimeout(pump, opts.everyMs);
        if (!more) return void req.once("drain", pump);
      }
      if (at >= body.length && !req.destroyed) req.end();
    };
    pump();
  });
}

const POLLER = `
const url = process.argv[1];
let stop = false, maxMs = 0, samples = 0, failures = 0;
process.stdin.on("data", () => {}).on("end", () => (stop = true));
(async () => {
  while (!stop) {
    const started = Date.now();
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
      await res.text();
      if (res.status !== 200) failures++;
    } catch {
      failures++;
    }
    maxMs = Math.max(maxMs, Date.now() - started);
    samples++;
    await new Promise((r) => setTimeout(r, 100));
  }
  process.stdout.write(JSON.stringify({ maxMs, samples, failures }));
})();
`;

/** GET `url` every 100 ms from another process until stop(); the slowest answer and the failures. */
export function pollHealth(url: string): { stop(): Promise<{ maxMs: number; samples: number; failures: number }> } {
  const child = spawn(process.execPath, ["-e", POLLER, url], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    stop: async () => {
      child.stdin.end();
      await exited;
      return JSON.parse(out) as { maxMs: number; samples: number; failures: number };
    },
  };
}

/**
 * A trivial HTTP server in a process of its own, at the gateway's priority: polled beside the gateway, it shows what the
 * machine's own load adds to a request's latency (two busy cores delay any process), so a test can time the gateway
 * against it instead of against the wall clock alone.
 */
export async function startControlServer(): Promise<{ url: string; close(): Promise<void> }> {
  const child = spawn(
    process.execPath,
    ["-e", `const s=require("node:http").createServer((q,r)=>r.end("{}"));s.listen(0,"127.0.0.1",()=>console.log(s.address().port));`],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.once("data", (c: Buffer) => resolve(c.toString("utf8").trim()));
    child.once("exit", () => reject(new Error("the control server did not start")));
  });
  return {
    url: `http://127.0.0.1:${port}/`,
    close: async () => {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

/** An 11 MiB JSON object (valid JSON, not a RunAgentInput): read, parsed, then refused with 400. */
export function bigJson(bytes: number): Buffer {
  const body = Buffer.alloc(bytes, 0x61);
  body.write('{"x":"', 0);
  body.write('"}', bytes - 2);
  return body;
}


const FLOODER = `
const http = require("node:http");
const os = require("node:os");
const [url, count, bytes] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
// Lowest priority: the flood competes with the gateway for the CPU, not the other way round.
try { os.setPriority(19); } catch {}
const body = Buffer.alloc(bytes, 0x61);
body.write('{"x":"', 0);
body.write('"}', bytes - 2);
const target = new URL(url);
const one = () => new Promise((resolve) => {
  const req = http.request({ host: target.hostname, port: target.port, path: "/", method: "POST", agent: false,
    headers: { "Content-Type": "application/json", "Content-Length": String(bytes), Connection: "close" } }, (res) => {
    let text = "";
    res.on("data", (c) => (text += c));
    res.on("end", () => {
      let code = "";
      try { code = JSON.parse(text).error.code; } catch {}
      resolve(res.statusCode + " " + code);
      req.destroy();
    });
    res.on("error", (e) => resolve("error " + (e.code || e.message)));
  });
  req.on("error", (e) => resolve("error " + (e.code || e.message)));
  req.end(body);
});
Promise.all(Array.from({ length: count }, one)).then((answers) => {
  const counts = {};
  for (const a of answers) counts[a] = (counts[a] || 0) + 1;
  process.stdout.write(JSON.stringify(counts));
});
`;

/**
 * `count` concurrent POSTs of a `bytes`-long JSON body (not a RunAgentInput) from a child process at the lowest
 * CPU priority; resolves with how many got which answer ("400 INVALID_INPUT", "503 SERVER_BUSY", "error EPIPE"…).
 */
export function floodFromChild(url: string, count: number, bytes: number): Promise<Record<string, number>> {
  const child = spawn(process.execPath, ["-e", FLOODER, url, String(count), String(bytes)], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
  return new Promise((resolve, reject) => {
    child.once("exit", () => {
      try {
        resolve(JSON.parse(out) as Record<string, number>);
      } catch (error) {
        reject(error);
      }
    });
  });
}
