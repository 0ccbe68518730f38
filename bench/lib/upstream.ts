// The fake A2A kernel for the bench: raw node:http, JSON-RPC SendStreamingMessage answered from
// pre-rendered bytes written as fast as the socket takes them (with backpressure). The user prompt
// picks the behaviour — `bench {"mode":"burst","frames":100000}` — so the gateway and the relays,
// which forward the same message, get the same stream from the same server.
import type { IncomingMessage, ServerResponse } from "node:http";
import { listenLoopback } from "../../src/demo/listen.js";
import { endOfTurn, renderTextDeltas, renderTurn, sseRecord, turnResults } from "./stream.js";

export type UpstreamMode =
  | { mode: "burst"; frames: number }
  | { mode: "paced"; frames: number; intervalMs?: number }
  | { mode: "park" }
  /** The first `frames` frames of the burst turn, then nothing until the client goes: a run mid-stream. */
  | { mode: "hold"; frames: number }
  | { mode: "trivial" }
  /**
   * A realistic turn (thinking, text deltas, tool calls, usage) paced at `perSecond` frames a second, each
   * answer text delta stamped with its send time: one of many live streams.
   */
  | { mode: "live"; frames: number; perSecond: number }
  | { mode: "flood"; bytes: number };

export function benchPrompt(mode: UpstreamMode): string {
  return `bench ${JSON.stringify(mode)}`;
}

/** What the last flood response managed to write: the slow-reader check reads it. */
export interface FloodStats {
  offeredBytes: number;
  writtenBytes: number;
  /** The socket was full at the last sample: backpressure reached the upstream write. */
  waitingForDrain: boolean;
  drainWaits: number;
  finished: boolean;
}

export interface UpstreamStats {
  /** Bursts that had to render their body inside the request (a timed run should see none). */
  renderMisses: number;
  open: number;
  parked: number;
  served: number;
  flood: FloodStats | undefined;
  /** Connections accepted (HTTP/2: sessions, each carrying many streams). */
  connections: number;
}

export interface BenchUpstream {
  url: string;
  port: number;
  stats(): UpstreamStats;
  /** Renders a burst body ahead of the request that will ask for it. */
  prepare(contextId: string, frames: number): { frames: number; bytes: number };
  close(): Promise<void>;
}

const SLICE = 64 * 1024;
const TIMESTAMP_MARK = "@t=";

/** The text of a paced delta carries its send time (wall-clock ms, sub-ms precision, comparable across processes). */
export function stampText(now: number): string {
  return `${TIMESTAMP_MARK}${now.toFixed(3)}@ `;
}

/** Finds every send time stamped into a chunk of SSE text (gateway or relay output alike). */
export function readStamps(text: string, into: (sentAt: number) => void): void {
  let at = text.indexOf(TIMESTAMP_MARK);
  while (at >= 0) {
    const end = text.indexOf("@", at + TIMESTAMP_MARK.length);
    if (end < 0) return;
    into(Number(text.slice(at + TIMESTAMP_MARK.length, end)));
    at = text.indexOf(TIMESTAMP_MARK, end + 1);
  }
}

export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

interface Exchange {
  id: unknown;
  method: string;
  contextId: string;
  mode: UpstreamMode | undefined;
}

export async function startBenchUpstream(options: { port?: number; http2?: boolean } = {}): Promise<BenchUpstream> {
  const renders = new Map<string, Buffer>();
  const counters = { renderMisses: 0, open: 0, parked: 0, served: 0 };
  let flood: FloodStats | undefined;

  const rendered = (contextId: string, frames: number, miss = true): Buffer => {
    const key = `${contextId}|${frames}`;
    let body = renders.get(key);
    if (!body) {
      if (miss) counters.renderMisses++;
      // A handful of contexts per run at most; drop the oldest so a long full run cannot pile up buffers.
      if (renders.size >= 6) renders.delete(renders.keys().next().value!);
      body = renderTurn({ frames, contextId }).body;
      renders.set(key, body);
    }
    return body;
  };

  // HTTP/2 forbids connection-specific headers.
  const sseHeaders = { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", ...(!options.http2 && { Connection: "keep-alive" }) };
  const listener = await listenLoopback(
    // The node:http2 compatibility request/response are drop-ins for this handler.
    (req, res) => void handle(req as IncomingMessage, res as ServerResponse).catch(() => res.destroy()),
    {
      ...(options.port !== undefined && { port: options.port }),
      ...(options.http2 && { http2: true }),
      configureHttp1: (server) => {
        server.requestTimeout = 0;
        server.headersTimeout = 60_000;
        server.keepAliveTimeout = 60_000;
      },
    },
  );
  const port = listener.port;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === "GET") {
      json(res, 200, { name: "bench upstream", version: "1.0.0", protocolVersion: "1.0", capabilities: { streaming: true }, supportedInterfaces: [{ url: `http://127.0.0.1:${port}/`, protocolBinding: "JSONRPC", protocolVersion: "1.0" }] });
      return;
    }
    const ex = parseExchange(await readBody(req));
    if (ex.method !== "SendStreamingMessage" || !ex.mode) {
      json(res, 200, { jsonrpc: "2.0", id: ex.id, error: { code: -32601, message: `bench upstream: unsupported ${ex.method}` } });
      return;
    }
    counters.open++;
    res.once("close", () => counters.open--);
    res.writeHead(200, sseHeaders);
    res.flushHeaders();
    const mode = ex.mode;
    if (mode.mode === "burst") await writeAll(res, rendered(ex.contextId, mode.frames));
    else if (mode.mode === "paced") await paced(res, ex.contextId, mode.frames, mode.intervalMs ?? 1);
    else if (mode.mode === "trivial") await writeAll(res, renderTurn({ frames: 6, contextId: ex.contextId }).body);
    else if (mode.mode === "park") await park(res, ex.contextId);
    else if (mode.mode === "live") await live(res, ex.contextId, mode.frames, mode.perSecond);
    else if (mode.mode === "hold") await hold(res, ex.contextId, mode.frames);
    else await floodBody(res, ex.contextId, mode.bytes);
    counters.served++;
    if (!res.writableEnded && !res.destroyed) res.end();
  }

  async function park(res: ServerResponse, contextId: string): Promise<void> {
    const head = [...turnResults({ frames: 4, contextId, thinkingPerCall: 0, end: false })].map((r) => sseRecord(r)).join("");
    res.write(head);
    counters.parked++;
    await new Promise<void>((resolve) => res.once("close", () => resolve()));
    counters.parked--;
  }

  async function hold(res: ServerResponse, contextId: string, frames: number): Promise<void> {
    await writeAll(res, renderTurn({ frames, contextId, end: false }).body);
    counters.parked++;
    if (!res.destroyed) await new Promise<void>((resolve) => res.once("close", () => resolve()));
    counters.parked--;
  }

  // Every live stream is written from one ticker, so a thousand of them cost one timer, not a thousand.
  const lives = new Set<LiveStream>();
  let ticker: NodeJS.Timeout | undefined;
  const tick = () => {
    const now = performance.now();
    for (const stream of lives) stream.pump(now);
    if (lives.size === 0 && ticker) {
      clearInterval(ticker);
      ticker = undefined;
    }
  };

  function live(res: ServerResponse, contextId: string, frames: number, perSecond: number): Promise<void> {
    const taskId = "task-bench-1";
    const turn = turnResults({ frames, contextId, taskId, textPerCall: 30, thinkingPerCall: 5, end: false });
    const started = performance.now();
    let sent = 0;
    let waiting = false;
    return new Promise<void>((resolve) => {
      const finish = () => {
        lives.delete(stream);
        resolve();
      };
      const stream: LiveStream = {
        pump: (now) => {
          if (waiting) return;
          if (res.destroyed) {
            finish();
            return;
          }
          const due = Math.min(frames, Math.floor(((now - started) * perSecond) / 1000) + 1);
          let out = "";
          while (sent < due) {
            sent++;
            const next = turn.next();
            if (next.done) {
              sent = frames;
              break;
            }
            out += sseRecord(stampAnswer(next.value, `${taskId}-message`));
          }
          if (sent >= frames) out += sseRecord(endOfTurn(taskId, contextId));
          if (out !== "" && !res.write(out)) {
            waiting = true;
            void drained(res).then((ok) => {
              waiting = false;
              if (!ok) finish();
            });
          }
          if (sent >= frames) finish();
        },
      };
      lives.add(stream);
      stream.pump(started);
      ticker ??= setInterval(tick, 10);
    });
  }

  async function floodBody(res: ServerResponse, contextId: string, offered: number): Promise<void> {
    res.write([...turnResults({ frames: 3, contextId, end: false })].map((r) => sseRecord(r)).join(""));
    const chunk = renderTextDeltas(contextId, 4000);
    const stats: FloodStats = { offeredBytes: offered, writtenBytes: 0, waitingForDrain: false, drainWaits: 0, finished: false };
    flood = stats;
    while (stats.writtenBytes < offered && !res.destroyed) {
      const ok = res.write(chunk);
      stats.writtenBytes += chunk.length;
      if (!ok) {
        stats.waitingForDrain = true;
        stats.drainWaits++;
        if (!(await drained(res))) break;
        stats.waitingForDrain = false;
      }
    }
    if (!res.destroyed) res.write(sseRecord(endOfTurn("task-bench-1", contextId)));
    stats.finished = !res.destroyed;
  }

  async function paced(res: ServerResponse, contextId: string, frames: number, intervalMs: number): Promise<void> {
    const taskId = "task-bench-1";
    const head = [...turnResults({ frames: 3, contextId, end: false })].map((r) => sseRecord(r)).join("");
    res.write(head);
    const started = performance.now();
    let sent = 0;
    // setTimeout(1) fires every ~1.1 ms; catch up on what is due so the rate stays at 1/intervalMs.
    while (sent < frames && !res.destroyed) {
      const due = Math.min(frames, Math.floor((performance.now() - started) / intervalMs) + 1);
      while (sent < due) {
        sent++;
        res.write(
          sseRecord({
            statusUpdate: {
              taskId,
              contextId,
              status: { state: "TASK_STATE_WORKING", message: { messageId: `${taskId}-message`, contextId, taskId, role: "ROLE_AGENT", parts: [{ text: stampText(wallClockMs()) }] } },
              metadata: { iac_code: { iacCodeSessionId: "8d2c7e1a-3b4f-4c5d-9e6f-0a1b2c3d4e5f" } },
            },
          }),
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    if (!res.destroyed) res.write(sseRecord(endOfTurn(taskId, contextId)));
  }

  return {
    url: listener.url,
    port,
    stats: () => ({ ...counters, connections: listener.connections(), flood: flood && { ...flood } }),
    prepare: (contextId, frames) => {
      const body = rendered(contextId, frames, false);
      return { frames, bytes: body.length };
    },
    close: () => listener.close(),
  };
}

interface LiveStream {
  pump(now: number): void;
}

/** An answer text delta of a live turn gets its send time in front of its text (readStamps finds it). */
function stampAnswer(result: Record<string, unknown>, messageId: string): Record<string, unknown> {
  const message = (result as { statusUpdate?: { status?: { message?: { messageId?: string; parts?: Array<{ text?: string }> } } } }).statusUpdate?.status?.message;
  const part = message?.messageId === messageId ? message.parts?.[0] : undefined;
  if (part && typeof part.text === "string") part.text = stampText(wallClockMs()) + part.text;
  return result;
}

/** Writes the body in slices, waiting for 'drain' whenever the socket is full. */
async function writeAll(res: ServerResponse, body: Buffer): Promise<void> {
  for (let at = 0; at < body.length && !res.destroyed; at += SLICE) {
    if (!res.write(body.subarray(at, at + SLICE)) && !(await drained(res))) return;
  }
}

function drained(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const done = (ok: boolean) => {
      res.off("drain", onDrain);
      res.off("close", onClose);
      resolve(ok);
    };
    res.on("drain", onDrain);
    res.on("close", onClose);
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function parseExchange(body: string): Exchange {
  let rpc: { id?: unknown; method?: unknown; params?: { message?: { contextId?: unknown; parts?: Array<{ text?: unknown }> } } } = {};
  try {
    rpc = JSON.parse(body) as typeof rpc;
  } catch {
    // not JSON-RPC: answered as an unsupported method
  }
  const message = rpc.params?.message;
  const text = message?.parts?.find((p) => typeof p.text === "string")?.text;
  let mode: UpstreamMode | undefined;
  if (typeof text === "string" && text.startsWith("bench ")) {
    try {
      mode = JSON.parse(text.slice(6)) as UpstreamMode;
    } catch {
      mode = undefined;
    }
  }
  return {
    id: rpc.id ?? null,
    method: typeof rpc.method === "string" ? rpc.method : "",
    contextId: typeof message?.contextId === "string" ? message.contextId : "ctx-bench",
    mode,
  };
}

/**
 * An SSE text handler that reads the upstream's send stamps from whole records and reports each one's latency: the
 * stamp of a record split across two chunks is read when its second half arrives.
 */
export function latencyReader(onLatency: (ms: number) => void): (text: string, receivedAt: number) => void {
  let carry = "";
  return (text, receivedAt) => {
    const joined = carry + text;
    const cut = joined.lastIndexOf("\n\n");
    carry = cut >= 0 ? joined.slice(cut + 2) : joined;
    if (cut >= 0) readStamps(joined.slice(0, cut + 2), (sentAt) => onLatency(receivedAt - sentAt));
  };
}
