import { describe, expect, it } from "vitest";
import { declaresAgui1 } from "../src/runs/protocol.js";

describe("declaresAgui1 (RunAgentInput.protocolVersion)", () => {
  it("1.0 and newer declare AG-UI 1.0 run semantics", () => {
    for (const version of ["1.0", "1.0.0", "1.2", "2.0", "10.1.3", "1.1.0-beta.1"]) expect(declaresAgui1(version), version).toBe(true);
  });

  it("absent, pre-1.0 or unparseable versions keep the seeds' semantics", () => {
    for (const version of [undefined, "", "0.0.58", "0.9", "1", "v1.0", "1.x", " 1.0", "latest"]) {
      expect(declaresAgui1(version), String(version)).toBe(false);
    }
  });
});
