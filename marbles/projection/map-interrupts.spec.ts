// mapInterrupts: the first required input not answered yet ends the run: the interrupts fact (each interrupt with its
// input), then the part mapTerminal ends the run with. Inputs of another task or context are protocol errors.
import { describe, expect, it } from "vitest";
import { fact } from "../../operators/facts.js";
import { buildInterrupt } from "../../operators/lib/interrupts.js";
import { mapInterrupts } from "../../operators/projection/map-interrupts.js";
import { runMarbles } from "../harness.js";

const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);
const input = (inputId: string, extra: Record<string, unknown> = {}) => ({
  value: { schemaVersion: 1, kind: "permission", inputId, toolName: "bash", required: true, ...extra },
  sideband: false,
});
const required = (time: number, ...inputs: ReturnType<typeof input>[]) => ({ type: "A2A_REQUIRED_INPUTS", time, inputs });
const protocolError = expect.objectContaining({ code: "A2A_PROTOCOL_ERROR" });

describe("mapInterrupts", () => {
  it("applied inputs are no interrupt; a new one is, with its expiry from the frame's time and the TTL", () => {
    const p1 = input("p-1");
    const interrupt = buildInterrupt(p1.value, (english) => english, new Date(5 + 1000).toISOString());
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = cold("a----b", { a: required(0, input("p-0")), b: required(5, input("p-0"), p1) });
      expectObservable(src.pipe(mapInterrupts({ appliedInputIds: ["p-0"], interruptTtlMs: 1000 }))).toBe("-----(fe)", {
        f: fact("interrupts", { pending: [{ input: p1, interrupt }] }),
        e: { type: "A2A_INTERRUPT_END", time: 5, interrupts: [interrupt] },
      });
    });
  });

  it("a repeated sighting keeps the interrupt it was announced with", () => {
    const known = { id: "p-1", reason: "tool_call", message: "as announced" };
    runMarbles(eq, ({ cold, expectObservable }) => {
      const src = cold("a", { a: required(0, input("p-1")) });
      expectObservable(src.pipe(mapInterrupts({ knownInterrupts: new Map([["p-1", known as never]]) }))).toBe("(fe)", {
        f: fact("interrupts", { pending: [{ input: input("p-1"), interrupt: known as never }] }),
        e: { type: "A2A_INTERRUPT_END", time: 0, interrupts: [known] },
      });
    });
  });

  it("an input of another task (learned from the taskId fact) or another context is A2A_PROTOCOL_ERROR", () => {
    runMarbles(eq, ({ cold, expectObservable }) => {
      const task = fact("taskId", { taskId: "t1" });
      expectObservable(cold("xa", { x: task, a: required(1, input("p", { requestTaskId: "t2" })) }).pipe(mapInterrupts())).toBe("x#", { x: task }, protocolError);
      expectObservable(cold("a", { a: required(0, input("p", { contextId: "other" })) }).pipe(mapInterrupts({ contextId: "ctx" }))).toBe("#", undefined, protocolError);
    });
  });
});
