// Which pace the demo kernel keeps in the e2e files. Most run it with 0 ms between frames (fast, and
// timing-independent); the `shipped-pacing` vitest project re-runs the interrupt/resume files with
// AGUI_E2E_DEMO_PACING=shipped, the 10–40 ms rhythm `agui-gateway --demo` serves, where answers race
// the kernel's own turn the way they do for a user.
import { createDemoScript } from "../../src/demo/index.js";
import type { TurnScript } from "../../src/demo/index.js";

export const SHIPPED_PACING = process.env["AGUI_E2E_DEMO_PACING"] === "shipped";

/** The demo agent at the pace this test run asks for. */
export function e2eDemoScript(): TurnScript {
  return SHIPPED_PACING ? createDemoScript() : createDemoScript({ frameDelayMs: 0 });
}
