// End users' bearer tokens: JWTs verified with jose against a remote key set (JWKS) or one public key. The
// issuer, the audience, an algorithm allow-list (asymmetric only) and a clock tolerance are checked; the user is
// one claim of the verified token. Nothing here logs or keeps a token.
import { createPublicKey, type KeyObject } from "node:crypto";
import { createLocalJWKSet, createRemoteJWKSet, errors, jwtVerify, type JWTVerifyGetKey } from "jose";
import { GatewayError } from "../errors.js";
import { messageText } from "../i18n/index.js";
import { ASYMMETRIC_ALGORITHMS } from "../jwt-algorithms.js";

/** Longer bearer tokens are refused before any parsing or crypto (real ID and access tokens are a few KiB). */
export const MAX_BEARER_BYTES = 8 * 1024;
/** A user id longer than this (in code points) is refused, like every other id the gateway keeps. */
export const MAX_USER_ID_CODE_POINTS = 256;

export interface JwtOptions {
  /** The issuer's JWKS: fetched on first use, cached, fetched again for a `kid` it does not know. */
  jwksUrl?: string;
  /** Or one PEM public key (SPKI or an X.509 certificate). */
  publicKeyPem?: string;
  issuer: string;
  audience: string;
  /** Default: every asymmetric algorithm. */
  algorithms?: readonly string[];
  clockToleranceSeconds?: number;
  /** The claim that names the user (default `sub`). */
  userClaim?: string;
  /** Least time between two fetches of the key set for unknown `kid`s (default 30 s, jose's). */
  jwksCooldownMs?: number;
  /** How long a fetched key set is used before it is fetched again (default 10 min, jose's). */
  jwksCacheMaxAgeMs?: number;
  /** Deadline for one key-set fetch (default 5 s). */
  jwksTimeoutMs?: number;
}

/** The verified user's id; throws the 401 or 503 GatewayError a refused token gets. */
export type JwtVerifier = (token: string) => Promise<string>;

export const authErrors = {
  invalidToken: () => new GatewayError(401, "UNAUTHORIZED", messageText("auth.invalidToken")),
  keySetUnavailable: () => new GatewayError(503, "AUTH_UNAVAILABLE", messageText("auth.keySetUnavailable")),
};

/** The key set could not be fetched and none was fetched before: fail closed. */
class KeySetUnavailable extends Error {}

export function createJwtVerifier(options: JwtOptions, onRefusal?: (reason: string) => void): JwtVerifier {
  const key = options.jwksUrl !== undefined ? remoteKeys(options) : publicKey(options.publicKeyPem);
  const algorithms = [...(options.algorithms ?? ASYMMETRIC_ALGORITHMS)];
  const userClaim = options.userClaim ?? "sub";
  return async (token) => {
    if (Buffer.byteLength(token, "utf8") > MAX_BEARER_BYTES) {
      onRefusal?.("token too large");
      throw authErrors.invalidToken();
    }
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, key as JWTVerifyGetKey, {
        issuer: options.issuer,
        audience: options.audience,
        algorithms,
        clockTolerance: options.clockToleranceSeconds ?? 30,
        requiredClaims: ["exp"],
      }));
    } catch (error) {
      if (error instanceof KeySetUnavailable) {
        onRefusal?.(`key set unavailable: ${String(error.cause)}`);
        throw authErrors.keySetUnavailable();
      }
      // jose's own codes say why (expired, wrong audience, bad signature …); never the token itself.
      onRefusal?.(error instanceof errors.JOSEError ? error.code : "malformed token");
      throw authErrors.invalidToken();
    }
    const userId = payload[userClaim];
    if (typeof userId !== "string" || userId === "" || [...userId].length > MAX_USER_ID_CODE_POINTS) {
      onRefusal?.(`claim ${userClaim} is not a user id`);
      throw authErrors.invalidToken();
    }
    return userId;
  };
}

function publicKey(pem: string | undefined): KeyObject {
  if (pem === undefined) throw new Error("a JWT verifier needs jwksUrl or publicKeyPem");
  const key = createPublicKey(pem);
  if (key.type !== "public") throw new Error("the JWT key is not a public key");
  return key;
}

/**
 * jose's remote key set, except that a fetch that fails leaves the keys fetched before in use (a stale cache
 * beats refusing every user while the issuer is down); with nothing fetched yet it fails closed.
 */
function remoteKeys(options: JwtOptions): JWTVerifyGetKey {
  const remote = createRemoteJWKSet(new URL(options.jwksUrl!), {
    ...(options.jwksCooldownMs !== undefined && { cooldownDuration: options.jwksCooldownMs }),
    ...(options.jwksCacheMaxAgeMs !== undefined && { cacheMaxAge: options.jwksCacheMaxAgeMs }),
    timeoutDuration: options.jwksTimeoutMs ?? 5_000,
  });
  // After a failed fetch the kept keys answer alone for a while: jose would fetch again for every token, and an issuer
  // that hangs would add its whole fetch deadline to every user request.
  const retryAfterFailureMs = options.jwksCooldownMs ?? 30_000;
  let failedAt: number | undefined;
  return async (header, token) => {
    const cached = remote.jwks();
    if (cached !== undefined && failedAt !== undefined && Date.now() - failedAt < retryAfterFailureMs) {
      return createLocalJWKSet(cached)(header, token);
    }
    try {
      const key = await remote(header, token);
      failedAt = undefined;
      return key;
    } catch (error) {
      if (!isFetchFailure(error)) throw error;
      failedAt = Date.now();
      const kept = remote.jwks();
      if (kept === undefined) throw new KeySetUnavailable("no key set fetched yet", { cause: error });
      return createLocalJWKSet(kept)(header, token);
    }
  };
}

/** Errors of fetching the key set, as opposed to a key set that has no key for this token. */
function isFetchFailure(error: unknown): boolean {
  if (!(error instanceof errors.JOSEError)) return true;
  return error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid || error.code === "ERR_JOSE_GENERIC";
}
