// A careless embedder: its authenticate(ctx) reads the user id from its own session and returns whatever it finds,
// so a visitor without a session is `{ kind: "user", userId: undefined }`. The gateway takes that caller as it is.
// Its server-side service (the trusted caller) starts threads for users: those threads have no owner.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import Koa from "koa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoScript, startScriptedA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import { createGatewayMiddleware, type GatewayMiddleware } from "../src/server.js";
import { expectValidRun, postRaw, readSse, runInput, silentLogger } from "./helpers/e2e.js";

const SERVICE_KEY = "service-key-7d1";

let upstream: ScriptedA2AServer;
let agent: GatewayMiddleware;
let server: Server;
let url: string;
let root: string;

beforeAll(async () => {
  upstream = await startScriptedA2AServer({ script: createDemoScript({ frameDelayMs: 0 }) });
  root = await mkdtemp(path.join(tmpdir(), "agui-break-embed-"));
  const sessions = new Map<string, string>([["sid-alice", "alice"]]);
  const app = new Koa();
  // The host's session middleware: sets ctx.state.user only for a known session.
  app.use(async (ctx, next) => {
    const userId = sessions.get(ctx.get("x-session"));
    if (userId !== undefined) ctx.state.user = { id: userId };
    await next();
  });
  agent = await createGatewayMiddleware({
    prefix: "/agent",
    a2aUrl: upstream.url,
    allowedRoots: [root],
    logger: silentLogger,
    authenticate: (ctx) => (ctx.get("x-service-key") === SERVICE_KEY ? { kind: "trusted" } : { kind: "user", userId: ctx.state.user?.id }),
  });
  app.use(agent.middleware);
  server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/agent`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
  await agent.close();
  await upstream.close();
  await rm(root, { recursive: true, force: true });
});

describe("an authenticate hook that returns a user without an id", () => {
  it("never makes the session-less visitor the owner of the service's (ownerless) threads", async () => {
    // The trusted service starts carol's thread.
    const carols = runInput(root, { iacCode: { userId: "carol" } });
    const started = await postRaw(url, carols, { "Content-Type": "application/json", "x-service-key": SERVICE_KEY });
    expect(started.status, started.text).toBe(200);
    expectValidRun(readSse(started.text).events);

    // A visitor with no session: the gateway should refuse a caller it cannot tell apart, or at least show it nothing.
    const listed = await fetch(`${url}/threads`);
    const listing = (await listed.json()) as { threads?: { threadId: string }[] };
    expect.soft(listing.threads?.map((t) => t.threadId) ?? [], "the service's threads listed to a session-less visitor").not.toContain(carols.threadId);

    // Nor may it go on with carol's thread (a new turn under her userId, as the trusted service would send it).
    const hijack = await postRaw(url, runInput(root, { threadId: carols.threadId, iacCode: { userId: "carol" } }), { "Content-Type": "application/json" });
    expect.soft(hijack.status, `a session-less visitor ran a turn on carol's thread: ${hijack.text.slice(0, 200)}`).not.toBe(200);

    // Nor forget it.
    const forgot = await fetch(`${url}/threads/${carols.threadId}`, { method: "DELETE" });
    expect(forgot.status, "a session-less visitor deleted carol's thread").not.toBe(204);
  });
});
