import { GatewayError } from "../errors.js";
import { messageText } from "../i18n/index.js";
import type { RunRequest } from "./input.js";

// Who is asking, as the HTTP edge (or an embedder's authenticate hook) established it once per request. The run
// layer decides with it which threads a request may touch; it never sees a token.
export type Caller =
  /** The static bearer token: a server-side caller (a CopilotKit runtime) that acts for any user. */
  | { kind: "trusted" }
  /** A verified end user: owns the threads it creates and sees no other. */
  | { kind: "user"; userId: string }
  /** No auth configured: everything behaves as it did before users existed. */
  | { kind: "anonymous" };

export const ANONYMOUS: Caller = { kind: "anonymous" };
export const TRUSTED: Caller = { kind: "trusted" };

/** The owner a thread created by this caller gets (only users own threads). */
export function ownerOf(caller: Caller): string | undefined {
  return caller.kind === "user" ? caller.userId : undefined;
}

/** The caller's user id for log lines, when there is one. */
export function callerLogFields(caller: Caller): { userId?: string } {
  return caller.kind === "user" ? { userId: caller.userId } : {};
}

/**
 * A user's run carries its own id to the kernel: `iacCode.userId` must be the verified user's when given, and is
 * filled in from the token when not. Other callers' requests are taken as they are.
 */
export function withCallerUserId(request: RunRequest, caller: Caller): RunRequest {
  if (caller.kind !== "user") return request;
  const claimed = request.iacCode.userId;
  if (claimed !== undefined && claimed !== caller.userId) {
    throw new GatewayError(403, "USER_ID_MISMATCH", messageText("auth.userIdMismatch"), { field: "forwardedProps.iacCode.userId" });
  }
  return { ...request, iacCode: { ...request.iacCode, userId: caller.userId } };
}
