// docs/benchmarks.md's commands run as written: every `npm run bench` line uses flags and scenario names that
// bench/run.ts reads, and the quickest of them (the pipeline alone) runs to its table here.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const REPO = path.resolve(import.meta.dirname, "..");
const DOC = readFileSync(path.join(REPO, "docs", "benchmarks.md"), "utf8");
const RUNNER = readFileSync(path.join(REPO, "bench", "run.ts"), "utf8");

/** The `npm run bench` commands of the doc's ```sh blocks, comments dropped. */
function benchCommands(): string[] {
  const blocks = [...DOC.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  return blocks
    .flatMap((block) => block.split("\n"))
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) => line.includes("npm run bench"));
}

/** The flags bench/run.ts reads: `argv.includes("--x")` and `a.startsWith("--x=")`. */
const FLAGS = new Set([...RUNNER.matchAll(/argv\.includes\("(--[a-z-]+)"\)|startsWith\("(--[a-z-]+=)"\)/g)].map((m) => m[1] ?? m[2]!));
/** The scenario names `--only` takes: `wants("name")`. */
const SCENARIOS = new Set([...RUNNER.matchAll(/wants\("([a-z-]+)"\)/g)].map((m) => m[1]!));

describe("docs/benchmarks.md", () => {
  const commands = benchCommands();

  it("has bench commands, and bench/run.ts reads flags and scenarios", () => {
    expect(commands.length).toBeGreaterThan(3);
    expect(FLAGS).toContain("--quick");
    expect(FLAGS).toContain("--only=");
    expect(SCENARIOS).toContain("many");
  });

  it("uses only flags and scenario names that bench/run.ts reads", () => {
    for (const command of commands) {
      const args = command.split(/\s+--\s+/)[1]?.split(/\s+/) ?? [];
      for (const arg of args) {
        if (!arg.startsWith("--")) continue;
        const flag = arg.includes("=") ? arg.slice(0, arg.indexOf("=") + 1) : arg;
        expect(FLAGS, `${command}: ${arg}`).toContain(flag);
        if (flag === "--only=") for (const name of arg.slice(7).split(",")) expect(SCENARIOS, `${command}: ${name}`).toContain(name);
      }
    }
  });

  it("runs the pipeline scenario to its table", async () => {
    const command = commands.find((c) => c.includes("--only=pipeline"));
    expect(command, "a documented command for the pipeline alone").toBeDefined();
    const { stdout } = await promisify(execFile)("bash", ["-c", command!], { cwd: REPO, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 });
    expect(stdout).toMatch(/pipelineEventsPerSec\s+[\d,]+\s/);
  }, 300_000);
});
