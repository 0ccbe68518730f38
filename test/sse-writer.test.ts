// The SSE/protobuf writer is the last hand-written consumer of a run: an event it cannot encode (a BigInt,
// an int64 overflow, a cycle) ends that one stream with a balanced RUN_ERROR, never the process.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { EventType } from "@ag-ui/core";
import { Observable, config } from "rxjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AguiOutput } from "../operators/index.js";
import { writeSse } from "../src/http/sse.js";
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
    void writeSse(res, () => run(BAD[which]!), {
      proto: req.headers.accept === "application/vnd.ag-ui.event+proto",
      onFailure: (error) => failures.push(error),
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
