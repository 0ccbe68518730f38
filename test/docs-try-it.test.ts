// The docs' "Try it" requests, run as a user pastes them: the built CLI with --demo started in a scratch folder, the
// README's request and then every ```sh block of docs/try-it.md, in order, in one bash (later blocks read the variables
// earlier ones set), with real curl on 127.0.0.1. Only the port differs from the text: the documented default
// 41243 becomes the port the test's gateway got. Every event is validated with EventSchema and the strict verifier.
import { execFileSync, spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { decode } from "@ag-ui/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runProblems } from "./helpers/checks.js";
import { parseSse, type WireEvent } from "./helpers/sse.js";

const REPO = path.resolve(import.meta.dirname, "..");
const CLI = path.join(REPO, "dist", "src", "cli.js");
const DOCUMENTED_URL = "http://127.0.0.1:41243";

/** The ```sh blocks of a markdown text, in order. */
function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

const readme = readFileSync(path.join(REPO, "README.md"), "utf8");
const README_TRY_IT = shellBlocks(readme.slice(readme.indexOf("## Try it"), readme.indexOf("## What it is")));
const TRY_IT = shellBlocks(readFileSync(path.join(REPO, "docs", "try-it.md"), "utf8"));

let scratch: string;
let gateway: ChildProcess;
let url: string;

beforeAll(async () => {
  if (!existsSync(CLI)) execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { cwd: REPO, stdio: "ignore", timeout: 120_000 });
  scratch = await mkdtemp(path.join(tmpdir(), "agui-try-it-"));
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith("IAC_CODE") && !key.startsWith("IACCODE")) env[key] = value;
  // The demo as `npm start` runs it, in the folder the user pastes the requests in; its state in the scratch folder.
  gateway = spawn(process.execPath, [CLI, "--demo", "--port", "0"], {
    cwd: scratch,
    env: { ...env, IAC_CODE_CONFIG_DIR: path.join(scratch, "config") },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" line in 15 s: ${stdout}`)), 15_000);
    gateway.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)\//.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    gateway.once("exit", () => reject(new Error(`the demo gateway exited: ${stdout}`)));
  });
}, 150_000);

afterAll(async () => {
  if (gateway && gateway.exitCode === null) {
    const exited = new Promise((resolve) => gateway.once("exit", resolve));
    gateway.kill("SIGTERM");
    await exited;
  }
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** One interactive bash in the scratch folder: blocks run one after the other, sharing variables. */
class Shell {
  private readonly bash: ChildProcessWithoutNullStreams;
  private out = "";
  private errors = "";
  private waiting: (() => void) | undefined;
  private count = 0;

  constructor(cwd: string) {
    this.bash = spawn("bash", ["--norc", "--noprofile"], { cwd, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: cwd, LANG: "C.UTF-8" } });
    this.bash.stdout.on("data", (chunk: Buffer) => {
      this.out += chunk.toString("utf8");
      this.waiting?.();
    });
    // stderr is the terminal's (curl's progress meter without -s); a failed command shows in its status.
    this.bash.stderr.on("data", (chunk: Buffer) => (this.errors += chunk.toString("utf8")));
    // A bound on every request the docs make, without changing their text.
    this.bash.stdin.write("curl() { command curl --max-time 20 \"$@\"; }\n");
  }

  /** Runs `text` as pasted; its output and the status of its last command. */
  async run(text: string): Promise<{ output: string; status: number }> {
    const marker = `__block_${++this.count}_done__`;
    this.out = "";
    this.bash.stdin.write(`${text}\nprintf '\\n${marker} %s\\n' "$?"\n`);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const match = new RegExp(`\\n${marker} (\\d+)\\n`).exec(this.out);
      if (match) return { output: this.out.slice(0, match.index), status: Number(match[1]) };
      if (Date.now() > deadline) throw new Error(`block did not finish in 60 s; output so far:\n${this.out}\nstderr:\n${this.errors}`);
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
        setTimeout(resolve, 1_000);
      });
    }
  }

  close(): void {
    this.bash.stdin.end();
  }
}

/** The block as the test runs it: the documented URL pointed at this test's gateway. */
function forThisGateway(block: string): string {
  return block.replaceAll(DOCUMENTED_URL, url);
}

/** The SSE part of a block's output split into runs (each from its RUN_STARTED), and its other lines. */
function readOutput(output: string): { runs: WireEvent[][]; other: string[] } {
  const lines = output.split("\n");
  const sse = lines.filter((l) => l.startsWith("id: ") || l.startsWith("data: ") || l.startsWith(": ") || l === "");
  // Each record ends with a blank line; the shell's own newline after the last one is not part of the stream.
  const { events, problems } = parseSse(`${sse.join("\n").replace(/\n+$/, "")}\n\n`);
  expect(problems).toEqual([]);
  const runs: WireEvent[][] = [];
  for (const event of events) {
    if (event.type === "RUN_STARTED") runs.push([]);
    runs.at(-1)?.push(event);
  }
  for (const run of runs) expect(runProblems(run)).toEqual([]);
  return { runs, other: lines.filter((l) => !sse.includes(l)) };
}

const finished = (run: WireEvent[]) => run.at(-1) as { type: string; outcome?: { type: string; interrupts?: { id: string }[] } };
const textOf = (run: WireEvent[]) => run.flatMap((e) => (e.type === "TEXT_MESSAGE_CONTENT" ? [String(e["delta"])] : [])).join("");
const executionIdOf = (run: WireEvent[]) =>
  (run.find((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1")?.["value"] as { executionId: string }).executionId;

describe("the README's Try it", () => {
  it("is one request that the demo serves to a successful run", async () => {
    expect(README_TRY_IT).toHaveLength(1);
    expect(README_TRY_IT[0]).toContain(DOCUMENTED_URL);
    const shell = new Shell(scratch);
    try {
      const { output, status } = await shell.run(forThisGateway(README_TRY_IT[0]!));
      expect(status).toBe(0);
      const { runs } = readOutput(output);
      expect(runs).toHaveLength(1);
      expect(finished(runs[0]!).outcome?.type).toBe("success");
    } finally {
      shell.close();
    }
  });
});

describe("docs/try-it.md", () => {
  it("runs every block in order against the demo, each answer as the text says", async () => {
    expect(TRY_IT).toHaveLength(12);
    expect(TRY_IT[0]).toContain(`AGUI=${DOCUMENTED_URL}`);
    const shell = new Shell(scratch);
    try {
      const results: { output: string; status: number }[] = [];
      for (const block of TRY_IT) {
        const result = await shell.run(forThisGateway(block));
        expect(result.status, `${block}\n→ ${result.output}`).toBe(0);
        results.push(result);
      }
      const [setup, run, deploy, observe, approve, observeOver, deny, cancel, pipeline, protobuf, reconnect, connect] = results.map((r) => r.output);

      expect(setup!.trim()).toBe("");
      expect(finished(readOutput(run!).runs[0]!).outcome?.type).toBe("success");

      // The deploy run ends at a permission; the printed ids are the stream's own.
      const asked = readOutput(deploy!);
      const interrupt = finished(asked.runs[0]!).outcome?.interrupts?.[0]?.id;
      expect(finished(asked.runs[0]!).outcome?.type).toBe("interrupt");
      expect(asked.other.filter(Boolean)).toEqual([`interrupt ${interrupt}, execution ${executionIdOf(asked.runs[0]!)}`]);

      // The observer sees the same pending interrupt and exactly one terminal event.
      const observed = readOutput(observe!).runs;
      expect(observed).toHaveLength(1);
      expect(finished(observed[0]!).outcome?.interrupts?.map((i) => i.id)).toEqual([interrupt]);

      const approved = readOutput(approve!).runs;
      expect(finished(approved[0]!).outcome?.type).toBe("success");
      expect(textOf(approved[0]!)).toContain("is deployed");

      expect(JSON.parse(observeOver!)).toMatchObject({ error: { code: "EXECUTION_NOT_FOUND" } });

      const denied = readOutput(deny!).runs;
      expect(denied).toHaveLength(1);
      expect(finished(denied[0]!).outcome?.type).toBe("success");
      expect(textOf(denied[0]!)).toContain("did not deploy");

      expect(JSON.parse(cancel!)).toMatchObject({ status: "cancelled", executionId: expect.any(String) });

      const [selection, selected] = readOutput(pipeline!).runs;
      expect(finished(selection!).outcome?.type).toBe("interrupt");
      expect(selection!.some((e) => e.type === "STEP_STARTED")).toBe(true);
      expect(selection!.some((e) => e.type === "CUSTOM" && e["name"] === "iac-code.pipeline.v1")).toBe(true);
      expect(finished(selected!).outcome?.type).toBe("success");

      // Protobuf: the status line curl prints, then the saved frames decoded, each a valid event of one run.
      const [status, contentType, bytes] = protobuf!.trim().split(" ");
      expect([status, contentType]).toEqual(["200", "application/vnd.ag-ui.event+proto"]);
      const folder = (await shell.run("echo $TRY")).output.trim();
      const frames = await readFile(path.join(folder, "run.pb"));
      expect(frames.length).toBe(Number(bytes));
      const events: WireEvent[] = [];
      for (let at = 0; at < frames.length; ) {
        const length = frames.readUInt32BE(at);
        events.push(decode(frames.subarray(at + 4, at + 4 + length)) as unknown as WireEvent);
        at += 4 + length;
      }
      expect(events[0]?.type).toBe("RUN_STARTED");
      expect(finished(events).outcome?.type).toBe("success");
      expect(runProblems(events)).toEqual([]);

      // The reconnect: run-1's records after its fifth, byte for byte, ids 6 to the end.
      const first = run!.split(/(?<=\n\n)/);
      expect(reconnect).toBe(first.slice(5).join(""));
      expect(reconnect!.startsWith("id: run-1:6\n")).toBe(true);

      // The connect: the conversation so far (m-1 first), then a plain finish.
      const connected = readOutput(connect!).runs;
      expect(connected).toHaveLength(1);
      expect(connected[0]!.map((e) => e.type)).toEqual(["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
      const messages = connected[0]![1]!["messages"] as { id: string; role: string }[];
      expect(messages[0]).toMatchObject({ id: "m-1", role: "user" });
      expect(messages.filter((m) => m.role === "user").length).toBeGreaterThanOrEqual(4);
      expect(finished(connected[0]!).outcome?.type).toBe("success");
    } finally {
      shell.close();
    }
  }, 120_000);
});
