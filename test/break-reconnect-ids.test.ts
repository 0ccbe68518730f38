// break-reconnect: hostile Last-Event-ID values on the wire (raw TCP, so nothing in a client library cleans them
// up first) and run ids that are awkward in a header (colons, spaces, unicode, `~`, `#`): every answer is a JSON
// refusal or the right bytes, never a 500, and the thread is left as it was.
import { createHash } from "node:crypto";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamProblems } from "./helpers/checks.js";
import { postRaw, readSse, startStack, type Stack } from "./helpers/e2e.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";

/** The digest key the gateway writes for a run id a header cannot carry (src/http/sse.ts eventIdKey, as documented). */
function digestKey(runId: string): string {
  return `~${createHash("sha256").update(runId, "utf8").digest("hex").slice(0, 32)}`;
}

/** One HTTP/1.1 request as raw bytes; `headerLines` are written verbatim (latin1 / utf8 bytes as given). */
async function rawPost(url: string, body: unknown, headerLines: (string | Buffer)[]): Promise<{ status: number; json: any; text: string }> {
  const { port } = new URL(url);
  const payload = Buffer.from(JSON.stringify(body));
  const head = Buffer.concat([
    Buffer.from(`POST / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${payload.length}\r\nConnection: close\r\n`),
    ...headerLines.map((line) => Buffer.concat([typeof line === "string" ? Buffer.from(line, "utf8") : line, Buffer.from("\r\n")])),
    Buffer.from("\r\n"),
  ]);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const all = Buffer.concat(chunks);
      const split = all.indexOf("\r\n\r\n");
      const headText = all.subarray(0, split).toString("latin1");
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(headText)?.[1] ?? 0);
      let rest = all.subarray(split + 4);
      if (/^transfer-encoding: *chunked/im.test(headText)) {
        const parts: Buffer[] = [];
        for (;;) {
          const eol = rest.indexOf("\r\n");
          const size = parseInt(rest.subarray(0, eol).toString("latin1"), 16);
          if (!(size > 0)) break;
          parts.push(rest.subarray(eol + 2, eol + 2 + size));
          rest = rest.subarray(eol + 2 + size + 2);
        }
        rest = Buffer.concat(parts);
      }
      const bodyText = rest.toString("utf8");
      let json: any;
      try {
        json = JSON.parse(bodyText);
      } catch {
        json = undefined;
      }
      resolve({ status, json, text: bodyText });
    });
    socket.write(Buffer.concat([head, payload]));
    setTimeout(() => socket.destroy(), 6_000).unref();
  });
}

let stack: Stack<ScriptedA2AServer>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.close());

describe("hostile Last-Event-ID values", () => {
  it("each is a JSON refusal (never a 500), and the thread takes its next turn afterwards", async () => {
    const body = stack.input();
    const first = await postRaw(stack.gateway.url, body);
    expect(first.status).toBe(200);
    const { records } = readSse(first.text);
    const n = records.filter((r) => r.kind === "event").length;
    const run = body.runId;
    const cases: [string, (string | Buffer)[], number, string][] = [
      ["huge", [`Last-Event-ID: ${run}:${"9".repeat(7_000)}`], 400, "INVALID_LAST_EVENT_ID"],
      ["huge run part", [`Last-Event-ID: ${"x".repeat(7_000)}:1`], 400, "INVALID_LAST_EVENT_ID"],
      ["colon only", ["Last-Event-ID: :"], 400, "INVALID_LAST_EVENT_ID"],
      ["negative", [`Last-Event-ID: ${run}:-3`], 400, "INVALID_LAST_EVENT_ID"],
      ["2^60", [`Last-Event-ID: ${run}:${2n ** 60n}`], 400, "INVALID_LAST_EVENT_ID"],
      ["2^53+1 (15 digits max)", [`Last-Event-ID: ${run}:9007199254740993`], 400, "INVALID_LAST_EVENT_ID"],
      ["leading zeros", [`Last-Event-ID: ${run}:0003`], 400, "INVALID_LAST_EVENT_ID"],
      ["space after colon", [`Last-Event-ID: ${run}: 3`], 400, "INVALID_LAST_EVENT_ID"],
      ["tab inside", [`Last-Event-ID: ${run}:\t3`], 400, "INVALID_LAST_EVENT_ID"],
      ["unicode bytes (utf8)", [`Last-Event-ID: ${run}:３`], 400, "INVALID_LAST_EVENT_ID"],
      ["unicode run part", [`Last-Event-ID: ünï:3`], 400, "INVALID_LAST_EVENT_ID"],
      ["latin1 byte", [Buffer.concat([Buffer.from(`Last-Event-ID: ${run}:3`), Buffer.from([0xff])])], 400, "INVALID_LAST_EVENT_ID"],
      ["two headers", [`Last-Event-ID: ${run}:2`, `Last-Event-ID: ${run}:3`], 400, "INVALID_LAST_EVENT_ID"],
      ["future", [`Last-Event-ID: ${run}:${n + 1}`], 400, "INVALID_LAST_EVENT_ID"],
      ["float", [`Last-Event-ID: ${run}:1e3`], 400, "INVALID_LAST_EVENT_ID"],
      ["hex", [`Last-Event-ID: ${run}:0x3`], 400, "INVALID_LAST_EVENT_ID"],
      ["another thread's run", [`Last-Event-ID: ${stack.input().runId}:1`], 400, "INVALID_LAST_EVENT_ID"],
      ["a proto client", [`Last-Event-ID: ${run}:1`, "Accept: application/vnd.ag-ui.event+proto"], 400, "INVALID_LAST_EVENT_ID"],
    ];
    for (const [name, lines, status, code] of cases) {
      const t0 = Date.now();
      const reply = await rawPost(stack.gateway.url, body, lines);
      expect({ name, status: reply.status, code: reply.json?.error?.code }).toEqual({ name, status, code });
    }
    // Whitespace around the value is not part of it (HTTP strips it): a valid cursor.
    const padded = await rawPost(stack.gateway.url, body, [`Last-Event-ID:    ${run}:${n - 1}   `]);
    expect(padded.status).toBe(200);
    expect(readSse(padded.text).events.map((e) => e.type)).toEqual(["RUN_FINISHED"]);
    // An empty header is no header: the repeat is the duplicate it is.
    const empty = await rawPost(stack.gateway.url, body, ["Last-Event-ID: "]);
    expect({ status: empty.status, code: empty.json?.error?.code }).toEqual({ status: 409, code: "DUPLICATE_RUN_ID" });
    // Nothing was changed: the full replay is still the first delivery, and the thread takes its next turn.
    const again = await rawPost(stack.gateway.url, body, [`Last-Event-ID: ${run}:0`]);
    expect(again.text).toBe(first.text);
    const next = await postRaw(stack.gateway.url, stack.input({ threadId: body.threadId }));
    expect(streamProblems(readSse(next.text).events)).toEqual([]);
  });
});

describe("run ids a header finds awkward", () => {
  const awkward = ["a:b:c", "with space", "x#1", "~tilde", "ünïcödé", "emoji-🚀", " edge ", "tab\there", "run:7:0", "%3A", "日本語:1"];

  for (const runId of awkward) {
    it(`${JSON.stringify(runId)}: ids round-trip, a reconnect with a received id gets the rest byte for byte`, async () => {
      const body = stack.input({ runId });
      const first = await postRaw(stack.gateway.url, body);
      expect(first.status).toBe(200);
      const { records, events } = readSse(first.text);
      expect(streamProblems(events)).toEqual([]);
      const ids = records.flatMap((r) => (r.kind === "event" ? [r.id!] : []));
      // A run id that begins with "~" is digested too: it could otherwise pass for another run's digest key.
      const key = /^[\x21-\x7d](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(runId) ? runId : digestKey(runId);
      expect(ids).toEqual(ids.map((_, i) => `${key}:${i + 1}`));
      const pieces = first.text.split(/(?<=\n\n)/);
      for (const at of [0, 1, Math.floor(ids.length / 2), ids.length - 1, ids.length]) {
        const cursor = at === 0 ? `${key}:0` : ids[at - 1]!;
        const reply = await fetch(stack.gateway.url + "/", {
          method: "POST",
          headers: { "Content-Type": "application/json", "Last-Event-ID": cursor },
          body: JSON.stringify(body),
        });
        expect(reply.status, cursor).toBe(200);
        expect(await reply.text(), cursor).toBe(pieces.slice(at).join(""));
      }
    });
  }

  it("a printable run id that looks like another run's digest key does not get (or give) that run's events", async () => {
    // Same thread, same user: run "ünï" streams with ids `~<digest>:<seq>`; a later run is literally named `~<digest>`.
    const threadId = stack.input().threadId;
    const unicodeBody = stack.input({ threadId, runId: "ünï", prompt: "Create a VPC template" });
    const first = await postRaw(stack.gateway.url, unicodeBody);
    expect(first.status).toBe(200);
    const key = digestKey("ünï");
    expect(readSse(first.text).records[0]).toMatchObject({ id: `${key}:1` });
    const lookalike = stack.input({ threadId, runId: key, prompt: "deploy the stack" });
    const second = await postRaw(stack.gateway.url, lookalike);
    expect(second.status).toBe(200);
    expect(readSse(second.text).events.at(-1)?.type).toBe("RUN_FINISHED");
    // The first run's client reconnects with the id it received: it must get its own run's events, or a refusal.
    const reply = await fetch(stack.gateway.url + "/", {
      method: "POST",
      headers: { "Content-Type": "application/json", "Last-Event-ID": `${key}:0` },
      body: JSON.stringify(unicodeBody),
    });
    const text = await reply.text();
    if (reply.status === 200) expect(text, "the reconnect of run ünï got run ~<digest>'s bytes").toBe(first.text);
    else expect(JSON.parse(text).error.code).toBe("REPLAY_EXPIRED");
  });
});
