// ReplayLog keeps each tick's records as one chunk, a large one as UTF-8 bytes outside the heap. A cursor in the
// middle of such a chunk must still get exactly the records after it, whatever characters they hold, and a
// reader following the log must get every record once, in order, heartbeats after the records before them.
import { describe, expect, it } from "vitest";
import { DEFAULT_REPLAY_BOUNDS, ReplayLog, type LogListener } from "../src/http/replay-log.js";

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const text = (parts: readonly (string | Uint8Array)[]) => parts.map((p) => (typeof p === "string" ? p : Buffer.from(p).toString("utf8"))).join("");

/** Records of mixed widths: ASCII, two-byte, three-byte and astral characters, some long enough for a byte chunk. */
function recordsOf(count: number, seed: number): string[] {
  const alphabet = ["a", "é", "語", "😀", "\\n", '\\"'];
  return Array.from({ length: count }, (_, i) => {
    const width = ((seed * 31 + i * 17) % 7) * 150 + 1;
    let body = "";
    for (let j = 0; j < width; j++) body += alphabet[(seed + i + j) % alphabet.length];
    return `id: run:${i + 1}\ndata: {"delta":"${body}"}\n\n`;
  });
}

describe("ReplayLog", () => {
  it("a cursor anywhere, inside a byte chunk too, gets exactly the records after it", async () => {
    for (const seed of [1, 2, 3]) {
      const log = new ReplayLog("run", DEFAULT_REPLAY_BOUNDS);
      const records = recordsOf(40, seed);
      // Three ticks: a large one (kept as bytes), a single short record (kept as a string), a large one again.
      for (const [from, to] of [[0, 20], [20, 21], [21, 40]] as const) {
        for (const record of records.slice(from, to)) log.append(record);
        await tick();
      }
      for (let seq = 0; seq <= records.length; seq++) {
        const replay = log.after(seq);
        if (!("records" in replay)) throw new Error(`refused at ${seq}: ${replay.refused}`);
        expect(text(replay.records)).toBe(records.slice(seq).join(""));
      }
      expect(log.after(records.length + 1)).toEqual({ refused: "future" });
      expect(log.heldBytes).toBe(Buffer.byteLength(records.join("")));
      expect(log.after(0)).toMatchObject({ records: [expect.any(Uint8Array), expect.any(String), expect.any(Uint8Array)] });
    }
  });

  it("a follower gets each tick's records once, in order, and a heartbeat only after the records appended before it", async () => {
    const log = new ReplayLog("run", DEFAULT_REPLAY_BOUNDS);
    const seen: string[] = [];
    const listener: LogListener = {
      record: (records) => seen.push(text([records])),
      heartbeat: () => seen.push("<heartbeat>"),
      end: (complete) => seen.push(`<end ${complete}>`),
    };
    log.follow(listener);
    const records = recordsOf(30, 4);
    for (const record of records.slice(0, 10)) log.append(record);
    log.heartbeat();
    for (const record of records.slice(10, 25)) log.append(record);
    await tick();
    for (const record of records.slice(25)) log.append(record);
    log.end(true);
    expect(seen).toEqual([records.slice(0, 10).join(""), "<heartbeat>", records.slice(10, 25).join(""), records.slice(25).join(""), "<end true>"]);
  });

  it("a reader that throws is dropped and ended; the other readers still get every record, heartbeat and the end", async () => {
    const log = new ReplayLog("run", DEFAULT_REPLAY_BOUNDS);
    const follower = (name: string, throwsOn?: "record" | "heartbeat" | "end") => {
      const seen: string[] = [];
      let calls = 0;
      const listener: LogListener = {
        record: (records) => {
          seen.push(text([records]));
          if (throwsOn === "record" && ++calls === 2) throw new Error(`${name} broke`);
        },
        heartbeat: () => {
          seen.push("<heartbeat>");
          if (throwsOn === "heartbeat") throw new Error(`${name} broke`);
        },
        end: (complete) => {
          seen.push(`<end ${complete}>`);
          if (throwsOn === "end") throw new Error(`${name} broke`);
        },
      };
      log.follow(listener);
      return seen;
    };
    const first = follower("first");
    const onRecord = follower("on record", "record");
    const onHeartbeat = follower("on heartbeat", "heartbeat");
    const onEnd = follower("on end", "end");
    const last = follower("last");
    const records = recordsOf(9, 5);
    for (let i = 0; i < records.length; i += 3) {
      for (const record of records.slice(i, i + 3)) log.append(record);
      await tick();
      if (i === 0) log.heartbeat();
    }
    log.end(true);
    const ticks = [0, 3, 6].map((i) => records.slice(i, i + 3).join(""));
    const whole = [ticks[0], "<heartbeat>", ticks[1], ticks[2], "<end true>"];
    expect(first).toEqual(whole);
    expect(last).toEqual(whole);
    expect(onEnd).toEqual(whole);
    // It threw on its second chunk: ended once, never called again.
    expect(onRecord).toEqual([ticks[0], "<heartbeat>", ticks[1], "<end false>"]);
    expect(onHeartbeat).toEqual([ticks[0], "<heartbeat>", "<end false>"]);
    const replay = log.after(0);
    expect("records" in replay && text(replay.records)).toBe(records.join(""));
  });

  it("the oldest chunks go once a bound is passed, the newest stays; a cursor before them is refused, never given a gap", async () => {
    const records = recordsOf(30, 5);
    const log = new ReplayLog("run", { ...DEFAULT_REPLAY_BOUNDS, maxBytes: Buffer.byteLength(records.slice(20).join("")) });
    for (const [from, to] of [[0, 10], [10, 20], [20, 30]] as const) {
      for (const record of records.slice(from, to)) log.append(record);
      await tick();
    }
    expect(log.after(19)).toEqual({ refused: "expired" });
    const replay = log.after(20);
    if (!("records" in replay)) throw new Error(replay.refused);
    expect(text(replay.records)).toBe(records.slice(20).join(""));
  });
});
