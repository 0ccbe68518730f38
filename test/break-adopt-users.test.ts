// Breaking adoption (src/runs/adopt.ts) with users: a stranger's connect to another user's orphaned thread (a gateway
// killed with SIGKILL, started again with --reconnect-grace) must neither adopt nor disturb the owner's run.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { EventSchema } from "@ag-ui/core/schemas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoSessionId, startScriptedA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import { ensureCliBuilt, startCliOnState, type CliGateway } from "./helpers/durable.js";
import { openSse, runInput, slowTurn, type WireEvent } from "./helpers/e2e.js";
import { AUDIENCE, ISSUER, signingKey, startJwksServer, tokenFor, type JwksServer } from "./helpers/jwks.js";

describe("adoption with users", () => {
  let upstream: ScriptedA2AServer;
  let jwks: JwksServer;
  let root: string;
  let current: CliGateway | undefined;
  let alice: string;
  let mallory: string;
  beforeAll(async () => {
    ensureCliBuilt();
    const key = await signingKey("k1");
    jwks = await startJwksServer([key]);
    alice = await tokenFor(key, "alice");
    mallory = await tokenFor(key, "mallory");
    upstream = await startScriptedA2AServer({ script: (turn) => slowTurn(demoSessionId(turn.contextId), 60, 40) });
    root = await mkdtemp(path.join(tmpdir(), "agui-break-adopt-u-"));
    await mkdir(path.join(root, "ws-1"));
  }, 120_000);
  afterAll(async () => {
    await current?.kill("SIGKILL");
    await upstream?.close();
    await jwks?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });
  const start = async () => {
    current = await startCliOnState(upstream.url, root, ["--reconnect-grace", "30", "--auth-jwks-url", jwks.url, "--auth-jwt-issuer", ISSUER, "--auth-jwt-audience", AUDIENCE]);
  };
  const url = (p = "") => new URL(p, current!.url).toString();

  it("a stranger's connect (even with the binding's proof) adopts nothing; the owner's connect then adopts the run", async () => {
    await start();
    const input = runInput(path.join(root, "ws-1"), { threadId: randomUUID() });
    const first = await openSse(url(), input, { Authorization: `Bearer ${alice}` });
    expect(first.status).toBe(200);
    await first.until(() => first.events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").length >= 3);
    const taskId = /"taskId":"([^"]+)"/.exec(JSON.stringify(first.events))![1]!;
    await current!.kill("SIGKILL");
    first.abort();
    await start();
    const body = () => ({ threadId: input.threadId, runId: randomUUID(), forwardedProps: input.forwardedProps });
    const stranger = await fetch(url("connect"), { method: "POST", headers: { "Content-Type": "application/json", Authorization: `Bearer ${mallory}` }, body: JSON.stringify(body()) });
    expect(stranger.status).toBe(404);
    await stranger.text();
    const owner = await openSse(url("connect"), body(), { Authorization: `Bearer ${alice}` });
    const events: WireEvent[] = await owner.rest();
    for (const event of events) expect(() => EventSchema.parse(event)).not.toThrow();
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(JSON.stringify(events)).toContain("tick 59 ");
    expect(upstream.cancelled).not.toContain(taskId);
  }, 60_000);
});
