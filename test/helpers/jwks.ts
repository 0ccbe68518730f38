// A real issuer for the auth tests: a JWKS endpoint on 127.0.0.1 whose keys a test rotates or takes down, and
// ES256 keys generated per test that sign tokens. No vitest here.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { SignJWT, exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTPayload } from "jose";

export const ISSUER = "https://issuer.test/";
export const AUDIENCE = "agui-gateway-test";

export interface SigningKey {
  kid: string;
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
  publicJwk: JWK;
  publicPem: string;
}

export async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" }, publicPem: await exportSPKI(publicKey) };
}

/** A token for `sub` from the test issuer, valid for five minutes unless `claims` or `edit` say otherwise. */
export function tokenFor(key: SigningKey, sub: string, claims: JWTPayload = {}, edit?: (jwt: SignJWT) => SignJWT): Promise<string> {
  const jwt = new SignJWT({ sub, ...claims }).setProtectedHeader({ alg: "ES256", kid: key.kid }).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt().setExpirationTime("5m");
  return (edit ? edit(jwt) : jwt).sign(key.privateKey);
}

export interface JwksServer {
  url: string;
  /** How many times the key set was fetched. */
  fetches: number;
  publish(keys: readonly SigningKey[]): void;
  /** While down, every connection is cut before an answer. */
  setDown(down: boolean): void;
  close(): Promise<void>;
}

export async function startJwksServer(keys: readonly SigningKey[]): Promise<JwksServer> {
  let published = keys.map((k) => k.publicJwk);
  let down = false;
  const state = { fetches: 0 };
  const server: Server = createServer((req, res) => {
    if (down) {
      req.socket.destroy();
      return;
    }
    state.fetches++;
    res.writeHead(200, { "Content-Type": "application/jwk-set+json" });
    res.end(JSON.stringify({ keys: published }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/jwks.json`,
    get fetches() {
      return state.fetches;
    },
    publish: (next) => void (published = next.map((k) => k.publicJwk)),
    setDown: (value) => void (down = value),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** `header.payload.` with no signature: the `alg: none` token. */
export function unsignedToken(payload: JWTPayload, header: Record<string, unknown> = { alg: "none" }): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `${part(header)}.${part(payload)}.`;
}
