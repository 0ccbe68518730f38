// SseRecordReader reads a kernel's SSE body into records. Checked against eventsource-parser (the parser the
// client package uses, written apart from ours) on bodies with every way of writing a record, cut at every
// place: CR, LF and CRLF line ends (a CRLF cut between chunks), comments, fields without a colon, unknown
// fields, ids, retries, `event`, multi-line and empty data, a record left unended at the end of the body.
import { createParser } from "eventsource-parser";
import { describe, expect, it } from "vitest";
import { SseRecordReader } from "../src/a2a/sse-records.js";
import { seeded } from "./helpers/seeded.js";

type Record = [data: string, event: string | undefined];

function ours(chunks: readonly string[], maxChars = 1 << 20): { records: Record[]; oversize: number } {
  const records: Record[] = [];
  let oversize = 0;
  const reader = new SseRecordReader({ record: (data, event) => records.push([data, event]), oversize: () => oversize++ }, maxChars);
  for (const chunk of chunks) reader.feed(chunk);
  return { records, oversize };
}

function oracle(body: string): Record[] {
  const records: Record[] = [];
  const parser = createParser({ onEvent: (event) => records.push([event.data, event.event]) });
  parser.feed(body);
  return records;
}

function bodyOf(random: () => number): string {
  const eols = ["\n", "\r\n", "\r"];
  const eol = () => eols[Math.floor(random() * eols.length)]!;
  const values = ["{\"a\":1}", "", " leading space", "x:y:z", "wörld 中文 😀", "tab\there", ":colon first"];
  const value = () => values[Math.floor(random() * values.length)]!;
  let body = "";
  for (let r = 0; r < 40; r++) {
    const lines = 1 + Math.floor(random() * 4);
    for (let l = 0; l < lines; l++) {
      const kind = random();
      if (kind < 0.5) body += `data: ${value()}${eol()}`;
      else if (kind < 0.58) body += `data${eol()}`;
      else if (kind < 0.64) body += `data:${value()}${eol()}`;
      else if (kind < 0.72) body += `event: ${random() < 0.5 ? "error" : ""}${eol()}`;
      else if (kind < 0.78) body += `: comment ${value()}${eol()}`;
      else if (kind < 0.84) body += `id: ${r}${eol()}`;
      else if (kind < 0.88) body += `retry: ${random() < 0.5 ? "100" : "soon"}${eol()}`;
      else if (kind < 0.94) body += `unknown: ${value()}${eol()}`;
      else body += `dataX: not data${eol()}`;
    }
    body += eol();
  }
  // A record the body never ends: read by neither.
  return body + "data: unended";
}

/** `body` cut at random places, empty pieces included. */
function cut(body: string, random: () => number): string[] {
  const chunks: string[] = [];
  for (let at = 0; at < body.length; ) {
    const size = Math.floor(random() * 12);
    chunks.push(body.slice(at, at + size));
    at += size;
  }
  return chunks;
}

describe("SseRecordReader", () => {
  it("reads the records eventsource-parser reads, however the body is cut", () => {
    for (let seed = 1; seed <= 60; seed++) {
      const random = seeded(seed);
      const body = bodyOf(random);
      const expected = oracle(body);
      expect(expected.length).toBeGreaterThan(10);
      expect(ours([body]).records).toEqual(expected);
      expect(ours(cut(body, random)).records).toEqual(expected);
      // One character at a time: every CRLF is cut between its two characters.
      expect(ours([...body]).records).toEqual(expected);
    }
  });

  it("a CR at the end of one chunk and an LF at the start of the next are one line end", () => {
    expect(ours(["data: a\r", "\ndata: b\r", "\n\r", "\n"]).records).toEqual([["a\nb", undefined]]);
    // A lone CR ends the line by itself: the LF after the next line's text is another line end.
    expect(ours(["data: a\r", "data: b\n\n"]).records).toEqual([["a\nb", undefined]]);
  });

  it("stops at a record longer than its bound, and says so once", () => {
    const { records, oversize } = ours(["data: short\n\n", "data: ", "x".repeat(60), "y".repeat(60), "\n\ndata: after\n\n"], 100);
    expect(records).toEqual([["short", undefined]]);
    expect(oversize).toBe(1);
    // Data lines count together: three lines of 40 are over 100 before the record ends.
    expect(ours([`data: ${"a".repeat(40)}\n`.repeat(3), "\n"], 100)).toEqual({ records: [], oversize: 1 });
  });
});
