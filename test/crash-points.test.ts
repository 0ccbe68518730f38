// SIGKILL at every phase of every state write of a real gateway process (IAC_CODE_AGUI_TEST_CRASH_POINT, see
// test/helpers/crash-point-preload.mjs): the admission, taskId/session, interrupt-commit, reconcile and accepted-answer writes
// of deploy → interrupt → resume → next turn. After each kill a clean gateway on the same directory must read
// every thread file, resume or cleanly refuse every interrupt, and the kernel must never apply an answer twice.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureCliBuilt } from "./helpers/durable.js";
import { CRASH_PHASES, mapPool, runCrashPoint, startCrashUpstream, type CrashOutcome, type CrashPoint, type CrashUpstream } from "./helpers/faults.js";

// One process performs 11 saves (turn: admission, session, interrupt; resume: admission, reconcile, accepted
// answer, session, end; next turn: admission, session, end) → 55 points.
const SAVES = 11;
const POINTS: CrashPoint[] = Array.from({ length: SAVES }, (_, i) => CRASH_PHASES.map((phase) => ({ save: i + 1, phase }))).flat();
const RESUME_OUTCOME = "resume after restart ended with";

let upstream: CrashUpstream;
let root: string;
let outcomes: CrashOutcome[] = [];

beforeAll(async () => {
  ensureCliBuilt();
  upstream = await startCrashUpstream();
  root = await mkdtemp(path.join(tmpdir(), "agui-crash-"));
  outcomes = await mapPool(POINTS, 2, (point) => runCrashPoint(upstream, root, point));
}, 240_000);

afterAll(async () => {
  await upstream?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

const label = (o: CrashOutcome) => `${o.point.save}:${o.point.phase} (${o.stage})`;

describe(`SIGKILL at ${POINTS.length} points around every state write`, () => {
  it("really kills the gateway at ≥ 50 points, in every stage of the scenario", () => {
    const crashed = outcomes.filter((o) => o.crashed);
    expect(crashed.length, `never reached: ${outcomes.filter((o) => !o.crashed).map(label).join(" ")}`).toBeGreaterThanOrEqual(50);
    // Every save, a run's end included, happens before its client reads the terminal event: no kill comes
    // "after the last run".
    expect(new Set(crashed.map((o) => o.stage))).toEqual(new Set(["turn", "resume", "next turn"]));
  });

  it("leaves every thread file whole, never a 5xx or a broken stream, and never applies an answer twice", () => {
    const failures = outcomes.flatMap((o) => o.problems.filter((p) => !p.startsWith(RESUME_OUTCOME)).map((p) => `${label(o)}: ${p}`));
    expect(failures).toEqual([]);
    expect([...upstream.applied.values()].every((n) => n === 1)).toBe(true);
    expect(upstream.applied.size).toBeGreaterThan(0);
  });

  it("resumes every interrupt after the restart, or refuses it with EXECUTION_LOST / RESUME_ALREADY_APPLIED", () => {
    const failures = outcomes.flatMap((o) => o.problems.filter((p) => p.startsWith(RESUME_OUTCOME)).map((p) => `${label(o)}: ${p}`));
    expect(failures).toEqual([]);
  });
});
