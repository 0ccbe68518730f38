// The upstream edge against a throwaway A2A server on 127.0.0.1: what goes on the wire, how SSE is
// read (LF, CRLF, pings, tiny chunks, backpressure), and how every failure is classified.
import { createHash } from "node:crypto";
import { once } from "node:events";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Observable } from "rxjs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { RunError, type A2AStreamResponse } from "../operators/types.js";
import {
  A2AClient,
  A2AJsonRpcError,
  SECRET_METADATA_KEYS,
  assertLoopbackA2AUrl,
  buildIacCodeMetadata,
  buildUserMessage,
  contextIdForThread,
  decodeStreamResult,
  type FlowGate,
} from "../src/a2a/index.js";

// ---- the fake kernel -------------------------------------------------------------------------

interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void | Promise<void>;

let handler: Handler = (_req, res) => {
  res.end();
};
const seen: SeenRequest[] = [];
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
    void handler(req, res, body);
  });
});
let base = "";
let client: A2AClient;

beforeAll(async () => {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  server.close();
  await once(server, "close");
});
afterEach(async () => {
  seen.length = 0;
  await client?.close();
});

function newClient(options: { token?: string; idleTimeoutMs?: number; requestTimeoutMs?: number; url?: string } = {}) {
  client = new A2AClient({ url: base, token: "test-token", ...options });
  return client;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves true on 'drain', false on close or after `ms`; leaves no listener behind. */
function drained(res: ServerResponse, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const settle = (value: boolean) => {
      clearTimeout(timer);
      res.off("drain", onDrain);
      res.off("close", onClose);
      resolve(value);
    };
    const onDrain = () => settle(true);
    const onClose = () => settle(false);
    const timer = setTimeout(() => settle(false), ms);
    res.on("drain", onDrain);
    res.on("close", onClose);
  });
}

function sseHead(res: ServerResponse): void {
  res.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache" });
}
function record(result: unknown, eol = "\n"): string {
  return `data: ${JSON.stringify({ jsonrpc: "2.0", id: "r1", result })}${eol}${eol}`;
}
function jsonReply(res: ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}
function socketClosed(req: IncomingMessage): Promise<void> {
  return new Promise((resolve) => req.socket.once("close", () => resolve()));
}

// Frames in the shapes of a2a-upstream §8a.
const taskFrame = {
  task: { id: "task-a1", contextId: "ctx-a1", status: { state: "TASK_STATE_SUBMITTED" }, unknownField: { kept: true } },
};
const textFrame = (text: string) => ({
  statusUpdate: {
    taskId: "task-a1",
    contextId: "ctx-a1",
    status: {
      state: "TASK_STATE_WORKING",
      message: { messageId: "task-a1-message", role: "ROLE_AGENT", parts: [{ text }] },
    },
    metadata: { iac_code: { iacCodeSessionId: "sess-a1" } },
  },
});
const artifactFrame = {
  artifactUpdate: { taskId: "task-a1", artifact: { artifactId: "art-1", parts: [{ text: "x" }] }, lastChunk: true },
};
const messageFrame = { message: { messageId: "m-9", role: "ROLE_AGENT", parts: [{ text: "hi" }] } };

const userMessage = buildUserMessage({
  messageId: "m1",
  contextId: "ctx-a1",
  parts: [{ text: "Create a.txt" }],
  metadata: { cwd: "/srv/ws/t1", preferredLanguage: "en" },
});

interface Outcome {
  values: A2AStreamResponse[];
  error?: unknown;
  completed: boolean;
}
function collect(source: Observable<A2AStreamResponse>): Promise<Outcome> {
  return new Promise((resolve) => {
    const values: A2AStreamResponse[] = [];
    source.subscribe({
      next: (value) => values.push(value),
      error: (error: unknown) => resolve({ values, error, completed: false }),
      complete: () => resolve({ values, completed: true }),
    });
  });
}
function textOf(frame: A2AStreamResponse): string | undefined {
  return "statusUpdate" in frame ? frame.statusUpdate.status?.message?.parts?.[0]?.text : undefined;
}
function expectRunError(error: unknown, code: string): void {
  expect(error).toBeInstanceOf(RunError);
  expect((error as RunError).code).toBe(code);
}
/** Tests that wait on a server-side event fail fast instead of hanging to the global timeout. */
const FAST_FAIL_MS = 8_000;
const UNAVAILABLE = "The local A2A execution service is unavailable.";
const INVALID_FRAME = "The A2A stream contained an invalid frame.";

// ---- request shape ---------------------------------------------------------------------------

describe("requests on the wire", () => {
  it("POSTs SendStreamingMessage with the 1.0 headers, bearer token and accepted output modes", async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.end(record(taskFrame) + record(textFrame("Creating the file ")));
    };
    const outcome = await collect(newClient().sendStreamingMessage(userMessage));

    expect(outcome.completed).toBe(true);
    expect(outcome.values).toEqual([taskFrame, textFrame("Creating the file ")]);
    expect(seen).toHaveLength(1);
    const [request] = seen;
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe("/");
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(request?.headers["a2a-version"]).toBe("1.0");
    expect(request?.headers.accept).toBe("text/event-stream");
    expect(request?.headers.authorization).toBe("Bearer test-token");
    const body = JSON.parse(request?.body ?? "");
    expect(Object.keys(body).sort()).toEqual(["id", "jsonrpc", "method", "params"]);
    expect(body.jsonrpc).toBe("2.0");
    expect(body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(body.method).toBe("SendStreamingMessage");
    expect(body.params).toEqual({
      message: {
        messageId: "m1",
        role: "ROLE_USER",
        parts: [{ text: "Create a.txt" }],
        metadata: { iac_code: { cwd: "/srv/ws/t1", preferredLanguage: "en" } },
        contextId: "ctx-a1",
      },
      configuration: { acceptedOutputModes: ["text/plain"] },
    });
  });

  it("frames a streaming call's body by its byte length, not chunked, over HTTP/1.1: a prompt outside ASCII arrives whole", async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.end(record(taskFrame));
    };
    const prompt = "Crée ünïcödé 文件 🚀 ".repeat(400);
    await collect(newClient().sendStreamingMessage({ ...userMessage, parts: [{ text: prompt }] }));
    await collect(newClient().subscribeToTask("task-a1"));
    expect(seen).toHaveLength(2);
    for (const request of seen) {
      expect(request.headers["transfer-encoding"]).toBeUndefined();
      expect(Number(request.headers["content-length"])).toBe(Buffer.byteLength(request.body, "utf8"));
    }
    expect(JSON.parse(seen[0]!.body).params.message.parts).toEqual([{ text: prompt }]);
    expect(JSON.parse(seen[1]!.body).params).toEqual({ id: "task-a1" });
  });

  it("uses a fresh id per request, keeps a base path, and sends no Authorization without a token", async () => {
    handler = (_req, res) => jsonReply(res, { jsonrpc: "2.0", id: "x", result: taskFrame.task });
    const c = newClient({ token: undefined, url: `${base}/a2a//` });
    await c.getTask("task-a1");
    await c.getTask("task-a1");
    expect(seen.map((r) => r.url)).toEqual(["/a2a/", "/a2a/"]);
    expect(seen[0]?.headers.authorization).toBeUndefined();
    expect(seen[0]?.headers["a2a-version"]).toBe("1.0");
    const ids = seen.map((r) => JSON.parse(r.body).id);
    expect(ids[0]).not.toBe(ids[1]);
  });

  it("sends SubscribeToTask with {id} only", async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.end(record(taskFrame));
    };
    const outcome = await collect(newClient().subscribeToTask("task-a1"));
    expect(outcome.values).toEqual([taskFrame]);
    const body = JSON.parse(seen[0]?.body ?? "");
    expect(body.method).toBe("SubscribeToTask");
    expect(body.params).toEqual({ id: "task-a1" });
    expect(seen[0]?.headers.accept).toBe("text/event-stream");
  });

  it("sends SendMessage, GetTask (historyLength 100 by default) and CancelTask with their params", async () => {
    handler = (_req, res, raw) => {
      const { method } = JSON.parse(raw) as { method: string };
      const result = method === "SendMessage" ? { task: taskFrame.task } : taskFrame.task;
      jsonReply(res, { jsonrpc: "2.0", id: "x", result });
    };
    const c = newClient();
    expect(await c.sendMessage(userMessage)).toEqual({ task: taskFrame.task });
    expect(await c.getTask("task-a1")).toEqual(taskFrame.task);
    expect(await c.getTask("task-a1", 5)).toEqual(taskFrame.task);
    expect(await c.cancelTask("task-a1")).toEqual(taskFrame.task);
    const calls = seen.map((r) => JSON.parse(r.body) as { method: string; params: unknown });
    expect(calls.map((call) => [call.method, call.params])).toEqual([
      ["SendMessage", { message: JSON.parse(JSON.stringify(userMessage)), configuration: { acceptedOutputModes: ["text/plain"] } }],
      ["GetTask", { id: "task-a1", historyLength: 100 }],
      ["GetTask", { id: "task-a1", historyLength: 5 }],
      ["CancelTask", { id: "task-a1" }],
    ]);
    expect(seen.every((r) => r.headers["a2a-version"] === "1.0" && r.headers.authorization === "Bearer test-token")).toBe(true);
  });

  it("sends ListTasks with its query and reads a page (an empty nextPageToken is the last page)", async () => {
    const pages = [
      { tasks: [taskFrame.task], nextPageToken: "page-2", pageSize: 1, totalSize: 2 },
      { tasks: [taskFrame.task], nextPageToken: "", pageSize: 1, totalSize: 2 },
    ];
    handler = (_req, res) => jsonReply(res, { jsonrpc: "2.0", id: "x", result: pages[seen.length - 1] });
    const c = newClient();
    expect(await c.listTasks({ contextId: "ctx-a1", pageSize: 1, historyLength: 50 })).toEqual({ tasks: [taskFrame.task], nextPageToken: "page-2" });
    expect(await c.listTasks({ contextId: "ctx-a1", pageSize: 1, pageToken: "page-2" })).toEqual({ tasks: [taskFrame.task] });
    const calls = seen.map((r) => JSON.parse(r.body) as { method: string; params: unknown });
    expect(calls.map((call) => [call.method, call.params])).toEqual([
      ["ListTasks", { contextId: "ctx-a1", pageSize: 1, historyLength: 50 }],
      ["ListTasks", { contextId: "ctx-a1", pageSize: 1, pageToken: "page-2" }],
    ]);
    expect(seen.every((r) => r.headers["a2a-version"] === "1.0" && r.headers.authorization === "Bearer test-token")).toBe(true);
  });

  it("refuses a ListTasks answer that is no page of tasks as A2A_PROTOCOL_ERROR", async () => {
    for (const result of [{}, { tasks: "none" }, { tasks: [{ id: 7 }] }, { tasks: [], nextPageToken: 3 }]) {
      handler = (_req, res) => jsonReply(res, { jsonrpc: "2.0", id: "x", result });
      await expect(newClient().listTasks({ contextId: "ctx-a1" })).rejects.toMatchObject({ code: "A2A_PROTOCOL_ERROR" });
      await client.close();
    }
  });
});

// ---- SSE framing -----------------------------------------------------------------------------

describe("SSE framing", () => {
  it("reads CRLF records with `: ping` comments and all four result kinds, in order", async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.write(": ping - 2026-08-21 07:00:00\r\n\r\n");
      res.write(record(taskFrame, "\r\n"));
      res.write(": ping\r\n\r\n" + record(textFrame("a"), "\r\n") + "event: message\r\n" + record(artifactFrame, "\r\n"));
      res.end(record(messageFrame, "\r\n") + ": ping\r\n\r\n");
    };
    const outcome = await collect(newClient().sendStreamingMessage(userMessage));
    expect(outcome.completed).toBe(true);
    expect(outcome.values).toEqual([taskFrame, textFrame("a"), artifactFrame, messageFrame]);
  });

  it("reassembles a record split across many tiny chunks, multi-byte characters included", async () => {
    const text = "héllo 中文 ✓ done";
    const bytes = Buffer.from(record(textFrame(text), "\r\n") + record(textFrame("second")), "utf8");
    handler = async (_req, res) => {
      sseHead(res);
      for (let offset = 0; offset < bytes.length; offset += 7) {
        res.write(bytes.subarray(offset, offset + 7));
        await sleep(1);
      }
      res.end();
    };
    let readyCalls = 0;
    const flow: FlowGate = { ready: () => void readyCalls++ };
    const outcome = await collect(newClient().sendStreamingMessage(userMessage, { flow }));
    expect(outcome.completed).toBe(true);
    expect(outcome.values.map(textOf)).toEqual([text, "second"]);
    expect(readyCalls).toBeGreaterThan(1);
  });

  it("drops one leading byte-order mark, even when it arrives split across chunks", async () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb]), Buffer.from([0xbf]), Buffer.from(record(textFrame("\ufeffkept")))]);
    handler = async (_req, res) => {
      sseHead(res);
      res.write(bytes.subarray(0, 2));
      await sleep(1);
      res.end(bytes.subarray(2));
    };
    const outcome = await collect(newClient().sendStreamingMessage(userMessage));
    expect(outcome.completed).toBe(true);
    // Only the stream's own mark goes; one inside a record's text is data.
    expect(outcome.values.map(textOf)).toEqual(["\ufeffkept"]);
  });

  it("returns the kernel's objects untouched, unknown fields included", () => {
    const frame = JSON.parse(JSON.stringify(taskFrame));
    expect(decodeStreamResult(frame)).toBe(frame);
    expect((decodeStreamResult(frame) as { task: { unknownField: unknown } }).task.unknownField).toEqual({ kept: true });
  });
});

// ---- errors ----------------------------------------------------------------------------------

describe("errors", () => {
  it("turns a plain-JSON refusal of a streaming call into A2AJsonRpcError", async () => {
    const data = [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "TASK_NOT_FOUND" }];
    handler = (_req, res) => jsonReply(res, { jsonrpc: "2.0", id: "r1", error: { code: -32001, message: "Task not found", data } });
    const outcome = await collect(newClient().subscribeToTask("task-zz"));
    expect(outcome.error).toBeInstanceOf(A2AJsonRpcError);
    expect(outcome.error).toMatchObject({ code: -32001, message: "Task not found", data });
  });

  it("turns an `event: error` frame into A2AJsonRpcError after the frames before it", async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.write(record(taskFrame, "\r\n"));
      res.end('event: error\r\ndata: {"jsonrpc":"2.0","id":"r1","error":{"code":-32602,"message":"bad part"}}\r\n\r\n');
    };
    const outcome = await collect(newClient().sendStreamingMessage(userMessage));
    expect(outcome.values).toEqual([taskFrame]);
    expect(outcome.error).toBeInstanceOf(A2AJsonRpcError);
    expect(outcome.error).toMatchObject({ code: -32602, message: "bad part" });
  });

  it("turns a `data:` JSON-RPC error without an event name into A2AJsonRpcError", async () => {
    handler = (_req, res) => {
      sseHead(res);
      res.end('data: {"jsonrpc":"2.0","id":"r1","error":{"code":-32603,"message":"boom","data":{"retryable":true}}}\n\n');
    };
    const outcome = await collect(newClient().sendStreamingMessage(userMessage));
    expect(outcome.error).toMatchObject({ code: -32603, message: "boom", data: { retryable: true } });
  });

  const invalidRecords: Array<[string, string]> = [
    ["a non-JSON data line", "data: not json\n\n"],
    ["a JSON array", "data: []\n\n"],
    ["a JSON number", "data: 42\n\n"],
    ["an envelope without result or error", 'data: {"jsonrpc":"2.0","id":"r1"}\n\n'],
    ["an unknown result key", record({ foo: {} })],
    ["two result keys", record({ task: {}, message: {} })],
    ["a null payload", record({ task: null })],
    ["a non-string state", record({ statusUpdate: { status: { state: 5 } } })],
    ["parts that are not an array", record({ message: { parts: "x" } })],
    ["a part that is not an object", record({ message: { parts: ["x"] } })],
    ["metadata that is not an object", record({ statusUpdate: { metadata: [1] } })],
    ["a non-string task id", record({ task: { id: 7 } })],
    ["an error object without a code", 'event: error\ndata: {"jsonrpc":"2.0","error":{"message":"x"}}\n\n'],
  ];
  it.each(invalidRecords)("rejects %s with A2A_PROTOCOL_ERROR", async (_name, bad) => {
    handler = (_req, res) => {
      sseHead(res);
      res.end(record(taskFrame) + bad + record(messageFrame));
    };
    const outcome = await collect(newClient().sendStreamingMessage(userMessage));
    expect(outcome.values).toEqual([taskFrame]);
    expectRunError(outcome.error, "A2A_PROTOCOL_ERROR");
    expect((outcome.error as Error).message).toBe(INVALID_FRAME);
  });

  it("rejects a streaming reply that is neither SSE nor a JSON-RPC error", async () => {
    handler = (_req, res) => jsonReply(res, { jsonrpc: "2.0", id: "r1", result: taskFrame });
    expectRunError((await collect(newClient().sendStreamingMessage(userMessage))).error, "A2A_PROTOCOL_ERROR");
  });

  it("stops at a record larger than 16 MiB and closes the connection", async () => {
    let closed: Promise<void> | undefined;
    handler = async (req, res) => {
      closed = socketClosed(req);
      sseHead(res);
      res.write('data: {"jsonrpc":"2.0","result":{"message":{"messageId":"');
      const mebibyte = "a".repeat(1024 * 1024);
      for (let i = 0; i < 18 && !res.destroyed; i++) {
        if (!res.write(mebibyte)) await drained(res, 5_000);
      }
    };
    const outcome = await collect(newClient().sendStreamingMessage(userMessage));
    expect(outcome.values).toEqual([]);
    expectRunError(outcome.error, "A2A_PROTOCOL_ERROR");
    await closed;
  }, FAST_FAIL_MS);

  it("maps HTTP 500 to A2A_UNAVAILABLE, streaming and unary", async () => {
    handler = (_req, res) => {
      res.writeHead(500, { "Content-Type": "text/plain" });
      res.end("boom");
    };
    const c = newClient();
    const outcome = await collect(c.sendStreamingMessage(userMessage));
    expectRunError(outcome.error, "A2A_UNAVAILABLE");
    expect((outcome.error as Error).message).toBe(UNAVAILABLE);
    await expect(c.getTask("task-a1")).rejects.toMatchObject({ code: "A2A_UNAVAILABLE", message: UNAVAILABLE });
  });

  it("maps a refused port to A2A_UNAVAILABLE", async () => {
    const probe = http.createServer();
    probe.listen(0, "127.0.0.1");
    await once(probe, "listening");
    const port = (probe.address() as AddressInfo).port;
    probe.close();
    await once(probe, "close");
    const c = newClient({ url: `http://127.0.0.1:${port}/` });
    expectRunError((await collect(c.sendStreamingMessage(userMessage))).error, "A2A_UNAVAILABLE");
    await expect(c.cancelTask("task-a1")).rejects.toMatchObject({ code: "A2A_UNAVAILABLE" });
  });

  it("maps a connection reset mid-stream to A2A_UNAVAILABLE after the frames already read", async () => {
    handler = async (req, res) => {
      sseHead(res);
      res.write(record(taskFrame));
      await sleep(20);
      req.socket.destroy();
    };
    const outcome = await collect(newClient().sendStreamingMessage(userMessage));
    expect(outcome.values).toEqual([taskFrame]);
    expectRunError(outcome.error, "A2A_UNAVAILABLE");
  });

  it("maps a headers timeout to A2A_UNAVAILABLE", async () => {
    handler = () => undefined; // never answers
    await expect(newClient({ requestTimeoutMs: 150 }).getTask("task-a1")).rejects.toMatchObject({ code: "A2A_UNAVAILABLE" });
  });

  it("maps a unary JSON-RPC error to A2AJsonRpcError and a malformed unary result to A2A_PROTOCOL_ERROR", async () => {
    let reply: unknown = { jsonrpc: "2.0", id: "x", error: { code: -32002, message: "not cancelable" } };
    handler = (_req, res) => jsonReply(res, reply);
    const c = newClient();
    const refused = await c.cancelTask("task-a1").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(A2AJsonRpcError);
    expect(refused).toMatchObject({ code: -32002 });
    reply = { jsonrpc: "2.0", id: "x", result: { id: 1 } };
    await expect(c.getTask("task-a1")).rejects.toMatchObject({ code: "A2A_PROTOCOL_ERROR" });
    reply = { jsonrpc: "2.0", id: "x", result: textFrame("no") };
    await expect(c.sendMessage(userMessage)).rejects.toMatchObject({ code: "A2A_PROTOCOL_ERROR" });
  });
});

// ---- stream lifetime -------------------------------------------------------------------------

describe("stream lifetime", () => {
  it("fails with A2A_UNAVAILABLE and closes the socket after idleTimeoutMs of silence", async () => {
    let closed: Promise<void> | undefined;
    handler = (req, res) => {
      closed = socketClosed(req);
      sseHead(res);
      res.write(record(taskFrame));
    };
    const started = Date.now();
    const outcome = await collect(newClient({ idleTimeoutMs: 150 }).sendStreamingMessage(userMessage));
    expect(outcome.values).toEqual([taskFrame]);
    expectRunError(outcome.error, "A2A_UNAVAILABLE");
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    await closed;
  }, FAST_FAIL_MS);

  it("counts keep-alive comments as activity", async () => {
    handler = async (_req, res) => {
      sseHead(res);
      res.write(record(taskFrame));
      for (let i = 0; i < 8; i++) {
        await sleep(50);
        res.write(": ping\r\n\r\n");
      }
      res.end(record(messageFrame));
    };
    const outcome = await collect(newClient({ idleTimeoutMs: 150 }).sendStreamingMessage(userMessage));
    expect(outcome.completed).toBe(true);
    expect(outcome.values).toEqual([taskFrame, messageFrame]);
  });

  it("closes the server-side socket on unsubscribe", async () => {
    let closed: Promise<void> | undefined;
    handler = (req, res) => {
      closed = socketClosed(req);
      sseHead(res);
      res.write(record(taskFrame));
    };
    const values: A2AStreamResponse[] = [];
    await new Promise<void>((resolve) => {
      const subscription = newClient()
        .sendStreamingMessage(userMessage)
        .subscribe((value) => {
          values.push(value);
          queueMicrotask(() => {
            subscription.unsubscribe();
            resolve();
          });
        });
    });
    await closed;
    expect(values).toEqual([taskFrame]);
  }, FAST_FAIL_MS);

  it("a consumer that leaves while the FlowGate holds back the body's end: the connection is kept for the next call", async () => {
    const sockets: unknown[] = [];
    handler = (req, res) => {
      sockets.push(req.socket);
      sseHead(res);
      res.end(record(taskFrame));
    };
    const held = new Promise<void>(() => undefined);
    const flow: FlowGate = { ready: () => held };
    const a2a = newClient();
    await new Promise<void>((resolve) => {
      const subscription = a2a.sendStreamingMessage(userMessage, { flow }).subscribe(() => {
        // The body's end is in by then, unread behind the gate (a run's terminal frame, then its end write).
        setTimeout(() => {
          subscription.unsubscribe();
          resolve();
        }, 50);
      });
    });
    // The pool takes the connection back on a later tick.
    await new Promise((resolve) => setImmediate(resolve));
    handler = (req, res) => {
      sockets.push(req.socket);
      sseHead(res);
      res.end(record(taskFrame));
    };
    await collect(a2a.sendStreamingMessage(userMessage));
    expect(sockets).toHaveLength(2);
    expect(sockets[1]).toBe(sockets[0]);
  }, FAST_FAIL_MS);

  it("does not read the socket while the FlowGate is pending", async () => {
    let releaseGate!: () => void;
    const gate = new Promise<void>((resolve) => (releaseGate = resolve));
    let holding = false;
    const flow: FlowGate = { ready: () => (holding ? gate : undefined) };

    let firstSeen!: () => void;
    const firstSeenByClient = new Promise<void>((resolve) => (firstSeen = resolve));
    let reportStall!: (report: { stalled: boolean; bytes: number }) => void;
    const stallReport = new Promise<{ stalled: boolean; bytes: number }>((resolve) => (reportStall = resolve));
    let finish!: () => void;
    const mayFinish = new Promise<void>((resolve) => (finish = resolve));

    handler = async (_req, res) => {
      sseHead(res);
      res.write(record(textFrame("one")));
      await firstSeenByClient;
      res.write(record(textFrame("two")));
      // Keep writing comments until the socket stops draining; bounded to 64 MiB.
      const pad = ": " + "x".repeat(256 * 1024) + "\n";
      let bytes = 0;
      let stalled = false;
      for (let i = 0; i < 256 && !stalled; i++) {
        bytes += pad.length;
        if (!res.write(pad)) stalled = !(await drained(res, 300));
      }
      reportStall({ stalled, bytes });
      await mayFinish;
      res.end(record(textFrame("three")));
    };

    const texts: Array<string | undefined> = [];
    const done = new Promise<Outcome>((resolve) => {
      newClient()
        .sendStreamingMessage(userMessage, { flow })
        .subscribe({
          next: (frame) => {
            texts.push(textOf(frame));
            if (texts.length === 1) {
              holding = true;
              firstSeen();
            }
          },
          error: (error: unknown) => resolve({ values: [], error, completed: false }),
          complete: () => resolve({ values: [], completed: true }),
        });
    });

    const report = await stallReport;
    expect(report.stalled).toBe(true);
    expect(report.bytes).toBeLessThan(64 * 1024 * 1024);
    expect(texts).toEqual(["one"]);

    releaseGate();
    finish();
    const outcome = await done;
    expect(outcome.error).toBeUndefined();
    expect(outcome.completed).toBe(true);
    expect(texts).toEqual(["one", "two", "three"]);
  }, FAST_FAIL_MS);
});

// ---- iac-code REST extensions ----------------------------------------------------------------

describe("iac-code extension routes", () => {
  it("reads pipeline state with taskId and afterSequence, and 404 as null", async () => {
    const state = { snapshot: { lastSequence: 42 }, events: [{ sequence: 43 }] };
    let status = 200;
    handler = (_req, res) => jsonReply(res, status === 200 ? state : { error: "unknown" }, status);
    const c = newClient();
    expect(await c.pipelineState("task-p1", 7)).toEqual(state);
    expect(seen[0]?.method).toBe("GET");
    expect(seen[0]?.url).toBe("/iac-code/pipeline/state?taskId=task-p1&afterSequence=7");
    expect(seen[0]?.headers["a2a-version"]).toBe("1.0");
    expect(seen[0]?.headers.authorization).toBe("Bearer test-token");
    status = 404;
    expect(await c.pipelineState("task-p1", 0)).toBeNull();
    status = 500;
    await expect(c.pipelineState("task-p1", 0)).rejects.toMatchObject({ code: "A2A_UNAVAILABLE" });
  });

  it("maps ensure-restored replies: current/restored → true, 404 → false, 409 not ready → SESSION_BACKUP_NOT_READY", async () => {
    let reply: { status: number; body: unknown } = { status: 200, body: { status: "current" } };
    handler = (_req, res) => jsonReply(res, reply.body, reply.status);
    const c = newClient();
    const request = { cwd: "/srv/ws/t1", sessionId: "sess-a1", taskId: "task-a1" };

    expect(await c.ensureSessionRestored(request)).toBe(true);
    expect(seen[0]?.method).toBe("POST");
    expect(seen[0]?.url).toBe("/iac-code/session/ensure-restored");
    expect(seen[0]?.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(seen[0]?.body ?? "")).toEqual(request);

    reply = { status: 200, body: { status: "restored" } };
    expect(await c.ensureSessionRestored(request)).toBe(true);
    reply = { status: 404, body: { status: "not_found" } };
    expect(await c.ensureSessionRestored(request)).toBe(false);
    reply = { status: 404, body: { error: "Not Found" } };
    expect(await c.ensureSessionRestored(request)).toBe("unsupported");
    reply = { status: 409, body: { error: { code: "SESSION_BACKUP_NOT_READY", message: "wait", retryable: true } } };
    const notReady = await c.ensureSessionRestored(request).catch((error: unknown) => error);
    expectRunError(notReady, "SESSION_BACKUP_NOT_READY");
    reply = { status: 409, body: { error: { code: "OTHER", retryable: true } } };
    await expect(c.ensureSessionRestored(request)).rejects.toMatchObject({ code: "A2A_UNAVAILABLE" });
    reply = { status: 200, body: { status: "maybe" } };
    await expect(c.ensureSessionRestored(request)).rejects.toMatchObject({ code: "A2A_PROTOCOL_ERROR" });
  });
});

// ---- loopback rule ---------------------------------------------------------------------------

describe("assertLoopbackA2AUrl", () => {
  it.each([
    ["http://127.0.0.1:41242", "http://127.0.0.1:41242/"],
    ["http://localhost:8080/a2a//", "http://localhost:8080/a2a/"],
    ["https://[::1]:8443/x", "https://[::1]:8443/x/"],
    ["HTTP://LOCALHOST/", "http://localhost/"],
  ])("accepts %s as %s", (url, normalized) => {
    expect(assertLoopbackA2AUrl(url).href).toBe(normalized);
  });

  it.each(["http://10.0.0.1:41242/", "http://example.com/", "ftp://127.0.0.1/", "http://127.0.0.2/", "http://localhost.example.com/", "not a url"])(
    "refuses %s",
    (url) => {
      expect(() => assertLoopbackA2AUrl(url)).toThrow(`The AG-UI gateway may connect only to a loopback A2A HTTP(S) URL: ${url}`);
    },
  );

  it("is enforced by the client constructor", () => {
    expect(() => new A2AClient({ url: "http://example.com/" })).toThrow(/loopback/);
  });

  it("takes http2 only for an http:// URL (h2c)", () => {
    expect(() => new A2AClient({ url: "https://127.0.0.1:1/", http2: true })).toThrow(/h2c only/);
    expect(() => new A2AClient({ url: "https://127.0.0.1:1/" })).not.toThrow();
    expect(() => new A2AClient({ url: "http://127.0.0.1:1/", http2: true })).not.toThrow();
  });
});

// ---- metadata --------------------------------------------------------------------------------

describe("iac_code metadata", () => {
  const minimal = { cwd: "/srv/ws/t1", rosInvocationId: "invocation-1", language: "en", cleanupOnly: false };

  it("builds the pinned minimal metadata", () => {
    expect(buildIacCodeMetadata(minimal)).toStrictEqual({
      cleanupOnly: false,
      rosInvocationId: "invocation-1",
      preferredLanguage: "en",
      cwd: "/srv/ws/t1",
    });
  });

  it("maps every optional input to its wire key", () => {
    expect(
      buildIacCodeMetadata({
        ...minimal,
        language: "zh",
        cleanupOnly: true,
        model: "qwen-plus",
        llmApiKey: "sk-1",
        llmHeaders: { "X-Trace": "1" },
        thinking: { enabled: true, effort: "low", budget: 2048 },
        userId: "u-42",
        channel: "my-gateway",
        candidatePresentation: "rich",
        runMode: "pipeline",
        pipelineName: "selling",
        alibabaCloud: { accessKeyId: "ak", accessKeySecret: "sk", securityToken: "sts", regionId: "cn-hangzhou" },
        guidanceId: "g-1",
        executionFence: { version: "session-handoff-v1" },
        inputDigest: "d-1",
      }),
    ).toStrictEqual({
      user_id: "u-42",
      channel: "my-gateway",
      preferredLanguage: "zh",
      candidatePresentation: "rich",
      run_mode: "pipeline",
      pipeline_name: "selling",
      cleanupOnly: true,
      rosInvocationId: "invocation-1",
      guidance_id: "g-1",
      execution_fence: { version: "session-handoff-v1" },
      input_digest: "d-1",
      llm_headers: { "X-Trace": "1" },
      alibaba_cloud_access_key_id: "ak",
      alibaba_cloud_access_key_secret: "sk",
      alibaba_cloud_security_token: "sts",
      alibaba_cloud_region_id: "cn-hangzhou",
      cwd: "/srv/ws/t1",
      iac_code_model: "qwen-plus",
      iac_code_api_key: "sk-1",
      thinking: { enabled: true, effort: "low", budget: 2048 },
    });
  });

  it("trims the model and key, omits blank ones, sends empty llm headers and only the given cloud keys", () => {
    expect(buildIacCodeMetadata({ ...minimal, model: "  qwen-max \n", llmApiKey: " sk-2 " })).toMatchObject({
      iac_code_model: "qwen-max",
      iac_code_api_key: "sk-2",
    });
    const blank = buildIacCodeMetadata({ ...minimal, model: "   ", llmApiKey: "", llmHeaders: {}, alibabaCloud: { regionId: "cn-beijing" } });
    expect(blank).toStrictEqual({ ...buildIacCodeMetadata(minimal), llm_headers: {}, alibaba_cloud_region_id: "cn-beijing" });
  });

  it.each([
    [{ enabled: false }, { enabled: false }],
    [{ enabled: true, effort: "  ", budget: 0 }, { enabled: true }],
    [{ enabled: true, effort: " high ", budget: 1.5 }, { enabled: true, effort: "high" }],
    [{ enabled: true, budget: -1 }, { enabled: true }],
    [{ enabled: false, budget: 1 }, { enabled: false, budget: 1 }],
  ])("thinking %j → %j", (thinking, expected) => {
    expect(buildIacCodeMetadata({ ...minimal, thinking }).thinking).toStrictEqual(expected);
  });

  it("lists the secret-bearing keys", () => {
    expect([...SECRET_METADATA_KEYS].sort()).toEqual([
      "alibaba_cloud_access_key_id",
      "alibaba_cloud_access_key_secret",
      "alibaba_cloud_security_token",
      "iac_code_api_key",
      "llm_headers",
    ]);
  });

  it("derives the contextId from the thread id", () => {
    const threadId = "thread-ü-1";
    const expected = "agui-" + createHash("sha256").update(Buffer.from(threadId, "utf8")).digest("hex").slice(0, 40);
    expect(contextIdForThread(threadId)).toBe(expected);
    expect(contextIdForThread(threadId)).toHaveLength(45);
    expect(contextIdForThread("thread-2")).not.toBe(expected);
  });

  it("builds the user message, with taskId only when given", () => {
    const parts = [{ text: "hi" }];
    const metadata = buildIacCodeMetadata(minimal);
    expect(buildUserMessage({ messageId: "m1", contextId: "ctx", parts, metadata })).toStrictEqual({
      messageId: "m1",
      role: "ROLE_USER",
      parts,
      metadata: { iac_code: metadata },
      contextId: "ctx",
    });
    expect(buildUserMessage({ messageId: "m2", contextId: "ctx", taskId: "task-a1", parts, metadata }).taskId).toBe("task-a1");
  });
});
