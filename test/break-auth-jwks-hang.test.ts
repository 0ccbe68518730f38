// An issuer whose key-set endpoint stops answering (a black-holed address, a hung proxy) once the cached key set
// has aged. The doc: "When the key set cannot be fetched, the keys fetched before are kept in use". They are — but
// every user request first waits out a whole fetch deadline, one after the other, for as long as the issuer hangs.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { postRaw, startStack } from "./helpers/e2e.js";
import { AUDIENCE, ISSUER, signingKey, tokenFor } from "./helpers/jwks.js";

const FETCH_DEADLINE_MS = 1_500;
const CACHE_MS = 300;

describe("a key-set endpoint that hangs after the cache aged", () => {
  it("pays the fetch deadline at most once, then answers from the kept keys", async () => {
    const key = await signingKey("key-hang");
    let hang = false;
    const hung: ServerResponse[] = [];
    const issuer = createServer((_req: IncomingMessage, res: ServerResponse) => {
      if (hang) return void hung.push(res); // accepted, never answered
      res.writeHead(200, { "Content-Type": "application/jwk-set+json" });
      res.end(JSON.stringify({ keys: [key.publicJwk] }));
    });
    await new Promise<void>((resolve) => issuer.listen(0, "127.0.0.1", resolve));
    const jwksUrl = `http://127.0.0.1:${(issuer.address() as AddressInfo).port}/jwks.json`;
    const stack = await startStack({
      gateway: { jwt: { jwksUrl, issuer: ISSUER, audience: AUDIENCE, jwksCacheMaxAgeMs: CACHE_MS, jwksTimeoutMs: FETCH_DEADLINE_MS } },
    });
    try {
      const headers = { "Content-Type": "application/json", Authorization: `Bearer ${await tokenFor(key, "alice")}` };
      expect((await postRaw(stack.gateway.url, stack.input(), headers)).status).toBe(200);
      hang = true;
      // Let the cached key set age past its max age.
      await new Promise((resolve) => setTimeout(resolve, CACHE_MS + 50));
      const took: number[] = [];
      for (let i = 0; i < 3; i++) {
        const started = Date.now();
        const reply = await postRaw(stack.gateway.url, stack.input(), headers);
        took.push(Date.now() - started);
        expect(reply.status, reply.text).toBe(200);
      }
      const waitedOut = took.filter((ms) => ms >= FETCH_DEADLINE_MS);
      expect(waitedOut.length, `request times (ms) while the issuer hangs: ${took.join(", ")}`).toBeLessThanOrEqual(1);
    } finally {
      for (const res of hung) res.destroy();
      await stack.close();
      await new Promise<void>((resolve) => {
        issuer.close(() => resolve());
        issuer.closeAllConnections();
      });
    }
  });
});
