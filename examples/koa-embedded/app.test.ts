// The embedding example run as a user would run it: log in to the host service, then drive the agent under
// /agent with the real @ag-ui/client HttpAgent; strangers and the logged-out are refused with the gateway's envelope.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoScript, startScriptedA2AServer, type ScriptedA2AServer } from "../../src/demo/index.js";
import { postRaw, runInput, runWithHttpAgent } from "../../test/helpers/e2e.js";
import { startExample, type RunningExample } from "./app.js";

let upstream: ScriptedA2AServer;
let example: RunningExample;
let root: string;

beforeAll(async () => {
  upstream = await startScriptedA2AServer({ script: createDemoScript({ frameDelayMs: 0 }) });
  root = await mkdtemp(path.join(tmpdir(), "agui-embedded-"));
  example = await startExample({ a2aUrl: upstream.url, allowedRoots: [root] });
});

afterAll(async () => {
  await example.close();
  await upstream.close();
  await rm(root, { recursive: true, force: true });
});

async function login(user: string, password: string): Promise<string> {
  const reply = await fetch(`${example.url}/login`, { method: "POST", body: JSON.stringify({ user, password }) });
  expect(reply.status).toBe(200);
  return reply.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
}

describe("a Koa service hosting the gateway under /agent", () => {
  it("runs a logged-in user's turn through @ag-ui/client; the host's own routes are untouched", async () => {
    const cookie = await login("alice", "wonderland");
    const input = runInput(root);
    const run = await runWithHttpAgent(`${example.url}/agent`, input, { headers: { Cookie: cookie } });
    expect(run.status).toBe(200);
    expect(run.events[0]?.type).toBe("RUN_STARTED");
    expect(run.events.at(-1)?.type).toBe("RUN_FINISHED");
    const sent = upstream.requests.find((r) => r.method === "SendStreamingMessage")?.params as { message: { metadata: { iac_code: { user_id?: string } } } };
    expect(sent.message.metadata.iac_code.user_id).toBe("alice");
    expect(await (await fetch(`${example.url}/agent/health`)).json()).toMatchObject({ status: "ok" });
    expect(await (await fetch(`${example.url}/`)).text()).toContain("The example service");
  });

  it("refuses the logged-out with the gateway's 401 envelope, and another user's thread as taken", async () => {
    const refused = await postRaw(`${example.url}/agent`, runInput(root));
    expect(refused.status).toBe(401);
    expect(refused.json).toEqual({ error: { code: "UNAUTHORIZED", message: "Log in first." } });

    const alice = await login("alice", "wonderland");
    const bob = await login("bob", "builder");
    const input = runInput(root);
    await runWithHttpAgent(`${example.url}/agent`, input, { headers: { Cookie: alice } });
    const stranger = await postRaw(`${example.url}/agent`, runInput(root, { threadId: input.threadId }), { "Content-Type": "application/json", Cookie: bob });
    expect(stranger.status).toBe(409);
    expect(stranger.json.error.code).toBe("THREAD_BINDING_CONFLICT");
  });
});
