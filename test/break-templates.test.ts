// break-templates: an outsider's attacks on this round's hot-path changes.
// 1. FrameTemplates (through SseFrameDecoder and through the real gateway): record sequences made to make the
//    template decoding answer differently from a full parse. Every sequence is read twice: as the kernel sent it
//    (every record but its text the same, so the templates decode) and with each record's JSON-RPC id made
//    different (no two prefixes alike, so every record is parsed in full). The frames, and the gateway's AG-UI
//    events, must be the same.
// 2. The replay log's chunks: reconnects with a cursor inside a large chunk of multi-byte text, many readers,
//    a reader mid-run, a TCP cut in the middle of a large chunk.
// 3. GatewayAgent: abort right after a start, then a new run on the same thread; abort/run cycles.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { EventSchema } from "@ag-ui/core/schemas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRawA2AServer, type RawA2AServer, type RawExchange, type RawResponder } from "../src/demo/index.js";
import { ensureCliBuilt, startCliOnState, type CliGateway } from "./helpers/durable.js";
import { runInput } from "./helpers/run-input.js";
import type { BaseEvent } from "@ag-ui/client";
import { GatewayAgent } from "../src/client/index.js";
import { at, plannedFetch } from "./helpers/break-client-fetch.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { liveSse, openSse, scriptByPrompt, sessionEventOf, slowTurn, startStack, type Stack, type WireEvent } from "./helpers/e2e.js";
import { parseSse } from "./helpers/sse.js";
import { startCuttingProxy } from "./helpers/cutting-proxy.js";
import { comparableEvents, httpCall, readRun, streamProblems } from "./helpers/faults.js";
import { cutBytes, decodeSseChunks } from "./helpers/sse-frames.js";
import { seeded } from "./helpers/seeded.js";
import { DEFAULT_REPLAY_BOUNDS, ReplayLog } from "../src/http/replay-log.js";
import { FrameTemplates } from "../src/a2a/frame-templates.js";

const PROBE = "agui-gateway-template-probe-5b1c";

// ---------------------------------------------------------------------------------------------------------------
// Record material. `r` is a record's JSON-RPC envelope as raw text; `{ID}` is replaced by the envelope id.

const ENV = (result: string) => `{"jsonrpc":"2.0","id":"{ID}","result":${result}}`;

/** An answer delta whose text literal is written raw (`lit` is the literal's body, escapes as the kernel wrote them). */
function answerRaw(body: string, opts: { messageId?: string; partExtra?: string; messageExtra?: string; updateExtra?: string; resultExtra?: string; meta?: string } = {}): string {
  const messageId = opts.messageId ?? "m1";
  const meta = opts.meta ?? `{"iac_code":{"iacCodeSessionId":"s1"}}`;
  return ENV(
    `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":${JSON.stringify(messageId)},"role":"ROLE_AGENT","parts":[{"text":"${body}"${opts.partExtra ?? ""}}]${opts.messageExtra ?? ""}}},"metadata":${meta}${opts.updateExtra ?? ""}}${opts.resultExtra ?? ""}}`,
  );
}

const answer = (text: string, opts: Parameters<typeof answerRaw>[1] = {}) => answerRaw(JSON.stringify(text).slice(1, -1), opts);

function thinkingRaw(body: string, extra = ""): string {
  return ENV(`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"},"metadata":{"iac_code":{"thinking":{"type":"raw_thinking","text":"${body}"${extra}},"iacCodeSessionId":"s1"}}}}`);
}

const thinking = (text: string, extra = "") => thinkingRaw(JSON.stringify(text).slice(1, -1), extra);

/** A record as an SSE record: `event:` line, line ends. */
interface Rec {
  data: string;
  event?: string;
  crlf?: boolean;
}

function sse(records: readonly (string | Rec)[], variant: "templated" | "parsed"): string {
  return records
    .map((r, i) => {
      const rec = typeof r === "string" ? { data: r } : r;
      const eol = rec.crlf ? "\r\n" : "\n";
      const data = rec.data.replace("{ID}", variant === "templated" ? "r1" : `r${i}`);
      return `${rec.event ? `event: ${rec.event}${eol}` : ""}data: ${data}${eol}${eol}`;
    })
    .join("");
}

/** Template answers given so far (counted by wrapping FrameTemplates.decode): a sequence that never hits tests nothing. */
let templateHits = 0;
const originalDecode = FrameTemplates.prototype.decode;
FrameTemplates.prototype.decode = function (this: FrameTemplates, data: string) {
  const frame = originalDecode.call(this, data);
  if (frame !== undefined) templateHits++;
  return frame;
};

/** The same frames (and the same failure) whether the templates decode or every record is parsed, whole or byte by byte. */
function expectSameFrames(records: readonly (string | Rec)[], opts: { byteByByte?: boolean } = {}): { frames: string[]; error?: string } {
  const parsed = decodeSseChunks([Buffer.from(sse(records, "parsed"), "utf8")]);
  const templated = Buffer.from(sse(records, "templated"), "utf8");
  expect(decodeSseChunks([templated])).toEqual(parsed);
  if (opts.byteByByte !== false) expect(decodeSseChunks(cutBytes(templated, () => 1))).toEqual(parsed);
  return parsed;
}

const base = [answer("one "), answer("two "), answer("three ")];

/** Sequences meant to make the templates answer otherwise than the full parse. Each starts with a learned template. */
const HOSTILE_SEQUENCES: Record<string, (string | Rec)[]> = {
  "\\u0022 and \\u005c escapes in the text": [...base, answerRaw("say \\u0022hi\\u0022"), answerRaw("back\\u005c"), answerRaw("\\u005c\\u0022"), answer("four")],
  "a text ending in a backslash (escaped and not)": [...base, answer("tail\\"), answerRaw("tail\\"), answer("five")],
  "a text that is only escaped quotes and backslashes": [...base, answer('"'), answer("\\"), answer('\\"'), answer('"\\'), answer("six")],
  "lone surrogates, escaped and raw": [...base, answerRaw("\\ud800"), answerRaw("x\\udfff"), answerRaw("\\udc00\\ud800"), answer("\ud800"), answer("seven")],
  "control characters raw and escaped": [...base, answerRaw("bell\u0007"), answerRaw("nul\\u0000"), answerRaw("tab\t"), answer("\u001f"), answer("eight")],
  "a middle that closes the string and adds a second text key": [...base, answerRaw('x","text":"y'), answerRaw('x\\","text":"y'), answer("nine")],
  "a middle that adds a second parts array": [...base, answerRaw('x"}],"parts":[{"text":"y'), answer("ten")],
  "a second statusUpdate after the first": [
    ...base,
    answer("a", { resultExtra: `,"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}` }),
    answer("b", { resultExtra: `,"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}` }),
    answer("c", { resultExtra: `,"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}` }),
    answer("d"),
  ],
  "two text keys in the part, the second the winner": [
    answer("a", { partExtra: `,"text":"w"` }),
    answer("b", { partExtra: `,"text":"w"` }),
    answer("c", { partExtra: `,"text":"w"` }),
    answer("d", { partExtra: `,"text":"w2"` }),
  ],
  "two text keys in the part, the first the same literal as the second": [
    answerRaw(`same","text":"same`),
    answerRaw(`same","text":"same`),
    answerRaw(`other","text":"same`),
    answerRaw(`same","text":"other`),
  ],
  "the text literal also earlier as the message id": [
    answer("m1"),
    answer("m1"),
    answer("m1"),
    answer("x"),
    answer("m1", { messageId: "x" }),
    answer("y", { messageId: "x" }),
  ],
  "the text literal also later as a metadata value": [
    answer("v", { meta: `{"iac_code":{"iacCodeSessionId":"s1","note":"v"}}` }),
    answer("v", { meta: `{"iac_code":{"iacCodeSessionId":"s1","note":"v"}}` }),
    answer("w", { meta: `{"iac_code":{"iacCodeSessionId":"s1","note":"v"}}` }),
    answer("v", { meta: `{"iac_code":{"iacCodeSessionId":"s1","note":"v"}}` }),
  ],
  "the probe string as the text, as a metadata value, and as a middle": [
    answer(PROBE),
    answer(PROBE),
    answer(PROBE),
    answer("a", { meta: `{"iac_code":{"note":"${PROBE}"}}` }),
    answer("b", { meta: `{"iac_code":{"note":"${PROBE}"}}` }),
    answer("c", { meta: `{"iac_code":{"note":"${PROBE}"}}` }),
    answer(PROBE, { meta: `{"iac_code":{"note":"${PROBE}"}}` }),
    ...base,
    answer(PROBE),
  ],
  "records just under and just over 8 KiB": (() => {
    const pad = (n: number, tag: string) => {
      const shell = answer("").replace("{ID}", "r1").length;
      return answer(tag + "x".repeat(n - shell - tag.length));
    };
    return [pad(8 * 1024 - 1, "a"), pad(8 * 1024, "b"), pad(8 * 1024, "c"), pad(8 * 1024 + 1, "d"), pad(8 * 1024 + 1, "e"), pad(20_000, "f"), pad(400, "g"), pad(8 * 1024 + 1, "h")];
  })(),
  "answer and thinking deltas alternating": Array.from({ length: 24 }, (_, i) => (i % 2 === 0 ? answer(`a${i} "q"`) : thinking(`t${i}\\`))),
  "a thinking delta with two text keys": [thinking("a", `,"text":"w"`), thinking("b", `,"text":"w"`), thinking("c", `,"text":"w"`), thinking("d")],
  "a delta whose parts[0] is not text": [
    ...base,
    ENV(`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m1","role":"ROLE_AGENT","parts":[{"url":"one "}]}},"metadata":{"iac_code":{"iacCodeSessionId":"s1"}}}}`),
    ENV(`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m1","role":"ROLE_AGENT","parts":[{"text":1}]}},"metadata":{"iac_code":{"iacCodeSessionId":"s1"}}}}`),
    answer("four"),
  ],
  "parts with a second text part after the first": [
    answer("a", { partExtra: "}, {\"text\":\"second\"" }),
    answer("b", { partExtra: "}, {\"text\":\"second\"" }),
    answer("c", { partExtra: "}, {\"text\":\"second\"" }),
  ],
  "CRLF line ends and multi-line data": [
    { data: answer("one "), crlf: true },
    { data: answer("two "), crlf: true },
    { data: answer("three\r\n"), crlf: true },
    { data: answer("four"), crlf: true },
  ],
  "unicode texts (emoji, CJK, combining marks) and non-ASCII written as \\u escapes": [
    ...base,
    answer("😀🚀 中文テキスト"),
    answerRaw("\\ud83d\\ude00"),
    answerRaw("\\u4e2d\\u6587"),
    answer("e\u0301"),
    answer("\u2028\u2029"),
    answer("\ufeff"),
  ],
  "a middle with a stray closing brace or comma": [...base, answerRaw('x"},"y":"'), answerRaw('x",'), answerRaw("x}"), answer("ok")],
};

/** A repeated key or a later equal literal: the probe refuses the template. */
const NEVER_TEMPLATED = new Set(["two text keys in the part, the second the winner", "the text literal also later as a metadata value", "a thinking delta with two text keys"]);

/** Records that end the stream: the failure must come at the same record, after the same frames. */
const FAILING_SEQUENCES: Record<string, (string | Rec)[]> = {
  "an event: error record that matches the template": [...base, { data: answer("boom"), event: "error" }, answer("after")],
  "invalid JSON matching the prefix and suffix (a raw quote)": [...base, answerRaw('x"y'), answer("after")],
  "invalid JSON matching the prefix and suffix (a lone backslash)": [...base, answerRaw("x\\"), answer("after")],
  "invalid JSON matching the prefix and suffix (a bad escape)": [...base, answerRaw("\\q"), answer("after")],
  "invalid JSON matching the prefix and suffix (a raw newline via data lines)": [...base, answerRaw("line\ndata: two"), answer("after")],
  "a raw control character": [...base, answerRaw("bell\u0001"), answer("after")],
  "a truncated \\u escape": [...base, answerRaw("\\u12"), answer("after")],
  "a JSON-RPC error envelope after a template": [...base, `{"jsonrpc":"2.0","id":"{ID}","error":{"code":-32603,"message":"x"}}`, answer("after")],
};

describe("frame templates against a full parse (SseFrameDecoder)", () => {
  for (const [name, records] of Object.entries(HOSTILE_SEQUENCES)) {
    it(`${name}: the same frames, whole and cut at every byte`, () => {
      const hitsBefore = templateHits;
      const { frames } = expectSameFrames(records, { byteByByte: sse(records, "templated").length < 300_000 });
      expect(frames.length).toBeGreaterThan(0);
      // Where the template is refused by design, nothing is decoded from it; everywhere else it was used.
      if (!NEVER_TEMPLATED.has(name)) expect(templateHits - hitsBefore).toBeGreaterThan(0);
    });
  }
  for (const [name, records] of Object.entries(FAILING_SEQUENCES)) {
    it(`${name}: fails at the same record after the same frames`, () => {
      const hitsBefore = templateHits;
      const { error, frames } = expectSameFrames(records);
      expect(templateHits - hitsBefore).toBeGreaterThan(0);
      expect(frames.length).toBeGreaterThanOrEqual(3);
      expect(error).toBeDefined();
    });
  }

  it("every template record with one character changed (seeded), cut at random", () => {
    const random = seeded(0x5eed);
    const alphabet = ['"', "\\", "u", "0", "}", "]", ",", ":", "{", "[", "a", " ", "\u0001", "é"];
    for (let round = 0; round < 60; round++) {
      const records: string[] = [];
      for (let i = 0; i < 40; i++) {
        let record = random() < 0.5 ? answer(`w${i % 3}`) : thinking(`t${i % 3}`);
        if (random() < 0.15) {
          const at = Math.floor(random() * record.length);
          record = record.slice(0, at) + alphabet[Math.floor(random() * alphabet.length)] + record.slice(at + 1);
          // Keep the id placeholder: a change there says nothing about templates.
          if (!record.includes("{ID}")) continue;
        }
        records.push(record);
      }
      expectSameFrames(records, { byteByByte: false });
      const chunks = cutBytes(Buffer.from(sse(records, "templated"), "utf8"), () => 1 + Math.floor(random() * 64));
      expect(decodeSseChunks(chunks)).toEqual(decodeSseChunks([Buffer.from(sse(records, "parsed"), "utf8")]));
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The same sequences through the real gateway: a raw kernel plays a sequence by prompt (`T:` as is, `P:` with every
// record's id changed), real TCP chunks in between; the AG-UI streams must be the same event for event.

let kernelStack: Stack<RawA2AServer> | undefined;

function playSequences(ex: RawExchange, res: RawResponder): void {
  if (ex.method !== "SendStreamingMessage") {
    res.json(200, { jsonrpc: "2.0", id: ex.id, result: { id: "t1", contextId: "c1", status: { state: "TASK_STATE_CANCELED" } } });
    return;
  }
  const contextId = String(ex.params?.message?.contextId ?? "");
  const prompt = ((ex.params?.message?.parts ?? []) as { text?: string }[]).map((p) => p.text ?? "").join("");
  const variant = prompt.startsWith("T:") ? "templated" : "parsed";
  const records = ALL_SEQUENCES[prompt.slice(2)] ?? [];
  const done = ENV(`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`);
  const body = sse([...records, done], variant).replaceAll('"contextId":"c1"', `"contextId":${JSON.stringify(contextId)}`);
  res.sseStart();
  // Several TCP writes of odd sizes: records land across the gateway's chunks.
  for (let at = 0, n = 0; at < body.length; n++) {
    const size = [1, 7, 300, 4096, 33][n % 5]!;
    res.sseRaw(body.slice(at, at + size));
    at += size;
  }
  res.end();
}

const ALL_SEQUENCES: Record<string, (string | Rec)[]> = { ...HOSTILE_SEQUENCES, ...FAILING_SEQUENCES };

/** The run of `prompt`: a 200 stream of schema-valid events, a well-formed run (readRun's problems). */
async function gatewayRun(stack: Stack<RawA2AServer>, prompt: string): Promise<WireEvent[]> {
  const { status, events, problems } = await readRun(stack.gateway.url, stack.input({ prompt }));
  expect(status).toBe(200);
  expect(problems).toEqual([]);
  return events;
}

describe("frame templates against a full parse (through the gateway)", () => {
  beforeAll(async () => {
    kernelStack = await startStack({ raw: (ex, res) => playSequences(ex, res) });
  });
  afterAll(async () => {
    await kernelStack?.close();
  });

  for (const name of Object.keys(ALL_SEQUENCES)) {
    it(`${name}: the same AG-UI events`, async () => {
      const stack = kernelStack!;
      const templated = await gatewayRun(stack, `T:${name}`);
      const parsed = await gatewayRun(stack, `P:${name}`);
      expect(comparableEvents(templated)).toEqual(comparableEvents(parsed));
      // A record the full parse refuses ends the run as an error at that record (the decoder says which).
      const refused = decodeSseChunks([Buffer.from(sse(ALL_SEQUENCES[name]!, "parsed"), "utf8")]).error !== undefined;
      expect(templated.at(-1)?.type).toBe(refused ? "RUN_ERROR" : "RUN_FINISHED");
      expect(templated.some((e) => e.type === "TEXT_MESSAGE_CONTENT" || e.type.startsWith("REASONING"))).toBe(true);
      const health = await httpCall(new URL("/health", stack.gateway.url).href, { method: "GET", timeoutMs: 5_000 });
      expect(health.status).toBe(200);
    });
  }
});

// ---------------------------------------------------------------------------------------------------------------
// The replay log's chunks. A kernel streams batches of multi-byte text deltas in single writes (one gateway tick
// each: one large byte chunk in the log); the second batch waits for the test to release it.

const MULTI = ["😀", "中文", "テキスト", "é", "🚀🚀", "a", "\u0301", "한국어", "𝄞", "\u2028", "\u2029"];

/**
 * Texts with U+2028/U+2029, which JSON.stringify leaves raw in the gateway's records: a line end to a /m regex. The last
 * one would put a record of its own (`data: {}`) between two of them.
 */
const LINE_SEPARATED = ["a\u2028b", "c\u2029d", "中\u2028文", "e\u2028data: {}\u2028f"];

interface Gate {
  release(): void;
  released: Promise<void>;
}

const gates = new Map<string, Gate>();

function gateFor(prompt: string): Gate {
  let gate = gates.get(prompt);
  if (!gate) {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    gate = { release, released };
    gates.set(prompt, gate);
  }
  return gate;
}

function batch(contextId: string, id: unknown, from: number, count: number, texts: readonly string[]): string {
  let out = "";
  for (let i = from; i < from + count; i++) {
    const text = `${texts[i % texts.length]}${i} `;
    const result = `{"statusUpdate":{"taskId":"t1","contextId":${JSON.stringify(contextId)},"status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m1","role":"ROLE_AGENT","parts":[{"text":${JSON.stringify(text)}}]}},"metadata":{"iac_code":{"iacCodeSessionId":"s1"}}}}`;
    out += `data: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}\n\n`;
  }
  return out;
}

/** `mb:<tag>:<count>:<texts>`: `count` deltas, then (after the test's release of `<tag>`) `count` more, then the end. */
async function playBatches(ex: RawExchange, res: RawResponder): Promise<void> {
  if (ex.method === "ListTasks") return res.json(200, { jsonrpc: "2.0", id: ex.id, result: { tasks: [] } });
  if (ex.method !== "SendStreamingMessage") {
    res.json(200, { jsonrpc: "2.0", id: ex.id, result: { id: "t1", status: { state: "TASK_STATE_CANCELED" } } });
    return;
  }
  const contextId = String(ex.params?.message?.contextId ?? "");
  const prompt = ((ex.params?.message?.parts ?? []) as { text?: string }[]).map((p) => p.text ?? "").join("");
  const [, tag, countText, textsName] = prompt.split(":");
  const count = Number(countText);
  const texts = textsName === "ls" ? LINE_SEPARATED : textsName === "plain" ? ["plain", "中文"] : MULTI;
  // `plain-ls`: the first batch without line separators, the second with them.
  const later = textsName === "plain-ls" ? LINE_SEPARATED : texts;
  res.sseStart();
  res.sseRaw(batch(contextId, ex.id, 0, count, textsName === "plain-ls" ? ["plain", "中文"] : texts));
  await Promise.race([gateFor(tag!).released, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  res.sseRaw(batch(contextId, ex.id, count, count, later));
  res.sseRaw(`data: {"jsonrpc":"2.0","id":${JSON.stringify(ex.id)},"result":{"statusUpdate":{"taskId":"t1","contextId":${JSON.stringify(contextId)},"status":{"state":"TASK_STATE_COMPLETED"}}}}\n\n`);
  res.end();
}

/** The records of an SSE text with their ids (heartbeats left out), checked against the framing contract. */
function idRecords(text: string): { id: string; seq: number; event: WireEvent }[] {
  const { records, problems } = parseSse(text);
  expect(problems).toEqual([]);
  return records.flatMap((r) => (r.kind === "event" ? [{ id: r.id!, seq: Number(r.id!.slice(r.id!.lastIndexOf(":") + 1)), event: r.event }] : []));
}

async function postText(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const response = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", Accept: "text/event-stream", ...headers }, body: JSON.stringify(body) });
  return { status: response.status, text: await response.text() };
}

describe("replay from inside large multi-byte chunks", () => {
  let stack: Stack<RawA2AServer>;
  beforeAll(async () => {
    stack = await startStack({ raw: (ex: RawExchange, res: RawResponder) => playBatches(ex, res), gateway: { reconnectGraceSeconds: 5 } });
  });
  afterAll(async () => {
    for (const gate of gates.values()) gate.release();
    await stack?.close();
  });

  it("an ended run: a Last-Event-ID at every seq gets exactly the records after it, byte for byte", async () => {
    gateFor("ended").release();
    const input = stack.input({ prompt: "mb:ended:300:multi" });
    const whole = await postText(stack.gateway.url, input);
    expect(whole.status).toBe(200);
    const all = idRecords(whole.text);
    expect(all.length).toBeGreaterThan(600);
    expect(all.map((r) => r.seq)).toEqual(all.map((_, i) => i + 1));
    for (const event of all) expect(() => EventSchema.parse(event.event)).not.toThrow();
    const key = all[0]!.id.slice(0, all[0]!.id.lastIndexOf(":"));
    for (let seq = 0; seq <= all.length; seq += seq < 20 || seq > all.length - 20 ? 1 : 7) {
      const again = await postText(stack.gateway.url, input, { "Last-Event-ID": `${key}:${seq}` });
      expect(again.status).toBe(200);
      // The same bytes as the first answer's tail (heartbeats aside).
      const tail = idRecords(again.text);
      expect(tail.map((r) => r.seq)).toEqual(all.slice(seq).map((r) => r.seq));
      expect(tail.map((r) => r.event)).toEqual(all.slice(seq).map((r) => r.event));
    }
  });

  it("a live run: a client that drops mid-chunk and reconnects from there gets every event once, in order", async () => {
    for (const at of [3, 57, 150, 299]) {
      const tag = `live-${at}`;
      const input = stack.input({ prompt: `mb:${tag}:300:multi` });
      const first = await openSse(stack.gateway.url, input);
      let n = 0;
      await first.until(() => ++n >= at);
      first.abort();
      const got = first.events.slice(0, at);
      // The ids the first connection had: read from a replay of the first `at` records' neighbourhood.
      const key = `${input.runId}`;
      const again = await fetch(stack.gateway.url, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream", "Last-Event-ID": `${key}:${at}` },
        body: JSON.stringify(input),
      });
      expect(again.status).toBe(200);
      const text = again.text();
      gateFor(tag).release();
      const rest = idRecords(await text);
      expect(rest[0]?.seq).toBe(at + 1);
      expect(rest.map((r) => r.seq)).toEqual(rest.map((_, i) => at + 1 + i));
      const events = [...got, ...rest.map((r) => r.event)];
      expect(streamProblems(events)).toEqual([]);
      expect(events.at(-1)?.type).toBe("RUN_FINISHED");
      const deltas = events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e["delta"]);
      expect(deltas).toEqual(Array.from({ length: 600 }, (_, i) => `${MULTI[i % MULTI.length]}${i} `));
    }
  });

  it("many readers of one live run (observers and reconnect cursors) each get every event once", async () => {
    const tag = "many";
    const input = stack.input({ prompt: `mb:${tag}:200:multi` });
    const owner = await openSse(stack.gateway.url, input);
    await owner.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
    let n = 0;
    await owner.until(() => ++n >= 150);
    const executionId = sessionEventOf(owner.events)["executionId"] as string;
    const observerUrl = new URL(`extensions/iac-code/v1/executions/${executionId}/subscribe`, stack.gateway.url).href;
    const readers = Array.from({ length: 12 }, () => postText(observerUrl, { threadId: input.threadId, runId: input.runId, rosInvocationId: "invocation-1" }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    gateFor(tag).release();
    const ownerEvents = await owner.rest(10_000);
    expect(ownerEvents.at(-1)?.type).toBe("RUN_FINISHED");
    for (const reader of await Promise.all(readers)) {
      expect(reader.status).toBe(200);
      const records = idRecords(reader.text);
      expect(records.map((r) => r.seq)).toEqual(records.map((_, i) => i + 1));
      expect(records.map((r) => r.event)).toEqual(ownerEvents);
    }
  });

  it("a TCP cut in the middle of a large chunk (inside a multi-byte character too), then a resume: every event once", async () => {
    for (const cutAt of [700, 2_501, 5_003, 9_001, 20_011, 30_011]) {
      const tag = `cut-${cutAt}`;
      let connections = 0;
      const proxy = await startCuttingProxy(stack.gateway.url, () => (++connections === 1 ? cutAt : undefined));
      try {
        const input = stack.input({ prompt: `mb:${tag}:300:multi` });
        const chunks: Buffer[] = [];
        try {
          const response = await fetch(proxy.url, { method: "POST", headers: { "Content-Type": "application/json", Accept: "text/event-stream" }, body: JSON.stringify(input) });
          for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
        } catch {
          // The cut.
        }
        expect(proxy.cuts).toBe(1);
        const received = Buffer.concat(chunks).toString("utf8");
        // What a client keeps: the whole records before the cut.
        const whole = received.slice(0, received.lastIndexOf("\n\n") + 2);
        const before = whole === "" ? [] : idRecords(whole);
        const last = before.at(-1)?.seq ?? 0;
        const again = fetch(proxy.url, {
          method: "POST",
          headers: { "Content-Type": "application/json", Accept: "text/event-stream", "Last-Event-ID": `${input.runId}:${last}` },
          body: JSON.stringify(input),
        });
        const response = await again;
        expect(response.status).toBe(200);
        const text = response.text();
        gateFor(tag).release();
        const after = idRecords(await text);
        const seqs = [...before, ...after].map((r) => r.seq);
        expect(seqs).toEqual(seqs.map((_, i) => i + 1));
        const events = [...before, ...after].map((r) => r.event);
        expect(streamProblems(events)).toEqual([]);
        expect(events.at(-1)?.type).toBe("RUN_FINISHED");
        const deltas = events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e["delta"]);
        expect(deltas).toEqual(Array.from({ length: 600 }, (_, i) => `${MULTI[i % MULTI.length]}${i} `));
      } finally {
        await proxy.close();
      }
    }
  });

  it("heartbeats between the records of a paced run come after the records before them, and a reconnect at each id is exact", async () => {
    // A kernel that goes quiet between batches: the gateway's heartbeats fall between large chunks.
    const tag = "heartbeat";
    const input = stack.input({ prompt: `mb:${tag}:150:multi` });
    const owner = await fetch(stack.gateway.url, { method: "POST", headers: { "Content-Type": "application/json", Accept: "text/event-stream" }, body: JSON.stringify(input) });
    const text = owner.text();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    gateFor(tag).release();
    const { records, problems } = parseSse(await text);
    expect(problems).toEqual([]);
    const events = records.flatMap((r) => (r.kind === "event" ? [r] : []));
    expect(events.map((r) => Number(r.id!.split(":").at(-1)))).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)?.event.type).toBe("RUN_FINISHED");
    for (const seq of [0, 1, 75, 149, 150, 151, 152, 300, events.length - 1, events.length]) {
      const again = await postText(stack.gateway.url, input, { "Last-Event-ID": `${input.runId}:${seq}` });
      expect(again.status).toBe(200);
      expect(idRecords(again.text).map((r) => r.event)).toEqual(events.slice(seq).map((r) => r.event));
    }
  });

  for (const texts of ["plain", "ls", "multi"]) it(`connect to a live run whose text has ${texts === "ls" ? "U+2028/U+2029" : texts === "multi" ? "emoji, CJK and line separators" : "no line separators"}: the connect stream carries the run's events`, async () => {
    const tag = `connect-${texts}`;
    const input = stack.input({ prompt: `mb:${tag}:40:${texts}` });
    const owner = await openSse(stack.gateway.url, input);
    let n = 0;
    await owner.until(() => ++n >= 20);
    const connect = postText(new URL("connect", stack.gateway.url).href, {
      threadId: input.threadId,
      runId: `connect-${input.runId}`,
      forwardedProps: { iacCode: { rosInvocationId: "invocation-1" } },
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    gateFor(tag).release();
    const ownerEvents = await owner.rest(10_000);
    expect(ownerEvents.at(-1)?.type).toBe("RUN_FINISHED");
    const connected = await Promise.race([connect, new Promise<{ status: number; text: string }>((resolve) => setTimeout(() => resolve({ status: -1, text: "" }), 5_000))]);
    expect(connected.status, "the connect's answer (-1: none within 5 s)").toBe(200);
    const events = idRecords(connected.text).map((r) => r.event);
    for (const event of events) expect(() => EventSchema.parse(event)).not.toThrow();
    const deltas = (list: readonly WireEvent[]) => list.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e["delta"]);
    expect(deltas(events)).toEqual(deltas(ownerEvents));
    expect(events.at(-1)?.type).toBe("RUN_FINISHED");
    const health = await httpCall(new URL("/health", stack.gateway.url).href, { method: "GET", timeoutMs: 5_000 });
    expect(health.status).toBe(200);
  });
});

describe("replay log readers attached mid-tick", () => {
  it("readers that attach between appends of one tick (cursors anywhere) each get every record after their cursor once", async () => {
    const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
    const records = Array.from({ length: 240 }, (_, i) => `id: run:${i + 1}\ndata: {"delta":"${MULTI[i % MULTI.length]!.repeat(1 + (i % 40))}"}\n\n`);
    const log = new ReplayLog("run", DEFAULT_REPLAY_BOUNDS);
    const readers: { from: number; seen: string[] }[] = [];
    const attach = (from: number) => {
      const replay = log.after(from);
      if (!("records" in replay)) throw new Error(replay.refused);
      const reader = { from, seen: replay.records.map((r) => (typeof r === "string" ? r : Buffer.from(r).toString("utf8"))) };
      log.follow({ record: (r) => reader.seen.push(typeof r === "string" ? r : Buffer.from(r).toString("utf8")), heartbeat: () => reader.seen.push(""), end: () => {} });
      readers.push(reader);
    };
    let seq = 0;
    for (const size of [60, 1, 100, 79]) {
      for (let i = 0; i < size; i++) {
        log.append(records[seq++]!);
        // Attach now and then, with a cursor at the newest record, inside this tick, or before it.
        if (seq % 13 === 0) attach(seq);
        if (seq % 17 === 0) attach(Math.max(0, seq - 9));
        if (seq % 29 === 0) attach(0);
        if (seq % 31 === 0) log.heartbeat();
      }
      await tick();
    }
    log.end(true);
    expect(readers.length).toBeGreaterThan(20);
    for (const reader of readers) expect(reader.seen.join("")).toBe(records.slice(reader.from).join(""));
  });
});

describe("a connect following a live run when U+2028 arrives (a gateway process of its own)", () => {
  let upstream: RawA2AServer;
  let gateway: CliGateway;
  let root: string;

  beforeAll(async () => {
    ensureCliBuilt();
    upstream = await startRawA2AServer({ handle: (ex, res) => playBatches(ex, res) });
    root = await mkdtemp(path.join(tmpdir(), "agui-break-templates-"));
    await mkdir(path.join(root, "ws"));
    gateway = await startCliOnState(upstream.url, root, ["--reconnect-grace", "5"]);
  }, 120_000);
  afterAll(async () => {
    for (const gate of gates.values()) gate.release();
    await gateway?.kill("SIGKILL");
    await upstream?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("the gateway stays up, and the run's own client and the connect each get every delta", async () => {
    const tag = "cli-plain-ls";
    const input = runInput(path.join(root, "ws"), { prompt: `mb:${tag}:40:plain-ls` });
    const url = gateway.url.endsWith("/") ? gateway.url : `${gateway.url}/`;
    const owner = await openSse(url, input);
    expect(owner.status).toBe(200);
    let n = 0;
    await owner.until(() => ++n >= 20);
    const connectResponse = fetch(new URL("connect", url), {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ threadId: input.threadId, runId: `connect-${input.runId}`, forwardedProps: { iacCode: { rosInvocationId: "invocation-1" } } }),
    });
    const connected = liveSse(await connectResponse, new AbortController());
    // The connect is following the live run before the line separators come.
    await connected.until((e) => e.type === "TEXT_MESSAGE_CONTENT" && e["delta"] === "中文39 ");
    gateFor(tag).release();
    const [ownerEvents, connectEvents] = await Promise.all([owner.rest(5_000), connected.rest(5_000)]);
    expect(gateway.child.exitCode, `the gateway exited:\n${gateway.stderr().slice(-2_000)}`).toBeNull();
    const health = await httpCall(new URL("/health", url).href, { method: "GET", timeoutMs: 5_000 });
    expect(health.status).toBe(200);
    const deltas = (list: readonly WireEvent[]) => list.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e["delta"]);
    expect(deltas(ownerEvents)).toHaveLength(80);
    expect(ownerEvents.at(-1)?.type).toBe("RUN_FINISHED");
    expect(deltas(connectEvents)).toEqual(deltas(ownerEvents));
    expect(connectEvents.at(-1)?.type).toBe("RUN_FINISHED");
  });
});

// ---------------------------------------------------------------------------------------------------------------
// GatewayAgent: Stop at once, then the next message; Stop/next cycles at every moment of a run's start.

describe.each([30, 0])("GatewayAgent abort/run cycles, reconnect grace %i s", (grace) => {
  const LONG = "write a long text";
  let stack: Stack<ScriptedA2AServer>;
  beforeAll(async () => {
    stack = await startStack({ script: scriptByPrompt({ [LONG]: () => slowTurn("session-cycles", 40, 30) }), gateway: { reconnectGraceSeconds: grace } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  type Moment = "sync" | "microtask" | "5ms" | "30ms" | "RUN_STARTED" | "session" | "delta";
  const MOMENTS: Moment[] = ["sync", "microtask", "5ms", "30ms", "RUN_STARTED", "session", "delta"];

  async function runOnce(agent: GatewayAgent, runId: string, forwardedProps: unknown, stopAt?: Moment): Promise<{ events: BaseEvent[]; error?: unknown }> {
    const events: BaseEvent[] = [];
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      agent.abortRun();
    };
    agent.addMessage({ id: `m-${runId}`, role: "user", content: LONG });
    const done = agent
      .runAgent(
        { runId, forwardedProps },
        {
          onEvent: ({ event }) => {
            events.push(event);
            if (stopAt === "RUN_STARTED" && event.type === "RUN_STARTED") stop();
            if (stopAt === "session" && event.type === "CUSTOM" && (event as { name?: string }).name === "iac-code.session.v1") stop();
            if (stopAt === "delta" && event.type === "TEXT_MESSAGE_CONTENT") stop();
          },
        },
      )
      .then(
        () => ({ events }),
        (error: unknown) => ({ events, error }),
      );
    if (stopAt === "sync") stop();
    else if (stopAt === "microtask") queueMicrotask(stop);
    else if (stopAt === "5ms") setTimeout(stop, 5);
    else if (stopAt === "30ms") setTimeout(stop, 30);
    return done;
  }

  it("Stop at every moment of a run's start, each followed at once by the next message: none meets THREAD_BUSY, the last runs to its end", async () => {
    const input = stack.input({ prompt: LONG });
    const agent = new GatewayAgent({ url: stack.gateway.url, threadId: input.threadId, backoffMs: 20 });
    const failures: string[] = [];
    let n = 0;
    for (const round of [0, 1]) {
      for (const moment of MOMENTS) {
        const run = await runOnce(agent, `${input.runId}-${round}-${moment}`, input.forwardedProps, moment);
        n++;
        for (const event of run.events) if (!EventSchema.safeParse(event).success) failures.push(`${moment}: invalid ${event.type}`);
        const text = String((run.error as { code?: string } | undefined)?.code ?? run.error ?? "");
        if (/THREAD_BUSY|DUPLICATE_RUN_ID/.test(text)) failures.push(`${round}/${moment}: ${text}`);
        const terminals = run.events.filter((e) => e.type === "RUN_FINISHED" || e.type === "RUN_ERROR");
        if (terminals.length > 1) failures.push(`${moment}: ${terminals.length} terminal events`);
        if (terminals[0]?.type === "RUN_ERROR") failures.push(`${round}/${moment}: RUN_ERROR ${JSON.stringify(terminals[0]).slice(0, 200)}`);
      }
    }
    const last = await runOnce(agent, `${input.runId}-last`, input.forwardedProps);
    expect(failures).toEqual([]);
    expect(last.error, String(last.error)).toBeUndefined();
    expect(last.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(n).toBe(MOMENTS.length * 2);
  }, 120_000);

  it("Stop during a reconnect's backoff (cut after RUN_STARTED, before the session), then at once the next message: it runs", async () => {
    const input = stack.input({ prompt: LONG });
    // The first connection is cut right after RUN_STARTED; every later try of that run is cut before any byte.
    const planned = plannedFetch((n) => (n === 0 ? { cut: at((e) => e.type === "RUN_STARTED", (r) => r.end) } : n <= 3 ? { cut: () => 0 } : undefined));
    const agent = new GatewayAgent({ url: stack.gateway.url, threadId: input.threadId, backoffMs: 1_000, maxBackoffMs: 2_000 });
    agent.fetch = planned.fetch as never;
    agent.addMessage({ id: "m-backoff-1", role: "user", content: LONG });
    const first = agent.runAgent({ runId: `${input.runId}-1`, forwardedProps: input.forwardedProps }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await new Promise((resolve) => setTimeout(resolve, 400));
    const abortedAt = Date.now();
    agent.abortRun();
    await first;
    expect(Date.now() - abortedAt).toBeLessThan(1_000);
    const second = await runOnce(agent, `${input.runId}-2`, input.forwardedProps);
    expect(second.error, String(second.error)).toBeUndefined();
    expect(second.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  }, 60_000);
});
