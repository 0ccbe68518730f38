// Per-user limits: runs one user may have going, and requests per window, on one replica and on two replicas
// sharing Redis (the limit is the user's, whichever replica each request reaches). Other users, the trusted caller
// and the limited user's next run once one ended are untouched.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { localize } from "../src/i18n/index.js";
import type { GatewayOptions } from "../src/gateway.js";
import { expectValidRun, openSse, postRaw, readSse, scriptByPrompt, slowTurn, startStack, type RawReply, type Stack } from "./helpers/e2e.js";
import { AUDIENCE, ISSUER, signingKey, startJwksServer, tokenFor, type JwksServer, type SigningKey } from "./helpers/jwks.js";
import { startRedis, type RedisServer } from "./helpers/redis.js";

const TRUSTED_TOKEN = "runtime-secret-limits";
const SLOW = "stream slowly";

interface Replicas {
  /** Where a user's requests go: A then B (the same gateway twice without Redis). */
  a: Stack<ScriptedA2AServer>;
  b: Stack<ScriptedA2AServer>;
  close(): Promise<void>;
}

async function startReplicas(shared: Partial<GatewayOptions>, jwksUrl: string, redis: RedisServer | undefined): Promise<Replicas> {
  const gateway = { authToken: TRUSTED_TOKEN, jwt: { jwksUrl, issuer: ISSUER, audience: AUDIENCE }, ...shared, ...(redis && { stateStore: redis.url }) };
  const script = scriptByPrompt({ [SLOW]: () => slowTurn("session-limits-1") });
  const a = await startStack({ script, gateway });
  const b = redis ? await startStack({ script, gateway }) : a;
  return {
    a,
    b,
    close: async () => {
      if (b !== a) await b.close();
      await a.close();
    },
  };
}

describe.each([["one replica", false], ["two replicas sharing Redis", true]] as const)("per-user limits on %s", (_name, withRedis) => {
  let key: SigningKey;
  let jwks: JwksServer;
  let redis: RedisServer | undefined;
  let runs: Replicas;
  let requests: Replicas;
  const as = async (user: string, extra: Record<string, string> = {}) => ({ "Content-Type": "application/json", Authorization: `Bearer ${await tokenFor(key, user)}`, ...extra });

  beforeAll(async () => {
    key = await signingKey("limits");
    jwks = await startJwksServer([key]);
    redis = withRedis ? await startRedis() : undefined;
    runs = await startReplicas({ maxActiveRunsPerUser: 1 }, jwks.url, redis);
    requests = await startReplicas({ userRequestLimit: 3, userRequestIntervalSeconds: 60 }, jwks.url, redis);
  });
  afterAll(async () => {
    await runs.close();
    await requests.close();
    await redis?.stop();
    await jwks.close();
  });

  it("refuses a user's second run while the first goes on (429 USER_RUN_LIMIT), and admits it once the first ended", async () => {
    const first = runs.a.input({ prompt: SLOW });
    const live = await openSse(runs.a.gateway.url, first, await as("alice"));
    await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");

    const second = runs.b.input();
    const refused: RawReply = await postRaw(runs.b.gateway.url, second, await as("alice", { "Accept-Language": "es" }));
    expect(refused.status, refused.text).toBe(429);
    expect(refused.json).toEqual({ error: { code: "USER_RUN_LIMIT", message: localize("es", "This user already has as many runs going as allowed. Retry once one of them has ended.") } });
    expect(refused.headers.get("retry-after")).toBe("5");
    // Others are not limited by alice's runs.
    expect((await postRaw(runs.b.gateway.url, runs.b.input(), await as("bob"))).status).toBe(200);
    expect((await postRaw(runs.b.gateway.url, runs.b.input(), { "Content-Type": "application/json", Authorization: `Bearer ${TRUSTED_TOKEN}` })).status).toBe(200);

    live.abort();
    await live.rest();
    // The slot is given back when the run's end has settled, a moment after its stream closed; the refused request
    // kept nothing, so the very same request (its run id) is admitted now.
    let reply = await postRaw(runs.b.gateway.url, second, await as("alice"));
    for (let i = 0; i < 200 && reply.status === 429; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      reply = await postRaw(runs.b.gateway.url, second, await as("alice"));
    }
    expect(reply.status, reply.text).toBe(200);
    expectValidRun(readSse(reply.text).events);
  });

  it("refuses a user's requests over the limit in the window (429 USER_RATE_LIMITED with Retry-After), wherever they land", async () => {
    const targets = [requests.a, requests.b, requests.a];
    for (const stack of targets) expect((await fetch(`${stack.gateway.url}threads`, { headers: await as("rita") })).status).toBe(200);
    const over = await fetch(`${requests.b.gateway.url}threads`, { headers: await as("rita") });
    expect(over.status).toBe(429);
    expect(await over.json()).toEqual({ error: { code: "USER_RATE_LIMITED", message: "Too many requests from this user. Retry after the time in Retry-After." } });
    const retryAfter = Number(over.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // A run request counts the same and is refused before anything is admitted.
    expect((await postRaw(requests.a.gateway.url, requests.a.input(), await as("rita"))).status).toBe(429);
    expect((await fetch(`${requests.b.gateway.url}threads`, { headers: await as("sam") })).status).toBe(200);
    expect((await fetch(`${requests.b.gateway.url}capabilities`, { headers: { Authorization: `Bearer ${TRUSTED_TOKEN}` } })).status).toBe(200);
  });
});
