import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { KernelNotFoundError, findOnPath, startManagedKernel, type ManagedKernel } from "../src/ops/managed-kernel.js";

const fixtures = fileURLToPath(new URL("./fixtures/", import.meta.url));
// The fixture's `#!/usr/bin/env node` needs node on the child's PATH too.
const PATH = `${fixtures}${delimiter}${process.env.PATH ?? ""}`;
const started: ManagedKernel[] = [];
const scratch = mkdtempSync(join(tmpdir(), "managed-kernel-"));

afterAll(async () => {
  await Promise.all(started.map((k) => k.stop()));
  rmSync(scratch, { recursive: true, force: true });
});

function recordingLogger() {
  const lines: { meta: { pid?: number; stream?: string }; text: string }[] = [];
  const log = (meta: unknown, text: unknown) => lines.push({ meta: meta as { pid?: number }, text: String(text) });
  return { lines, logger: { info: log, warn: log } };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function start(env: NodeJS.ProcessEnv, extra: Parameters<typeof startManagedKernel>[0] = {}) {
  const kernel = await startManagedKernel({ command: "fake-iac-code", env: { PATH, ...env }, ...extra });
  started.push(kernel);
  return kernel;
}

describe("findOnPath", () => {
  it("finds an executable on PATH and ignores files that are not executable", () => {
    writeFileSync(join(scratch, "plain-file"), "not a program");
    chmodSync(join(scratch, "plain-file"), 0o644);
    const env = { PATH: `${scratch}${delimiter}${fixtures}` };
    expect(findOnPath("fake-iac-code", env)).toBe(join(fixtures, "fake-iac-code"));
    expect(findOnPath("plain-file", env)).toBeUndefined();
    expect(findOnPath("no-such-program-here", env)).toBeUndefined();
    expect(findOnPath(join(fixtures, "fake-iac-code"), { PATH: "" })).toBe(join(fixtures, "fake-iac-code"));
  });

  it("refuses to start without the command and names the alternatives", async () => {
    const error = await startManagedKernel({ env: { PATH: scratch } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KernelNotFoundError);
    expect((error as Error).message).toContain("--a2a-url");
    expect((error as Error).message).toContain("--demo");
  });
});

describe("startManagedKernel", () => {
  it("starts the kernel on a loopback port with a fresh token and the reference arguments", async () => {
    const { lines, logger } = recordingLogger();
    const kernel = await start(
      { IAC_CODE_AGUI_ALLOWED_CWDS: "/srv/a:/srv/b", FAKE_KERNEL_INHERITED: "yes" },
      { logger },
    );
    const port = Number(new URL(kernel.url).port);
    expect(kernel.url).toBe(`http://127.0.0.1:${port}/`);
    expect(kernel.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(isAlive(kernel.pid)).toBe(true);

    expect((await fetch(`${kernel.url}health`)).status).toBe(401);
    const launch = await fetch(`${kernel.url}launch`, { headers: { Authorization: `Bearer ${kernel.token}` } });
    expect(await launch.json()).toEqual({
      args: ["a2a", "--host", "127.0.0.1", "--port", String(port), "--thinking-exposure", "all"],
      allowedCwds: "/srv/a:/srv/b",
      inherited: "yes",
    });
    // Child output goes to our logger, tagged with its pid.
    expect(lines.some((l) => l.text.includes(`listening on 127.0.0.1:${port}`) && l.meta.pid === kernel.pid && l.meta.stream === "stdout")).toBe(true);

    await kernel.stop();
    expect(isAlive(kernel.pid)).toBe(false);
    await kernel.stop(); // idempotent
  });

  it("leaves an explicit IACCODE_A2A_ALLOWED_CWDS alone and gives each kernel its own token", async () => {
    const a = await start({ IAC_CODE_AGUI_ALLOWED_CWDS: "/from/agui", IACCODE_A2A_ALLOWED_CWDS: "/from/kernel" });
    const b = await start({});
    expect(a.token).not.toBe(b.token);
    expect(a.url).not.toBe(b.url);
    const launchA = await fetch(`${a.url}launch`, { headers: { Authorization: `Bearer ${a.token}` } });
    expect(((await launchA.json()) as { allowedCwds: unknown }).allowedCwds).toBe("/from/kernel");
    const launchB = await fetch(`${b.url}launch`, { headers: { Authorization: `Bearer ${b.token}` } });
    expect(((await launchB.json()) as { allowedCwds: unknown }).allowedCwds).toBeNull();
    // b's token does not open a.
    expect((await fetch(`${a.url}health`, { headers: { Authorization: `Bearer ${b.token}` } })).status).toBe(401);
    await Promise.all([a.stop(), b.stop()]);
  });

  it("keeps polling until the kernel turns healthy", async () => {
    const before = Date.now();
    const kernel = await start({ FAKE_KERNEL_MODE: "slow" });
    expect(Date.now() - before).toBeGreaterThanOrEqual(400);
    expect((await fetch(`${kernel.url}health`, { headers: { Authorization: `Bearer ${kernel.token}` } })).status).toBe(200);
    await kernel.stop();
  });

  it("fails with the exit code when the kernel exits during start-up", async () => {
    const { lines, logger } = recordingLogger();
    const before = Date.now();
    await expect(start({ FAKE_KERNEL_MODE: "exit" }, { logger })).rejects.toThrow(
      "The local A2A process exited during startup (exit code 3).",
    );
    expect(Date.now() - before).toBeLessThan(5_000);
    expect(lines.some((l) => l.text.includes("exiting as asked") && l.meta.stream === "stderr")).toBe(true);
  });

  it("stops a kernel that never turns healthy and reports the timeout", async () => {
    const { lines, logger } = recordingLogger();
    await expect(start({ FAKE_KERNEL_MODE: "never-healthy" }, { logger, startupTimeoutMs: 800 })).rejects.toThrow(
      "The local A2A process did not become ready in time.",
    );
    const pid = lines.find((l) => l.text.includes("listening on"))?.meta.pid;
    expect(pid).toBeTypeOf("number");
    expect(isAlive(pid!)).toBe(false);
  });

  it("escalates to SIGKILL when the kernel ignores SIGTERM", async () => {
    const { lines, logger } = recordingLogger();
    const kernel = await start({ FAKE_KERNEL_MODE: "ignore-term" }, { logger, stopGraceMs: 300 });
    const before = Date.now();
    await kernel.stop();
    expect(Date.now() - before).toBeGreaterThanOrEqual(290);
    expect(isAlive(kernel.pid)).toBe(false);
    await expect.poll(() => lines.some((l) => l.text.includes("ignoring SIGTERM"))).toBe(true);
  });
});
