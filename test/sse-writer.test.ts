// The SSE/protobuf writer is the last hand-written consumer of a run: an event it cannot encode (a BigInt,
// an int64 overflow, a cycle) ends that one stream with a balanced RUN_ERROR, never the process.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { EventType } from "@ag-ui/core";
import { Observable, config } from "rxjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AguiOutput } from "../operators/index.js";
import { SseResponse, writeSse } from "../src/http/sse.js";
import { localize, messageText } from "../src/i18n/index.js";
import { httpCall, sseEvents, streamProblems } from "./helpers/faults.js";
import { protoEvents } from "./helpers/hostile.js";

const PID = process.pid;
let server: Server;
let url: string;
let unsubscribed = 0;
let failures: unknown[] = [];
const escaped: unknown[] = [];

const cyclic: Record<string, unknown> = {};
cyclic.self = cyclic;

function run(bad: Record<string, unknown>): Observable<AguiOutput> {
  return new Observable<AguiOutput>((subscriber) => {
    const t = 1;
    subscriber.next({ type: EventType.RUN_STARTED, threadId: "t", runId: "r", timestamp: t } as AguiOutput);
    subscriber.next({ type: EventType.TEXT_MESSAGE_START, messageId: "m", role: "assistant", timestamp: t } as AguiOutput);
    subscriber.next({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: "m", delta: "hi", timestamp: t } as AguiOutput);
    subscriber.next({ timestamp: t, ...bad } as unknown as AguiOutput);
    subscriber.next({ type: EventType.TEXT_MESSAGE_END, messageId: "m", timestamp: t } as AguiOutput);
    subscriber.next({ type: EventType.RUN_FINISHED, threadId: "t", runId: "r", timestamp: t } as AguiOutput);
    subscriber.complete();
    return () => unsubscribed++;
  });
}

const BAD: Record<string, Record<string, unknown>> = {
  bigint: { type: EventType.CUSTOM, name: "x", value: { n: 1n } },
  cycle: { type: EventType.CUSTOM, name: "x", value: cyclic },
  int64: { type: EventType.RUN_FINISHED, threadId: "t", runId: "r", usage: [{ inputTokens: 2 ** 64, outputTokens: 0, totalTokens: 0 }] },
};

beforeAll(async () => {
  config.onUnhandledError = (error) => escaped.push(error);
  server = createServer((req, res) => {
    const which = new URL(req.url ?? "/", "http://x").searchParams.get("bad") ?? "bigint";
    const language = new URL(req.url ?? "/", "http://x").searchParams.get("lang");
    const proto = req.headers.accept === "application/vnd.ag-ui.event+proto";
    void writeSse(new SseResponse(res, proto), () => run(BAD[which]!), {
      proto,
      onFailure: (error) => {
        failures.push(error);
      },
      ...(language === "de" && { language }),
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  config.onUnhandledError = null;
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe("writeSse with an event it cannot encode", () => {
  for (const [name, framing] of [["bigint", "sse"], ["cycle", "sse"], ["int64", "proto"], ["bigint", "proto"]] as const) {
    it(`${name} (${framing}): spans closed, one RUN_ERROR, the run unsubscribed, the failure reported`, async () => {
      failures = [];
      const before = unsubscribed;
      const accept = framing === "proto" ? "application/vnd.ag-ui.event+proto" : "text/event-stream";
      const reply = await httpCall(`${url}?bad=${name}`, { method: "GET", headers: { Accept: accept } });
      const events = framing === "sse" ? sseEvents(reply.text).events : protoEvents(reply.body);
      if (framing === "sse") expect(sseEvents(reply.text).problems).toEqual([]);
      expect(events.map((e) => e.type)).toEqual(["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_ERROR"]);
      expect(events.at(-1)?.["code"]).toBe("A2A_PROTOCOL_ERROR");
      expect(streamProblems(events)).toEqual([]);
      expect(failures).toHaveLength(1);
      expect(unsubscribed).toBe(before + 1);
      expect(escaped).toEqual([]);
      expect(process.pid).toBe(PID);
    });
  }
});

describe("the writer's last-resort RUN_ERROR", () => {
  it("speaks the run's language", async () => {
    const english = sseEvents((await httpCall(`${url}?bad=bigint`, { method: "GET" })).text).events.at(-1);
    const german = sseEvents((await httpCall(`${url}?bad=bigint&lang=de`, { method: "GET" })).text).events.at(-1);
    expect(english?.["code"]).toBe("A2A_PROTOCOL_ERROR");
    expect(german?.["code"]).toBe("A2A_PROTOCOL_ERROR");
    expect(german?.["message"]).toBe(localize("de", messageText("a2a.invalidFrame")));
    expect(german?.["message"]).not.toBe(english?.["message"]);
  });
});

describe("writeSse's socket writes", () => {
  const textEvent = (i: number, delta = "x") =>
    ({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: "m", delta: `${delta}${i}`, timestamp: 1 }) as AguiOutput;

  async function writesOf(events: (emit: (e: AguiOutput) => void, done: () => void) => void): Promise<{ writes: string[]; body: string }> {
    const writes: string[] = [];
    const local = createServer((_req, res) => {
      const write = res.write.bind(res) as (chunk: unknown) => boolean;
      res.write = ((chunk: unknown) => {
        writes.push(typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8"));
        return write(chunk);
      }) as typeof res.write;
      void writeSse(new SseResponse(res, false), () => new Observable<AguiOutput>((subscriber) => events((e) => subscriber.next(e), () => subscriber.complete())));
    });
    await new Promise<void>((resolve) => local.listen(0, "127.0.0.1", resolve));
    try {
      const { text } = await httpCall(`http://127.0.0.1:${(local.address() as AddressInfo).port}/`, { method: "GET" });
      return { writes, body: text };
    } finally {
      await new Promise<void>((resolve) => local.close(() => resolve()));
    }
  }

  it("the events of one tick leave in one write, in order; a later tick's in another", async () => {
    const { writes, body } = await writesOf((emit, done) => {
      // 100 records, about 8 KB: under the socket's high-water mark.
      for (let i = 0; i < 100; i++) emit(textEvent(i));
      setTimeout(() => {
        emit(textEvent(100));
        emit({ type: "HEARTBEAT" } as AguiOutput);
        emit(textEvent(101));
        done();
      }, 20);
    });
    const records = (chunk: string) => chunk.split("\n\n").filter(Boolean);
    expect(records(writes[0]!).map((r) => JSON.parse(r.slice(6)).delta)).toEqual(Array.from({ length: 100 }, (_, i) => `x${i}`));
    // The heartbeat's bytes go after the text before them and before the text after them.
    expect(writes.slice(1)).toEqual([expect.stringContaining('"x100"'), ": heartbeat\n\n", expect.stringContaining('"x101"')]);
    expect(body).toBe(writes.join(""));
  });

  it("a burst longer than the socket's high-water mark is written in pieces of about that size, so the flow gate closes in time", async () => {
    const delta = "y".repeat(1000);
    const { writes, body } = await writesOf((emit, done) => {
      for (let i = 0; i < 200; i++) emit(textEvent(i, delta));
      done();
    });
    expect(writes.length).toBeGreaterThan(5);
    for (const chunk of writes) expect(chunk.length).toBeLessThan(16 * 1024 + 1200);
    expect(body.split("\n\n").filter(Boolean)).toHaveLength(200);
  });
});
