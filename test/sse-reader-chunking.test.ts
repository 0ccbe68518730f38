// The SSE frame decoder feeds each chunk to the record parser in two parts (up to its first line end, then the rest)
// and decodes repeated text deltas from their templates: whatever way the body is cut, the frames read are the
// ones of the whole body read at once, and a bad record fails the stream at the same frame.
import { describe, expect, it } from "vitest";
import { seeded } from "./helpers/seeded.js";
import { cutBytes, decodeSseChunks } from "./helpers/sse-frames.js";

function delta(text: string, messageId = "m1"): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id: "r1",
    result: { statusUpdate: { taskId: "t1", contextId: "c1", status: { state: "TASK_STATE_WORKING", message: { messageId, role: "ROLE_AGENT", parts: [{ text }] } } } },
  });
}

function thinking(text: string): string {
  return JSON.stringify({ jsonrpc: "2.0", id: "r1", result: { statusUpdate: { taskId: "t1", status: { state: "TASK_STATE_WORKING" }, metadata: { iac_code: { thinking: { text } } } } } });
}

/** A body with every way of writing a record: LF, CRLF and CR line ends, comments, event names, ids, data split over lines. */
function body(seed: number, withBadRecord: boolean): string {
  let state = seed;
  const random = () => ((state = (state * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  const texts = ["Hello ", "wörld ", "中文 ", "line\nbreak", 'quote "x"', "back\\", "😀", "", "tab\t"];
  const parts: string[] = [];
  for (let i = 0; i < 120; i++) {
    const eol = ["\n", "\r\n", "\r"][Math.floor(random() * 3)]!;
    const text = texts[Math.floor(random() * texts.length)]! + i;
    const data = random() < 0.2 ? thinking(text) : delta(text, random() < 0.1 ? `m${i}` : "m1");
    if (random() < 0.1) parts.push(`: keep-alive${eol}`);
    if (random() < 0.1) parts.push(`id: ${i}${eol}`);
    if (random() < 0.1) parts.push(`event: message${eol}`);
    if (random() < 0.15) {
      // One JSON document over two data lines: the parser joins them with a line feed.
      const cut = data.indexOf(",") + 1;
      parts.push(`data: ${data.slice(0, cut)}${eol}data: ${data.slice(cut)}${eol}${eol}`);
    } else {
      parts.push(`data: ${data}${eol}${eol}`);
    }
    if (withBadRecord && i === 90) parts.push(`data: ${delta("bad").replace('"parts":[{"text":"bad"}]', '"parts":[{"text":"bad\u0001"}]')}\n\n`);
  }
  return parts.join("");
}

/** Mostly long cuts, some of a few bytes (inside a line end, a multi-byte character, a record's field name). */
function cuts(bytes: Buffer, seed: number): Buffer[] {
  const random = seeded(seed);
  return cutBytes(bytes, () => (random() < 0.3 ? 1 + Math.floor(random() * 8) : 1 + Math.floor(random() * 2_000)));
}

describe("SSE reader chunking", () => {
  for (const withBadRecord of [false, true]) {
    it(`reads the same frames however the body is cut${withBadRecord ? ", and fails at the same bad record" : ""}`, () => {
      for (let seed = 1; seed <= 12; seed++) {
        const bytes = Buffer.from(body(seed, withBadRecord), "utf8");
        const whole = decodeSseChunks([bytes]);
        expect(whole.frames.length).toBeGreaterThan(withBadRecord ? 80 : 110);
        expect(whole.error !== undefined, whole.error).toBe(withBadRecord);
        for (let cut = 0; cut < 4; cut++) expect(decodeSseChunks(cuts(bytes, seed * 31 + cut))).toEqual(whole);
      }
    });
  }
});
