// fuseStages with `reads`: an item goes straight to the next stage that reads its type, and the stream is
// the one the same stages give chained as operators — order kept, nothing routed past a stage that has
// completed its downstream, a throw still the wrapped error of the stage after the thrower.
import { describe, expect, it } from "vitest";
import { fuseStages, stageOperator, type Stage } from "../operators/lib/stage.js";
import { runMarbles } from "./harness.js";

type Item = { type: string; n: number };
const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);
const all = (stages: Stage<Item, Item>[]) => stages as Stage<unknown, unknown>[];

/** Reads "a" items only: each becomes a "b" and a "c". */
const split: Stage<Item, Item> = (out) => ({
  next: (item) => (item.type === "a" ? (out.next({ type: "b", n: item.n }), out.next({ type: "c", n: item.n })) : out.next(item)),
  reads: new Set(["a"]),
});
/** Reads "b" items only: doubles them. */
const doubleB: Stage<Item, Item> = (out) => ({
  next: (item) => out.next(item.type === "b" ? { type: "b", n: item.n * 2 } : item),
  reads: new Set(["b"]),
});
/** Reads "x" items only: ends its output at the first (like mapTerminal's terminal state). */
const endOnX: Stage<Item, Item> = (out) => ({
  next: (item) => {
    if (item.type !== "x") return out.next(item);
    out.next({ type: "end", n: item.n });
    out.complete();
  },
  reads: new Set(["x"]),
});
/** doubleB that swallows the completion: its own output stays open. */
const doubleBOpen: Stage<Item, Item> = (out) => ({ ...doubleB(out), complete: () => undefined });
/** Reads "t" items only: throws on them. */
const throwOnT: Stage<Item, Item> = (out) => ({
  next: (item) => {
    if (item.type === "t") throw new Error("t");
    out.next(item);
  },
  reads: new Set(["t"]),
});
/** Reads everything: ends with a marker on error. */
const catchAll: Stage<Item, Item> = (out) => ({
  next: (item) => out.next(item),
  error: (error) => (out.next({ type: "caught", n: (error as { n: number }).n }), out.complete()),
});

const v = {
  a: { type: "a", n: 1 },
  d: { type: "a", n: 2 },
  x: { type: "x", n: 9 },
  t: { type: "t", n: 3 },
  b: { type: "b", n: 2 },
  c: { type: "c", n: 1 },
  e: { type: "b", n: 4 },
  f: { type: "c", n: 2 },
  z: { type: "end", n: 9 },
  k: { type: "caught", n: 7 },
};

describe("fuseStages routing by reads", () => {
  it("items skip the stages that do not read them, in the order chained operators give", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = () => cold("a 9ms (d|)", v);
      const chained = src().pipe(stageOperator(split), stageOperator(endOnX), stageOperator(doubleB));
      const fused = src().pipe(fuseStages<Item, Item>(all([split, endOnX, doubleB])));
      expectObservable(chained).toBe("(bc) 6ms (ef|)", v);
      expectObservable(fused).toBe("(bc) 6ms (ef|)", v);
    });
  });

  it("nothing is routed past a stage that completed its downstream, and the source is let go", () => {
    runMarbles(eq, ({ cold, expectObservable, expectSubscriptions }) => {
      const src = cold("a 9ms x 9ms d|", v);
      expectObservable(src.pipe(fuseStages<Item, Item>(all([split, endOnX, doubleB])))).toBe("(bc) 6ms (z|)", v);
      expectSubscriptions(src.subscriptions).toBe("^ 9ms !");
    });
  });

  it("while the output stays open, what comes after a stage completed its downstream is dropped there, even routed past it", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = () => cold("a 9ms x 9ms d|", v);
      expectObservable(src().pipe(stageOperator(split), stageOperator(endOnX), stageOperator(doubleBOpen))).toBe("(bc) 6ms z", v);
      expectObservable(src().pipe(fuseStages<Item, Item>(all([split, endOnX, doubleBOpen])))).toBe("(bc) 6ms z", v);
    });
  });

  it("a throw is the wrapped error of the stage after the thrower, past the stages that skip it", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const wrap = () => ({ n: 7 });
      expectObservable(cold("a 9ms t 9ms d", v).pipe(fuseStages<Item, Item>(all([throwOnT, split, doubleB, catchAll]), wrap))).toBe("(bc) 6ms (k|)", v);
    });
  });
});
