// Who is asking: one middleware puts one Caller on ctx.state, from the configured bearer checks or from an
// embedder's own authenticate(ctx). The static token is the trusted server-side caller; a JWT is a user.
import { createHash, timingSafeEqual } from "node:crypto";
import type { Context, Next } from "koa";
import { ANONYMOUS, TRUSTED, type Caller } from "../runs/caller.js";
import { httpErrors } from "./errors.js";
import { MAX_BEARER_BYTES, type JwtVerifier } from "./jwt.js";

export type { Caller } from "../runs/caller.js";

/** Resolves the request's caller, or throws (a GatewayError: 401, 403 or 503 with the localized envelope). */
export type Authenticate = (ctx: Context) => Caller | Promise<Caller>;

export interface BuiltInAuth {
  /** The static bearer token (IAC_CODE_AGUI_AUTH_TOKEN): whoever presents it is trusted. */
  authToken?: string;
  /** Users' JWTs. */
  verifyJwt?: JwtVerifier;
}

/** The gateway's own checks: no auth configured → anonymous; the static token → trusted; a valid JWT → its user. */
export function builtInAuthenticate(options: BuiltInAuth): Authenticate {
  const expected = options.authToken ? digestOf(options.authToken) : undefined;
  const verifyJwt = options.verifyJwt;
  if (!expected && !verifyJwt) return () => ANONYMOUS;
  return async (ctx) => {
    const presented = bearerOf(ctx.get("Authorization"));
    if (presented === undefined) throw httpErrors.unauthorized();
    if (Buffer.byteLength(presented, "utf8") > MAX_BEARER_BYTES) throw httpErrors.unauthorized();
    // Compare digests: equal length always, so the comparison time says nothing about the token.
    if (expected && timingSafeEqual(digestOf(presented), expected)) return TRUSTED;
    if (!verifyJwt) throw httpErrors.unauthorized();
    return { kind: "user", userId: await verifyJwt(presented) };
  };
}

function isCaller(caller: unknown): caller is Caller {
  const { kind, userId } = (caller ?? {}) as { kind?: unknown; userId?: unknown };
  if (kind === "trusted" || kind === "anonymous") return true;
  return kind === "user" && typeof userId === "string" && userId !== "";
}

/** Sets ctx.state.caller for the routes behind it. */
export function identify(authenticate: Authenticate) {
  return async (ctx: Context, next: Next) => {
    const caller = await authenticate(ctx);
    // An embedder's hook that names no one (a user without an id, an unknown kind) lets no one in.
    if (!isCaller(caller)) throw httpErrors.unauthorized();
    ctx.state.caller = caller;
    await next();
  };
}

/**
 * RFC 6750 §3: a 401 says how to authenticate; `invalid_token` when a token was presented and refused. Set by the
 * error envelope for every 401, the embedder's included.
 */
export function wwwAuthenticate(ctx: Context): string {
  return bearerOf(ctx.get("Authorization")) === undefined ? 'Bearer realm="agui-gateway"' : 'Bearer realm="agui-gateway", error="invalid_token"';
}

function bearerOf(header: string): string | undefined {
  const space = header.indexOf(" ");
  if (space < 0 || header.slice(0, space).toLowerCase() !== "bearer") return undefined;
  const token = header.slice(space + 1);
  return token === "" ? undefined : token;
}

function digestOf(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}
