import { describe, expect, it } from "vitest";
import { declaresAgui1 } from "../src/runs/protocol.js";

describe("declaresAgui1 (RunAgentInput.protocolVersion)", () => {
  it("1.0 and newer declare AG-UI 1.0 run semantics", () => {
    for (const version of ["1.0", "1.0.0", "1.2", "2.0", "10.1.3", "1.1.0-beta.1"]) expect(declaresAgui1(version), version).toBe(true);
  });

  it("absent or pre-1.0 versions keep the seeds' semantics", () => {
    for (const version of [undefined, "0.0.58", "0.9", "0.10", "0.99.1"]) {
      expect(declaresAgui1(version), String(version)).toBe(false);
    }
  });

  it("a declaration it cannot read is handled like a newer one (AG-UI 1.1 basic/versioning)", () => {
    for (const version of ["", "1", "v1.0", "1.x", " 1.0", "latest", "x".repeat(100_000)]) {
      expect(declaresAgui1(version), version.slice(0, 20)).toBe(true);
    }
  });

  it("compares numerically, not as strings", () => {
    expect(declaresAgui1("1.10")).toBe(true);
    expect(declaresAgui1("10.0")).toBe(true);
    expect(declaresAgui1("0.10")).toBe(false);
  });
});
