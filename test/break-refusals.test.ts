// Outsider checks of "a refused POST / leaves no trace" with workspaces the refusals test does not try: symlinks,
// `..`, relative paths, very long names, a file. Nothing may be created, written or called for a refusal.
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { RunAgentInput } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { interruptsOf, resumeInput, startDurableStack, type DurableStack } from "./helpers/durable.js";
import { postRaw } from "./helpers/e2e.js";
import { finishRun, postRun } from "./helpers/replicas.js";
import { diskSnapshot } from "./helpers/disk.js";
import { httpCall } from "./helpers/http.js";

let stack: DurableStack;
let outside: string;
let fresh = 0;

beforeAll(async () => {
  stack = await startDurableStack();
  outside = await mkdtemp(path.join(tmpdir(), "agui-outside-"));
});

afterAll(async () => {
  await stack?.close();
  if (outside) await rm(outside, { recursive: true, force: true });
});

function withCwd(input: RunAgentInput, cwd: string): RunAgentInput {
  const props = input.forwardedProps as { iacCode: Record<string, unknown> };
  return { ...input, forwardedProps: { ...props, iacCode: { ...props.iacCode, cwd } } };
}

/** POSTs a turn naming `cwd`; expects a 400 INVALID_INPUT on field cwd and nothing changed on disk or upstream. */
async function refusedWithoutTrace(cwd: string): Promise<void> {
  const disk = { root: diskSnapshot(stack.root), outside: diskSnapshot(outside) };
  const calls = stack.upstream.requests.length;
  const reply = await postRaw(stack.gateway.url, JSON.stringify(withCwd(stack.input(), cwd)), { "Content-Type": "application/json" });
  expect(reply.status, reply.text).toBe(400);
  expect(JSON.parse(reply.text).error.code).toBe("INVALID_INPUT");
  expect({ root: diskSnapshot(stack.root), outside: diskSnapshot(outside) }, `nothing created for cwd ${cwd.slice(0, 120)}…`).toEqual(disk);
  expect(stack.upstream.requests.slice(calls).map((r) => r.method), "no kernel call").toEqual([]);
}

describe("odd workspaces are refused without a trace", () => {
  it("a symlink inside the root that leads outside, with a missing tail", async () => {
    const link = path.join(stack.root, `escape-${++fresh}`);
    symlinkSync(outside, link);
    await refusedWithoutTrace(path.join(link, "new", "deeper"));
    await refusedWithoutTrace(link);
  });

  it("a dangling symlink inside the root that points outside", async () => {
    const link = path.join(stack.root, `dangling-${++fresh}`);
    symlinkSync(path.join(outside, "not-yet"), link);
    await refusedWithoutTrace(path.join(link, "ws"));
  });

  it("`..` that climbs out of the root, relative paths, ~", async () => {
    await refusedWithoutTrace(path.join(stack.root, "..", path.basename(outside), "climbed"));
    await refusedWithoutTrace(`${stack.root}/new-${++fresh}/../../${path.basename(outside)}/x`);
    await refusedWithoutTrace("relative/ws");
    await refusedWithoutTrace("./ws");
    await refusedWithoutTrace("~/ws");
  });

  it("a file where a directory is wanted, and a file on the way", async () => {
    const file = path.join(stack.root, `file-${++fresh}`);
    writeFileSync(file, "x");
    await refusedWithoutTrace(file);
    await refusedWithoutTrace(path.join(file, "below"));
  });

  it("a whole path longer than PATH_MAX", async () => {
    const parts = Array.from({ length: 30 }, (_, i) => `${"p".repeat(150)}${i}`);
    await refusedWithoutTrace(path.join(stack.root, `long-${++fresh}`, ...parts));
  });

  it("a workspace of 200,000 missing components (400 KB) is refused at once, and /health answers meanwhile", async () => {
    const refusal = refusedWithoutTrace(`${stack.root}/${"d/".repeat(200_000)}`);
    const asked = Date.now();
    const health = await httpCall(new URL("/health", stack.gateway.url).href, { method: "GET", timeoutMs: 10_000 });
    expect(health.status).toBe(200);
    expect(Date.now() - asked, "/health waited behind the workspace check").toBeLessThan(2_000);
    await refusal;
    // Also a path just past PATH_MAX, and one whose `..` would bring it back under it: both refused before any walk.
    await refusedWithoutTrace(`${stack.root}/${"d/".repeat(2_100)}`);
    await refusedWithoutTrace(`${stack.root}/${"d/../".repeat(1_000)}ws-1`);
  }, 20_000);

  it("a name longer than NAME_MAX below a missing directory: refused, and the missing directory is not created", async () => {
    const parent = path.join(stack.root, `namemax-${++fresh}`);
    await refusedWithoutTrace(path.join(parent, "n".repeat(300)));
  });

  it("a name longer than NAME_MAX below several missing directories", async () => {
    await refusedWithoutTrace(path.join(stack.root, `deep-${++fresh}`, "a", "b", "c", "x".repeat(256)));
  });

  it("a loop of symlinks", async () => {
    const a = path.join(stack.root, `loop-a-${++fresh}`);
    const b = path.join(stack.root, `loop-b-${fresh}`);
    symlinkSync(b, a);
    symlinkSync(a, b);
    await refusedWithoutTrace(path.join(a, "ws"));
  });

  it("a NUL byte, and a workspace that is not a string", async () => {
    await refusedWithoutTrace(`${stack.root}/nul\u0000ws`);
    const disk = diskSnapshot(stack.root);
    const input = stack.input();
    const props = input.forwardedProps as { iacCode: Record<string, unknown> };
    for (const cwd of [42, null, ["/tmp"], { path: stack.workspace }]) {
      const reply = await postRaw(
        stack.gateway.url,
        JSON.stringify({ ...input, forwardedProps: { ...props, iacCode: { ...props.iacCode, cwd } } }),
        { "Content-Type": "application/json" },
      );
      expect(reply.status, reply.text).toBe(400);
      expect(JSON.parse(reply.text).error.code).toBe("INVALID_INPUT");
    }
    expect(diskSnapshot(stack.root)).toEqual(disk);
  });

  it("`..` from a real directory below the root out to /proc", async () => {
    const parent = path.join(stack.root, `proc-${++fresh}`);
    mkdirSync(parent);
    await refusedWithoutTrace(path.join(parent, "..", "..", "..", "proc", "self", "new"));
  });
});

describe("strings the kernel would echo or the thread would keep are bounded at admission", () => {
  async function refusedOnField(input: RunAgentInput, field: string): Promise<void> {
    const disk = diskSnapshot(stack.root);
    const calls = stack.upstream.requests.length;
    const reply = await postRaw(stack.gateway.url, JSON.stringify(input), { "Content-Type": "application/json" });
    expect(reply.status, reply.text).toBe(400);
    const error = JSON.parse(reply.text).error;
    expect(error.code).toBe("INVALID_INPUT");
    expect(error.message).toContain(field);
    expect(diskSnapshot(stack.root), "nothing stored").toEqual(disk);
    expect(stack.upstream.requests.slice(calls).map((r) => r.method), "no kernel call").toEqual([]);
  }

  it("a user message id of 257 code points", async () => {
    const input = stack.input();
    const messages = [{ id: "a-1", role: "assistant", content: "hello" }, { id: "😀".repeat(257), role: "user", content: "hi" }];
    await refusedOnField({ ...input, messages } as RunAgentInput, "messages.1.id");
  });

  it("a user message id of exactly 256 code points runs to its end, the kernel echoing it", async () => {
    const input = stack.input();
    const messages = [{ id: "😀".repeat(256), role: "user", content: "hi" }];
    const events = await finishRun(await postRun(stack.gateway.url, { ...input, messages }));
    expect(events.at(-1)?.type, JSON.stringify(events.at(-1))).toBe("RUN_FINISHED");
  });

  it("a userId of 2,000,000 characters", async () => {
    const input = stack.input();
    const props = input.forwardedProps as { iacCode: Record<string, unknown> };
    await refusedOnField({ ...input, forwardedProps: { ...props, iacCode: { ...props.iacCode, userId: "u".repeat(2_000_000) } } }, "forwardedProps.iacCode.userId");
  });
});

describe("a resume refused for its payload", () => {
  it("does not re-create the thread's deleted workspace, and sends the kernel nothing that changes the task", async () => {
    const cwd = path.join(stack.root, `parked-${++fresh}`);
    const input = withCwd(stack.input({ prompt: "deploy the stack" }), cwd);
    const [interrupt] = interruptsOf(await finishRun(await postRun(stack.gateway.url, input)));
    rmSync(cwd, { recursive: true });
    const calls = stack.upstream.requests.length;
    const refused = await finishRun(
      await postRun(stack.gateway.url, resumeInput(input, [{ interruptId: interrupt!.id, status: "resolved", payload: { decision: "maybe" } }])),
    );
    expect(refused.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "RESUME_PAYLOAD_INVALID" });
    const methods = stack.upstream.requests.slice(calls).map((r) => r.method);
    expect(methods.filter((m) => m !== "GetTask"), "no call that changes the task").toEqual([]);
    expect(existsSync(cwd), "the deleted workspace was created again by a refused resume").toBe(false);
  });
});
