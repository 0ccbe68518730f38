// POST /connect for who is asking and what survives: a user connects to their own thread by who they are (no proof),
// a stranger is told the thread does not exist, the trusted server connects for anyone; and after a SIGKILL of the
// gateway, a fresh process on the same state directory brings the same conversation and the pending interrupt.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import { clientVerifierProblems } from "./helpers/checks.js";
import { withoutToolsAndReasoning } from "./helpers/conversation.js";
import { allowOnce, demoScript, ensureCliBuilt, interruptsOf, resumeInput, startCli, type CliGateway } from "./helpers/durable.js";
import { expectValidRun, postRaw, readSse, runInput, runWithHttpAgent, startJwtStack, typesOf, type WireEvent } from "./helpers/e2e.js";
import { tokenFor } from "./helpers/jwks.js";

async function connectTo(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; events: WireEvent[]; code?: string }> {
  const response = await fetch(new URL("connect", url), { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify(body) });
  const text = await response.text();
  if (response.status !== 200) return { status: response.status, events: [], code: (JSON.parse(text) as { error: { code: string } }).error.code };
  const { events } = readSse(text);
  expectValidRun(events);
  expect(await clientVerifierProblems(events)).toEqual([]);
  return { status: 200, events };
}

describe("who may connect", () => {
  const TRUSTED = "connect-trusted-token";
  it("the owner by who they are, the trusted server for anyone, a stranger not at all", async () => {
    const stack = await startJwtStack({ kid: "connect-key", gateway: { authToken: TRUSTED }, jwt: { jwksCooldownMs: 0 } });
    const key = stack.key;
    try {
      const alice = { Authorization: `Bearer ${await tokenFor(key, "alice")}` };
      const input = stack.input();
      const run = await postRaw(stack.gateway.url, input, { "Content-Type": "application/json", ...alice });
      expect(readSse(run.text).events.at(-1)?.type).toBe("RUN_FINISHED");
      // No forwardedProps at all, as a server-side runner sends it.
      const bare = { threadId: input.threadId, runId: randomUUID() };
      const own = await connectTo(stack.gateway.url, bare, alice);
      expect(typesOf(own.events)).toEqual(["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
      expect((own.events[1]!["messages"] as { id: string }[]).map((m) => m.id)[0]).toBe(input.messages[0]!.id);
      const trusted = await connectTo(stack.gateway.url, bare, { Authorization: `Bearer ${TRUSTED}` });
      expect(trusted.events[1]).toEqual({ ...own.events[1], timestamp: trusted.events[1]!["timestamp"] });
      // A stranger, even with the binding's proof, is told the thread does not exist.
      const mallory = { Authorization: `Bearer ${await tokenFor(key, "mallory")}` };
      expect(await connectTo(stack.gateway.url, { ...bare, forwardedProps: input.forwardedProps }, mallory)).toMatchObject({ status: 404, code: "THREAD_NOT_FOUND" });
      expect(await connectTo(stack.gateway.url, bare)).toMatchObject({ status: 401 });
    } finally {
      await stack.close();
    }
  });
});

describe("after the gateway is killed with SIGKILL and started again on the same state directory", () => {
  let upstream: ScriptedA2AServer;
  let root: string;
  const children: CliGateway[] = [];
  beforeAll(async () => {
    ensureCliBuilt();
    upstream = await startScriptedA2AServer({ script: demoScript() });
    root = await mkdtemp(path.join(tmpdir(), "agui-connect-restart-"));
    await mkdir(path.join(root, "ws-1"));
  }, 120_000);
  afterAll(async () => {
    for (const child of children) await child.kill("SIGKILL");
    await upstream?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });
  const gatewayProcess = async () => {
    const child = await startCli(["--a2a-url", upstream.url, "--port", "0", "--state-dir", path.join(root, "state")], { IAC_CODE_AGUI_ALLOWED_CWDS: root });
    children.push(child);
    return child;
  };

  it("connect brings the same conversation and the pending interrupt, whose answer is then admitted", async () => {
    const first = await gatewayProcess();
    const opening = runInput(path.join(root, "ws-1"), { prompt: "show me the workspace" });
    const turn = await runWithHttpAgent(first.url, opening);
    const deploy = { ...runInput(path.join(root, "ws-1"), { threadId: opening.threadId, prompt: "deploy the demo VPC" }) };
    deploy.messages = [...structuredClone(turn.agent.messages), ...deploy.messages];
    const parked = await runWithHttpAgent(first.url, deploy, { agent: turn.agent });
    const interrupts = interruptsOf(parked.events);
    expect(interrupts).toHaveLength(1);
    expect(await first.kill("SIGKILL")).toEqual({ code: null, signal: "SIGKILL" });

    const second = await gatewayProcess();
    const { events } = await connectTo(second.url, { ...opening, runId: randomUUID() });
    expect(events[1]!["messages"]).toEqual(withoutToolsAndReasoning(turn.agent.messages));
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt", interrupts } });
    const answered = await postRaw(second.url, resumeInput(deploy, interrupts.map((i) => allowOnce(i.id))));
    expect(readSse(answered.text).events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });
});
