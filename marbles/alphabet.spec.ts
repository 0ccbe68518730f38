// The marble alphabet names every AG-UI event type once, with letters a marble line can carry.
import { EventType } from "@ag-ui/core";
import { TestScheduler } from "rxjs/testing";
import { describe, expect, it } from "vitest";
import { ALPHABET, letterOf, spell, trace } from "./harness.js";

const EVERY_TYPE = Object.values(EventType) as string[];

describe("ALPHABET", () => {
  it("has a letter for each of the 31 AG-UI event types and the heartbeat marker", () => {
    expect(EVERY_TYPE).toHaveLength(31);
    expect(Object.keys(ALPHABET).sort()).toEqual([...EVERY_TYPE, "HEARTBEAT"].sort());
  });

  it("gives every type its own single letter, none of them marble syntax", () => {
    const letters = Object.values(ALPHABET);
    expect(new Set(letters).size).toBe(letters.length);
    for (const letter of letters) expect(letter).toMatch(/^[A-Za-z]$/);
  });

  it("spells a stream that a marble line parses back to one value per event", () => {
    const events = EVERY_TYPE.map((type) => ({ type }));
    const word = spell(events);
    const values = Object.fromEntries(Object.entries(ALPHABET).map(([type, letter]) => [letter, type]));
    const parsed = TestScheduler.parseMarbles(`(${word})`, values, undefined, undefined, true);
    expect(parsed.map((m) => (m.notification as { value?: unknown }).value)).toEqual(EVERY_TYPE);
  });

  it("traces chunk, subagent, state and activity events grouped by timestamp", () => {
    const events = [
      { type: "RUN_STARTED", timestamp: 1 },
      { type: "SUBAGENT_STARTED", timestamp: 2 },
      { type: "TEXT_MESSAGE_CHUNK", timestamp: 2 },
      { type: "TOOL_CALL_CHUNK", timestamp: 3 },
      { type: "REASONING_MESSAGE_CHUNK", timestamp: 3 },
      { type: "REASONING_ENCRYPTED_VALUE", timestamp: 3 },
      { type: "SUBAGENT_FINISHED", timestamp: 4 },
      { type: "STATE_SNAPSHOT", timestamp: 5 },
      { type: "STATE_DELTA", timestamp: 5 },
      { type: "MESSAGES_SNAPSHOT", timestamp: 5 },
      { type: "ACTIVITY_SNAPSHOT", timestamp: 6 },
      { type: "ACTIVITY_DELTA", timestamp: 6 },
      { type: "RAW", timestamp: 6 },
      { type: "SUBAGENT_ERROR", timestamp: 7 },
      { type: "RUN_FINISHED", timestamp: 8 },
    ];
    expect(trace(events)).toBe("a gk Kqy G bdM vwR j f");
  });

  it("refuses a type it has no letter for, naming it", () => {
    expect(() => letterOf({ type: "THINKING_START" })).toThrow("no marble letter for THINKING_START");
  });
});
