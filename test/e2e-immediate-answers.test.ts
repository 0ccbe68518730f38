// Answers sent the instant the interrupt arrives (auto-approving handlers, fast clicks, scripts), against
// the demo kernel at its SHIPPED pacing (what `agui-gateway --demo` serves), not the 0 ms frame delays
// of the other e2e files: the demo once kept its turn open for one more pause after parking the task,
// and an answer in that pause failed with A2A_EXECUTION_FAILED. Each answer is POSTed as soon as the
// interrupting RUN_FINISHED is parsed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoScript, type ScriptedA2AServer } from "../src/demo/index.js";
import { expectValidRun, startStack, type Stack } from "./helpers/e2e.js";
import { mapPool } from "./helpers/faults.js";
import { demoRoundTrip, type DemoRoundTripKind } from "./helpers/immediate.js";

// The bar: 100 of each kind. Ten at a time keeps the file near 15 s (the demo mostly sleeps).
const ROUND_TRIPS_PER_KIND = 100;
const CONCURRENCY = 10;

let stack: Stack<ScriptedA2AServer>;
beforeAll(async () => {
  stack = await startStack({ script: createDemoScript() });
});
afterAll(async () => {
  await stack.close();
});

describe("an answer sent at 0 ms after its interrupt (demo kernel, shipped pacing)", () => {
  for (const kind of ["deploy", "pipeline"] as DemoRoundTripKind[]) {
    it(`${ROUND_TRIPS_PER_KIND} ${kind} round trips all succeed`, async () => {
      const trips = await mapPool(Array.from({ length: ROUND_TRIPS_PER_KIND }), CONCURRENCY, () =>
        demoRoundTrip(stack.gateway.url, stack.workspace, kind),
      );
      expect(trips.flatMap((t) => (t.problem === undefined ? [] : [t.problem]))).toEqual([]);
      for (const trip of trips) {
        expectValidRun(trip.first);
        expectValidRun(trip.answer);
      }
      // The answer really reached the kernel's turn: its text streamed and the task ended.
      const texts = trips.map((t) => t.answer.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join(""));
      for (const text of texts) expect(text).toMatch(kind === "pipeline" ? /Deploying Plan B/ : /is deployed in cn-hangzhou/);
    }, 90_000);
  }
});
