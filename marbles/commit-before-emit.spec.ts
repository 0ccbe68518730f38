// Alphabet: a, b plain events · i an event that needs a durable write first · e the failure replacement.
// w = the write (a cold observable): `--|` takes 2 ms, `-#` fails after 1 ms.
import { describe, expect, it } from "vitest";
import { commitBeforeEmit } from "../operators/commit-before-emit.js";
import { runMarbles } from "./harness.js";

const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);

describe("commitBeforeEmit", () => {
  it("passes items that need no write synchronously", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const out = cold("a-b-|").pipe(commitBeforeEmit({ commit: () => undefined, onFailure: () => "e" }));
      expectObservable(out).toBe("a-b-|");
    });
  });

  it("holds an item, and everything behind it, until its write completes", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const write = cold("---|");
      const out = cold("a-ib|").pipe(commitBeforeEmit({ commit: (x) => (x === "i" ? write : undefined), onFailure: () => "e" }));
      expectObservable(out).toBe("a----(ib|)");
    });
  });

  it("keep: an item it refuses is committed, holds what is behind it, and is not passed on (f: a fact to fold, not to show)", () => {
    const committed: string[] = [];
    runMarbles(eq, ({ cold, expectObservable }) => {
      const write = cold("---|");
      const out = cold("afib|").pipe(
        commitBeforeEmit({
          commit: (x) => {
            committed.push(x);
            return x === "f" ? write : undefined;
          },
          keep: (x) => x !== "f",
          onFailure: () => "e",
        }),
      );
      expectObservable(out).toBe("a---(ib|)");
    });
    expect(committed).toEqual(["a", "f", "i", "b"]);
  });

  it("a failed write replaces the item and ends the stream", () => {
    runMarbles(eq, ({ cold, expectObservable, expectSubscriptions }) => {
      const src = cold("a-ib---c|");
      const out = src.pipe(commitBeforeEmit({ commit: (x) => (x === "i" ? cold("-#") : undefined), onFailure: (_e, item) => `e:${item}` }));
      expectObservable(out).toBe("a--(x|)", { a: "a", x: "e:i" });
      expectSubscriptions(src.subscriptions).toBe("^--!");
    });
  });

  it("a commit that throws is a failure too", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const out = cold("a-i|").pipe(
        commitBeforeEmit({
          commit: (x) => {
            if (x === "i") throw new Error("disk");
          },
          onFailure: () => "e",
        }),
      );
      expectObservable(out).toBe("a-(e|)");
    });
  });
});
