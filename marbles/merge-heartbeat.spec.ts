// Alphabet: x, y events · h HEARTBEAT (written as the SSE comment `: heartbeat`).
// In TestScheduler.run the default asyncScheduler runs on virtual time.
import { describe, expect, it } from "vitest";
import { mergeHeartbeat } from "../operators/merge-heartbeat.js";
import { HEARTBEAT } from "../operators/types.js";
import { runMarbles } from "./harness.js";

const values = { x: { type: "CUSTOM" }, y: { type: "CUSTOM", name: "y" }, h: HEARTBEAT };
const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);

describe("mergeHeartbeat", () => {
  it("emits a heartbeat every 15 virtual seconds of silence", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = cold("x 40s |", values);
      expectObservable(src.pipe(mergeHeartbeat())).toBe("x 14999ms h 14999ms h 10000ms |", values);
    });
  });

  it("an event restarts the 15 s timer, so no heartbeat comes before 15 s of silence", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = cold("x 9999ms y 20s |", values);
      expectObservable(src.pipe(mergeHeartbeat())).toBe("x 9999ms y 14999ms h 5000ms |", values);
    });
  });

  it("the interval is configurable and the timer stops with the stream", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = cold("x 250ms |", values);
      expectObservable(src.pipe(mergeHeartbeat({ intervalMs: 100 }))).toBe("x 99ms h 99ms h 50ms |", values);
    });
  });

  it("an unsubscribed stream emits no more heartbeats", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = cold("x", values);
      expectObservable(src.pipe(mergeHeartbeat({ intervalMs: 100 })), "^ 150ms !").toBe("x 99ms h", values);
    });
  });
});
