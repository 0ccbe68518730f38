// The built CLI (dist/src/cli.js) as a user runs it: help, refusals before anything starts, the demo
// that serves a full run on the port it prints, an external upstream via --a2a-url, and SIGTERM.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createDemoScript, startScriptedA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import { expectValidRun, postRaw, readSse, sessionEventOf, typesOf } from "./helpers/e2e.js";
import { runBannerCurl } from "./helpers/durable.js";
import { AUDIENCE, ISSUER, signingKey, tokenFor } from "./helpers/jwks.js";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CLI = path.join(REPO, "dist", "src", "cli.js");
/** What the shebang (`#!/usr/bin/env -S node <flags>`) hands node: the CLI is run here as an installed bin runs it. */
function shebangFlags(): string[] {
  const line = readFileSync(CLI, "utf8").split("\n", 1)[0]!;
  expect(line).toMatch(/^#!\/usr\/bin\/env -S node( |$)/);
  return line.replace(/^#!\/usr\/bin\/env -S node/, "").split(/\s+/).filter(Boolean);
}

let scratch: string;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  if (!existsSync(CLI)) execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { cwd: REPO, stdio: "ignore", timeout: 120_000 });
  expect(existsSync(CLI)).toBe(true);
  scratch = await mkdtemp(path.join(tmpdir(), "agui-cli-"));
}, 150_000);

afterEach(() => {
  // A failed assertion must not leave a gateway running.
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  children.clear();
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** The parent's environment without any gateway setting, so only what a test passes applies. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("IAC_CODE") && !key.startsWith("IACCODE")) env[key] = value;
  }
  return { ...env, IAC_CODE_CONFIG_DIR: path.join(scratch, "config"), ...extra };
}

function spawnCli(args: string[], env: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, [...shebangFlags(), CLI, ...args], { cwd: scratch, env: cleanEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  return child;
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs to completion (killed after `timeoutMs`). */
function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 10_000): Promise<Exit> {
  const started = Date.now();
  const child = spawnCli(args, env);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  return new Promise((resolve) => {
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}

interface Served {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts a long-running CLI and waits (at most 10 s) for its "listening on <url>" line. */
async function serveCli(args: string[], env: Record<string, string> = {}): Promise<Served> {
  const child = spawnCli(args, env);
  let stdout = "";
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" line in 10 s; stderr: ${stderr}`)), 10_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void exited.then(() => reject(new Error(`the CLI exited before listening; stderr: ${stderr}`)));
  });
  return { child, url, stdout: () => stdout, stderr: () => stderr, exited };
}

/** SIGTERM, then the exit status within 5 s. */
async function stop(served: Served): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
  const started = Date.now();
  served.child.kill("SIGTERM");
  const result = await Promise.race([
    served.exited,
    new Promise<{ code: null; signal: "timeout" }>((resolve) => setTimeout(() => resolve({ code: null, signal: "timeout" }), 5_000)),
  ]);
  return { code: result.code, signal: result.signal as NodeJS.Signals | null, ms: Date.now() - started };
}

describe("agui-gateway CLI", () => {
  it("--help exits 0 and lists the flags and environment names", async () => {
    const { code, stdout } = await runCli(["--help"]);
    expect(code).toBe(0);
    for (const name of [
      "--a2a-url",
      "--port",
      "--host",
      "--state-dir",
      "--demo",
      "--interrupt-ttl",
      "IAC_CODE_AGUI_A2A_URL",
      "IAC_CODE_AGUI_PORT",
      "IAC_CODE_AGUI_STATE_DIR",
      "IAC_CODE_AGUI_A2A_TOKEN",
      "IAC_CODE_AGUI_AUTH_TOKEN",
      "IAC_CODE_AGUI_ALLOWED_CWDS",
    ]) {
      expect(stdout, name).toContain(name);
    }
  });

  it("npm start runs node with the same flags as the installed bin's shebang", () => {
    const start = (JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start;
    const flags = shebangFlags();
    expect(flags.length).toBeGreaterThan(0);
    expect(start).toContain(`node ${flags.join(" ")} dist/src/cli.js`);
  });

  it("--version prints the package version", async () => {
    const { code, stdout } = await runCli(["--version"]);
    expect(code).toBe(0);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("refuses a non-loopback --a2a-url with exit 1 before serving anything", async () => {
    const { code, stdout, stderr } = await runCli(["--a2a-url", "http://10.0.0.1:1/", "--port", "0"]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/loopback/i);
    expect(stderr).toContain("http://10.0.0.1:1/");
    expect(stdout).not.toContain("listening");
  });

  it("without any upstream exits 1 naming --a2a-url and --demo", async () => {
    const { code, stdout, stderr } = await runCli(["--port", "0"]);
    expect(code).toBe(1);
    expect(stderr).toContain("--a2a-url");
    expect(stderr).toContain("--demo");
    expect(stdout).not.toContain("listening");
  });

  it("--auth-jwt-key: a file that is no public key exits 1 naming it; a real one serves that issuer's users", async () => {
    const notAKey = path.join(scratch, "not-a-key.pem");
    writeFileSync(notAKey, "hello");
    const jwtFlags = ["--auth-jwt-issuer", ISSUER, "--auth-jwt-audience", AUDIENCE];
    const refused = await runCli(["--demo", "--port", "0", "--auth-jwt-key", notAKey, ...jwtFlags]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`--auth-jwt-key ${notAKey} is not a readable PEM public key`);

    const key = await signingKey("cli");
    const pem = path.join(scratch, "issuer.pem");
    writeFileSync(pem, key.publicPem);
    const served = await serveCli(["--demo", "--port", "0", "--state-dir", path.join(scratch, "state-jwt"), "--auth-jwt-key", pem, ...jwtFlags]);
    const body = /-d '(\{.*\})'/.exec(served.stdout())?.[1];
    expect(body, served.stdout()).toBeDefined();
    const json = { "Content-Type": "application/json", Accept: "text/event-stream" };
    expect((await postRaw(served.url, body!, json)).status).toBe(401);
    const reply = await postRaw(served.url, body!, { ...json, Authorization: `Bearer ${await tokenFor(key, "alice")}` });
    expect(reply.status, reply.text).toBe(200);
    expectValidRun(readSse(reply.text).events);
    expect((await stop(served)).code).toBe(0);
  });

  it("--demo --port 0 prints its real URL and serves the printed request; SIGTERM exits 0", async () => {
    const served = await serveCli(["--demo", "--port", "0", "--state-dir", path.join(scratch, "state-demo")]);
    const port = Number(new URL(served.url).port);
    expect(port).toBeGreaterThan(0);

    // The banner's curl example, sent as printed.
    const body = /-d '(\{.*\})'/.exec(served.stdout())?.[1];
    expect(body, served.stdout()).toBeDefined();
    const reply = await postRaw(served.url, body!, { "Content-Type": "application/json", Accept: "text/event-stream" });
    expect(reply.status, reply.text).toBe(200);
    const { events } = readSse(reply.text);
    expectValidRun(events);
    const types = typesOf(events);
    expect(types[0]).toBe("RUN_STARTED");
    expect(types.at(-1)).toBe("RUN_FINISHED");
    for (const type of ["REASONING_START", "REASONING_MESSAGE_CONTENT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TOOL_CALL_START", "TOOL_CALL_RESULT"]) {
      expect(types, type).toContain(type);
    }
    expect(events.at(-1)).toMatchObject({ outcome: { type: "success" } });

    const exit = await stop(served);
    expect(exit.signal).toBeNull();
    expect(exit.code).toBe(0);
    expect(exit.ms).toBeLessThan(5_000);
  });

  it("--demo stopped and started again on the same state: the banner's curl works each time, in the thread's one session", async () => {
    const args = ["--demo", "--port", "0", "--state-dir", path.join(scratch, "state-restart")];
    const sessions: unknown[] = [];
    for (let start = 1; start <= 2; start++) {
      const served = await serveCli(args);
      const events = await runBannerCurl(served.stdout(), scratch);
      expect(events.at(-1), `start ${start}`).toMatchObject({ type: "RUN_FINISHED", threadId: "demo-thread-1", outcome: { type: "success" } });
      sessions.push(sessionEventOf(events)["sessionId"]);
      expect((await stop(served)).code).toBe(0);
    }
    expect(sessions[0]).toEqual(expect.any(String));
    expect(sessions[1]).toBe(sessions[0]);
  });

  it("with allowed-cwds in YAML the banner's curl (and the console) name the first allowed root that exists; the curl is admitted", async () => {
    const roots = ["roots/missing", "roots/first", "roots/second"].map((dir) => path.join(scratch, dir));
    await mkdir(roots[1]!, { recursive: true });
    await mkdir(roots[2]!, { recursive: true });
    const config = path.join(scratch, "allowed-cwds.yaml");
    await writeFile(config, `allowed_cwds:\n${roots.map((root) => `  - ${root}\n`).join("")}`);
    const served = await serveCli(["--demo", "--port", "0", "--config", config, "--state-dir", path.join(scratch, "state-roots")]);
    const body = JSON.parse(/-d '(\{.*\})'/.exec(served.stdout())![1]!) as { forwardedProps: { iacCode: { cwd: string } } };
    expect(await realpath(body.forwardedProps.iacCode.cwd)).toBe(await realpath(roots[1]!));
    // The web console the banner points to starts in the same workspace.
    const consoleConfig = (await (await fetch(new URL("console/config.json", served.url))).json()) as { cwd: string };
    expect(consoleConfig.cwd).toBe(body.forwardedProps.iacCode.cwd);
    const events = await runBannerCurl(served.stdout(), scratch);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect((await stop(served)).code).toBe(0);
  });

  describe("with an external upstream", () => {
    let upstream: ScriptedA2AServer;

    beforeAll(async () => {
      upstream = await startScriptedA2AServer({ script: createDemoScript({ frameDelayMs: 0 }) });
    });

    afterAll(async () => {
      await upstream.close();
    });

    const runOnce = async (url: string, messageId: string) => {
      const input = {
        threadId: `cli-thread-${messageId}`,
        runId: `cli-run-${messageId}`,
        state: {},
        messages: [{ id: messageId, role: "user", content: "List my VPCs" }],
        tools: [],
        context: [],
        forwardedProps: { iacCode: { schemaVersion: 1, rosInvocationId: "invocation-1", cwd: scratch } },
      };
      const reply = await postRaw(url, input);
      expect(reply.status, reply.text).toBe(200);
      const { events } = readSse(reply.text);
      expectValidRun(events);
      expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
      const sent = upstream.requests.find(
        (r) => r.method === "SendStreamingMessage" && (r.params as { message?: { messageId?: string } }).message?.messageId === messageId,
      );
      expect(sent, "the upstream received the run").toBeDefined();
      expect(sent!.headers["a2a-version"]).toBe("1.0");
    };

    it("--a2a-url drives that upstream", async () => {
      const served = await serveCli(["--a2a-url", upstream.url, "--port", "0", "--state-dir", path.join(scratch, "state-flag")]);
      expect(served.stdout()).not.toContain("demo upstream");
      await runOnce(served.url, "cli-flag-1");
      expect((await stop(served)).code).toBe(0);
    });

    it("IAC_CODE_AGUI_A2A_URL and IAC_CODE_AGUI_PORT do the same from the environment", async () => {
      const served = await serveCli(["--state-dir", path.join(scratch, "state-env")], {
        IAC_CODE_AGUI_A2A_URL: upstream.url,
        IAC_CODE_AGUI_PORT: "0",
      });
      await runOnce(served.url, "cli-env-1");
      expect((await stop(served)).code).toBe(0);
    });
  });
});
