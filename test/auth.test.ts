// Users with JWTs against a real issuer (a JWKS endpoint on 127.0.0.1, keys generated per test), hostile tokens
// first; then two users on one thread on every route. The static token stays the trusted server-side caller.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contextIdForThread } from "../src/a2a/index.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { localize } from "../src/i18n/index.js";
import type { JwtOptions } from "../src/http/jwt.js";
import { FileThreadStore } from "../src/state/file-store.js";
import { expectValidRun, openSse, postRaw, readSse, scriptByPrompt, sessionEventOf, slowTurn, startStack, type RawReply, type Stack } from "./helpers/e2e.js";
import { httpCall } from "./helpers/http.js";
import { AUDIENCE, ISSUER, signingKey, startJwksServer, tokenFor, unsignedToken, type JwksServer, type SigningKey } from "./helpers/jwks.js";
import { SignJWT } from "jose";

const TRUSTED_TOKEN = "runtime-secret-3f9";
const SLOW = "stream slowly";
/** The same iac-code session as SLOW, so a thread can go on after a SLOW run. */
const QUICK = "answer quickly";

function refusal(reply: RawReply, status: number, code: string): string {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get("content-type")).toMatch(/^application\/json/);
  expect(Object.keys(reply.json ?? {})).toEqual(["error"]);
  expect(reply.json.error.code).toBe(code);
  expect(reply.json.error.message).toEqual(expect.any(String));
  return reply.json.error.message as string;
}

function expectRun(reply: RawReply): void {
  expect(reply.status, reply.text).toBe(200);
  const { events } = readSse(reply.text);
  expectValidRun(events);
  expect(events.at(-1)?.type, JSON.stringify(events.at(-1))).toBe("RUN_FINISHED");
}

const bearer = (token: string, extra: Record<string, string> = {}) => ({ "Content-Type": "application/json", Authorization: `Bearer ${token}`, ...extra });

interface AuthStack {
  stack: Stack<ScriptedA2AServer>;
  store: FileThreadStore;
  stateDir: string;
  close(): Promise<void>;
}

async function startAuthStack(jwt: JwtOptions): Promise<AuthStack> {
  const stateDir = await mkdtemp(path.join(tmpdir(), "agui-auth-"));
  const stack = await startStack({
    script: scriptByPrompt({ [SLOW]: () => slowTurn("session-auth-1"), [QUICK]: () => slowTurn("session-auth-1", 1, 0) }),
    gateway: { authToken: TRUSTED_TOKEN, stateDir, jwt },
  });
  return {
    stack,
    stateDir,
    store: new FileThreadStore({ dir: stateDir }),
    close: async () => {
      await stack.close();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

function userIdsSentFor(upstream: ScriptedA2AServer, threadId: string): unknown[] {
  return upstream.requests
    .filter((r) => r.method === "SendStreamingMessage")
    .map((r) => (r.params as { message: { contextId?: string; metadata?: { iac_code?: { user_id?: unknown } } } }).message)
    .filter((m) => m.contextId === contextIdForThread(threadId))
    .map((m) => m.metadata?.iac_code?.user_id);
}

describe("user tokens verified against a JWKS", () => {
  let key: SigningKey;
  let jwks: JwksServer;
  let env: AuthStack;
  const post = (body: unknown, headers: Record<string, string>) => postRaw(env.stack.gateway.url, body, headers);

  beforeAll(async () => {
    key = await signingKey("key-1");
    jwks = await startJwksServer([key]);
    env = await startAuthStack({ jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE, jwksCooldownMs: 0 });
  });
  afterAll(async () => {
    await env.close();
    await jwks.close();
  });

  it("runs a verified user's turn: the user owns the thread and its id reaches the kernel", async () => {
    const input = env.stack.input();
    expectRun(await post(input, bearer(await tokenFor(key, "alice"))));
    expect(await env.store.load(input.threadId)).toMatchObject({ owner: "alice", userId: "alice" });
    expect(userIdsSentFor(env.stack.upstream, input.threadId)).toEqual(["alice"]);
  });

  const hostile: [string, (k: SigningKey) => Promise<string>][] = [
    ["an expired token", (k) => tokenFor(k, "alice", {}, (jwt) => jwt.setExpirationTime(Math.floor(Date.now() / 1000) - 120))],
    ["a token not yet valid", (k) => tokenFor(k, "alice", {}, (jwt) => jwt.setNotBefore(Math.floor(Date.now() / 1000) + 120))],
    ["a token without exp", (k) => new SignJWT({ sub: "alice" }).setProtectedHeader({ alg: "ES256", kid: k.kid }).setIssuer(ISSUER).setAudience(AUDIENCE).sign(k.privateKey)],
    ["another issuer's token", (k) => tokenFor(k, "alice", {}, (jwt) => jwt.setIssuer("https://evil.test/"))],
    ["a token for another audience", (k) => tokenFor(k, "alice", {}, (jwt) => jwt.setAudience("another-app"))],
    ["alg: none", async (k) => unsignedToken({ sub: "alice", iss: ISSUER, aud: AUDIENCE, exp: Math.floor(Date.now() / 1000) + 300 }, { alg: "none", kid: k.kid })],
    [
      "HS256 signed with the public key as the secret",
      (k) =>
        new SignJWT({ sub: "alice" }).setProtectedHeader({ alg: "HS256", kid: k.kid }).setIssuer(ISSUER).setAudience(AUDIENCE).setExpirationTime("5m")
          .sign(new TextEncoder().encode(k.publicPem)),
    ],
    ["a forged signature under a known kid", async (k) => tokenFor({ ...(await signingKey(k.kid)) }, "alice")],
    ["a token whose user claim is empty", (k) => tokenFor(k, "")],
    ["a user id of 300 characters", (k) => tokenFor(k, "u".repeat(300))],
    ["three dots of garbage", async () => "a.b.c"],
  ];

  it.each(hostile)("refuses %s with 401 invalid_token, creating nothing", async (_name, make) => {
    const input = env.stack.input();
    const reply = await post(input, bearer(await make(key), { "Accept-Language": "de" }));
    expect(refusal(reply, 401, "UNAUTHORIZED")).toBe(localize("de", "The bearer token is invalid, expired or not meant for this gateway."));
    expect(reply.headers.get("www-authenticate")).toBe('Bearer realm="agui-gateway", error="invalid_token"');
    expect(await env.store.load(input.threadId)).toBeUndefined();
    expect(userIdsSentFor(env.stack.upstream, input.threadId)).toEqual([]);
  });

  it("asks for a token when none is sent (no error code in the challenge)", async () => {
    const reply = await post(env.stack.input(), { "Content-Type": "application/json" });
    refusal(reply, 401, "UNAUTHORIZED");
    expect(reply.headers.get("www-authenticate")).toBe('Bearer realm="agui-gateway"');
  });

  it("allows the clock tolerance: a token expired 10 s ago still runs", async () => {
    expectRun(await post(env.stack.input(), bearer(await tokenFor(key, "alice", {}, (jwt) => jwt.setExpirationTime(Math.floor(Date.now() / 1000) - 10)))));
  });

  it("refuses a token over 8 KiB before any crypto or key fetch", async () => {
    const before = jwks.fetches;
    const padded = await tokenFor(key, "alice", { pad: "x".repeat(9 * 1024) });
    refusal(await post(env.stack.input(), bearer(padded)), 401, "UNAUTHORIZED");
    expect(jwks.fetches).toBe(before);
  });

  it("refuses a token of 1 MB with the JSON envelope (431: over Node's header limit, before the gateway reads it)", async () => {
    const before = jwks.fetches;
    const huge = `${await tokenFor(key, "alice")}${"A".repeat(1024 * 1024)}`;
    const reply = await httpCall(env.stack.gateway.url, { headers: bearer(huge), body: JSON.stringify(env.stack.input()) });
    expect(reply.status).toBe(431);
    expect(reply.json).toEqual({ error: { code: "REQUEST_HEADERS_TOO_LARGE", message: "The request headers are too large." } });
    expect(jwks.fetches).toBe(before);
    // The gateway serves on.
    expectRun(await post(env.stack.input(), bearer(await tokenFor(key, "alice"))));
  });

  it("refuses an unknown kid, then accepts the same kid once the issuer publishes it (rotation)", async () => {
    const rotated = await signingKey("key-2");
    const token = await tokenFor(rotated, "alice");
    const before = jwks.fetches;
    refusal(await post(env.stack.input(), bearer(token)), 401, "UNAUTHORIZED");
    // The unknown kid made the gateway fetch the key set again (jose's createRemoteJWKSet).
    expect(jwks.fetches).toBeGreaterThan(before);
    jwks.publish([key, rotated]);
    expectRun(await post(env.stack.input(), bearer(token)));
  });

  it("refuses a body that names another user (403), fills in the token's user when absent", async () => {
    const token = await tokenFor(key, "alice");
    const input = env.stack.input({ iacCode: { userId: "mallory" } });
    const message = refusal(await post(input, bearer(token)), 403, "USER_ID_MISMATCH");
    expect(message).toContain("forwardedProps.iacCode.userId");
    expect(await env.store.load(input.threadId)).toBeUndefined();
    const same = env.stack.input({ iacCode: { userId: "alice" } });
    expectRun(await post(same, bearer(token)));
    expect(userIdsSentFor(env.stack.upstream, same.threadId)).toEqual(["alice"]);
  });

  it("keeps the static token as the trusted caller: no owner, any userId", async () => {
    const input = env.stack.input({ iacCode: { userId: "someone" } });
    expectRun(await post(input, bearer(TRUSTED_TOKEN)));
    const record = await env.store.load(input.threadId);
    expect(record?.userId).toBe("someone");
    expect(record?.owner).toBeUndefined();
  });

  describe("two users on one thread", () => {
    const cancelUrl = (executionId: string) => `${env.stack.gateway.url}extensions/iac-code/v1/executions/${executionId}/cancel`;
    const subscribeUrl = (executionId: string) => `${env.stack.gateway.url}extensions/iac-code/v1/executions/${executionId}/subscribe`;

    it("refuses the stranger on every route as if the thread did not exist; nothing changes for the owner", async () => {
      const alice = bearer(await tokenFor(key, "alice"));
      const bob = bearer(await tokenFor(key, "bob"));
      const input = env.stack.input({ prompt: SLOW });
      const live = await openSse(env.stack.gateway.url, input, alice);
      expect(live.status).toBe(200);
      await live.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
      const { executionId } = sessionEventOf(live.events) as { executionId: string };
      const ids = { threadId: input.threadId, rosInvocationId: "invocation-1" };

      // POST /: the thread is taken, whatever else the request says (its own run id: not DUPLICATE_RUN_ID).
      refusal(await post(env.stack.input({ threadId: input.threadId }), bob), 409, "THREAD_BINDING_CONFLICT");
      refusal(await post(input, bob), 409, "THREAD_BINDING_CONFLICT");
      refusal(await post({ ...input, runId: "bob-run", resume: [{ interruptId: "x", status: "resolved", payload: {} }] }, bob), 409, "THREAD_BINDING_CONFLICT");
      // A reconnect to the owner's run (Last-Event-ID) is answered as one to a run that never was.
      const rejoined = await post(input, { ...bob, "Last-Event-ID": `${input.runId}:1` });
      const fresh = env.stack.input();
      const neverRan = await post(fresh, { ...bob, "Last-Event-ID": `${fresh.runId}:1` });
      refusal(rejoined, 400, "INVALID_LAST_EVENT_ID");
      expect(rejoined.json).toEqual(neverRan.json);

      // Cancel and observe: the same answer as for an execution that never existed.
      const cancelled = await postRaw(cancelUrl(executionId), ids, bob);
      const nowhere = await postRaw(cancelUrl("no-such-execution"), { ...ids, threadId: "no-such-thread" }, bob);
      refusal(cancelled, 404, "EXECUTION_NOT_FOUND");
      expect(cancelled.json).toEqual(nowhere.json);
      const observed = await postRaw(subscribeUrl(executionId), { ...ids, runId: input.runId }, bob);
      const unseen = await postRaw(subscribeUrl("no-such-execution"), { ...ids, threadId: "no-such-thread", runId: input.runId }, bob);
      refusal(observed, 404, "EXECUTION_NOT_FOUND");
      expect(observed.json).toEqual(unseen.json);

      // The owner's run went on untouched; the owner may observe and cancel it.
      expect(live.events.some((e) => e.type === "RUN_ERROR" || e.type === "RUN_FINISHED")).toBe(false);
      const observer = await openSse(subscribeUrl(executionId), { ...ids, runId: input.runId }, alice);
      expect(observer.status).toBe(200);
      observer.abort();
      const cancel = await postRaw(cancelUrl(executionId), ids, alice);
      expect(cancel.status, cancel.text).toBe(200);
      expect(cancel.json).toEqual({ executionId, status: "cancelled" });
      expectValidRun(await live.rest());
      expectRun(await post(env.stack.input({ threadId: input.threadId, prompt: QUICK }), alice));
    });

    it("lets the trusted caller act on a user's thread", async () => {
      const input = env.stack.input();
      expectRun(await post(input, bearer(await tokenFor(key, "carol"))));
      expectRun(await post(env.stack.input({ threadId: input.threadId, iacCode: { userId: "carol" } }), bearer(TRUSTED_TOKEN)));
      expect((await env.store.load(input.threadId))?.owner).toBe("carol");
    });
  });
});

describe("the key set unreachable", () => {
  it("fails closed with 503 AUTH_UNAVAILABLE until keys were fetched once, then keeps using them", async () => {
    const key = await signingKey("key-down");
    const jwks = await startJwksServer([key]);
    // cacheMaxAge 0: every request fetches again, so every request below meets the key set as it is now.
    const env = await startAuthStack({ jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE, jwksCooldownMs: 0, jwksCacheMaxAgeMs: 0 });
    try {
      const post = (body: unknown, headers: Record<string, string>) => postRaw(env.stack.gateway.url, body, headers);
      const token = await tokenFor(key, "alice");
      jwks.setDown(true);
      const input = env.stack.input();
      const reply = await post(input, bearer(token, { "Accept-Language": "ja" }));
      expect(refusal(reply, 503, "AUTH_UNAVAILABLE")).toBe(localize("ja", "The keys that verify bearer tokens cannot be fetched right now. Retry shortly."));
      expect(reply.headers.get("retry-after")).toBe("5");
      expect(await env.store.load(input.threadId)).toBeUndefined();
      // The trusted caller needs no key set.
      expectRun(await post(env.stack.input(), bearer(TRUSTED_TOKEN)));

      jwks.setDown(false);
      expectRun(await post(env.stack.input(), bearer(token)));
      jwks.setDown(true);
      // The issuer is down again: the keys fetched before still verify, an unknown kid is still a bad token.
      expectRun(await post(env.stack.input(), bearer(token)));
      refusal(await post(env.stack.input(), bearer(await tokenFor(await signingKey("key-new"), "alice"))), 401, "UNAUTHORIZED");
    } finally {
      await env.close();
      await jwks.close();
    }
  });
});

describe("user tokens verified with a PEM public key", () => {
  it("accepts the key's tokens only; the public key used as an HMAC secret is refused", async () => {
    const key = await signingKey("pem");
    const env = await startAuthStack({ publicKeyPem: key.publicPem, issuer: ISSUER, audience: AUDIENCE });
    try {
      const post = (token: string) => postRaw(env.stack.gateway.url, env.stack.input(), bearer(token));
      expectRun(await post(await tokenFor(key, "alice")));
      const hmac = await new SignJWT({ sub: "alice" }).setProtectedHeader({ alg: "HS256" }).setIssuer(ISSUER).setAudience(AUDIENCE).setExpirationTime("5m")
        .sign(new TextEncoder().encode(key.publicPem));
      refusal(await post(hmac), 401, "UNAUTHORIZED");
      refusal(await post(await tokenFor(await signingKey("other"), "alice")), 401, "UNAUTHORIZED");
    } finally {
      await env.close();
    }
  });
});
