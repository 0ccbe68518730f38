// stageOperator / fuseStages: a fused chain of stages behaves as the same stages chained as operators — output order,
// a throw becoming the error the next stage sees (wrapped), nothing after a stage completed its downstream.
import { describe, expect, it } from "vitest";
import { fuseStages, stageOperator, type Stage } from "../operators/lib/stage.js";
import { runMarbles } from "./harness.js";

const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);
const double: Stage<number, number> = (out) => ({ next: (n) => (out.next(n), out.next(n)) });
const plusOne: Stage<number, number> = (out) => ({ next: (n) => out.next(n + 1) });
const failOnThree: Stage<number, number> = (out) => ({
  next: (n) => {
    if (n === 3) throw new Error("three");
    out.next(n);
  },
});
/** Passes items until it has seen `limit`, then ends its output with a marker (like mapTerminal). */
const upTo = (limit: number): Stage<number, number> => (out) => ({
  next: (n) => {
    out.next(n);
    if (n >= limit) {
      out.next(-1);
      out.complete();
    }
  },
  error: () => (out.next(-2), out.complete()),
  complete: () => (out.next(-3), out.complete()),
});
const wrap = (thrown: unknown) => ({ wrapped: (thrown as Error).message });
const all = (stages: Stage<number, number>[]) => stages as Stage<unknown, unknown>[];

describe("fuseStages", () => {
  it("fused and chained give the same stream", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = () => cold("a 9ms (b|)", { a: 1, b: 5 });
      const expected = { x: 2, y: 6 };
      expectObservable(src().pipe(stageOperator(double), stageOperator(plusOne))).toBe("(xx) 6ms (yy|)", expected);
      expectObservable(src().pipe(fuseStages<number, number>(all([double, plusOne])))).toBe("(xx) 6ms (yy|)", expected);
    });
  });

  it("a throw is the wrapped error the next stage sees", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const fused = fuseStages<number, number>(all([failOnThree, upTo(99)]), wrap);
      expectObservable(cold("a-b-c", { a: 1, b: 3, c: 4 }).pipe(fused)).toBe("a-(z|)", { a: 1, z: -2 });
      expectObservable(cold("a-b", { a: 1, b: 3 }).pipe(stageOperator(failOnThree, wrap))).toBe("a-#", { a: 1 }, { wrapped: "three" });
    });
  });

  it("with one wrap per stage, a throw is wrapped by the wrap of the stage that threw", () => {
    const tag = (label: string) => (thrown: unknown) => ({ [label]: (thrown as Error).message });
    runMarbles(eq, ({ cold, expectObservable }) => {
      const first = fuseStages<number, number>(all([failOnThree, plusOne]), [tag("first"), tag("second")]);
      expectObservable(cold("a-b", { a: 1, b: 3 }).pipe(first)).toBe("a-#", { a: 2 }, { first: "three" });
      const second = fuseStages<number, number>(all([plusOne, failOnThree]), [tag("first"), tag("second")]);
      expectObservable(cold("a-b", { a: 1, b: 2 }).pipe(second)).toBe("a-#", { a: 2 }, { second: "three" });
    });
  });

  it("after a stage completed its downstream nothing more reaches it, and the source is let go", () => {
    runMarbles(eq, ({ cold, expectObservable, expectSubscriptions }) => {
      const src = cold("a 9ms b 9ms c 9ms d|", { a: 1, b: 2, c: 3, d: 4 });
      expectObservable(src.pipe(fuseStages<number, number>(all([double, upTo(2)])))).toBe("(aa) 6ms (bz|)", { a: 1, b: 2, z: -1 });
      expectSubscriptions(src.subscriptions).toBe("^ 9ms !");
    });
  });

  it("a stage may emit when it is set up, before the source is subscribed", () => {
    const started: Stage<number, number> = (out) => (out.next(0), { next: (n) => out.next(n) });
    runMarbles(eq, ({ cold, expectObservable }) => {
      expectObservable(cold("-a|", { a: 1 }).pipe(fuseStages<number, number>(all([plusOne, started])))).toBe("0a|", { 0: 0, a: 2 });
    });
  });
});
