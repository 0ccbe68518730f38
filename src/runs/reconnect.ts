// A client that lost a run's stream asks for the rest of it (Last-Event-ID on the same POST /): the run must be
// one of the thread's, the thread the caller's, and the request the one that started the run. Nothing is changed.
import { runDigestOf } from "../state/windows.js";
import type { Caller } from "./caller.js";
import type { RunDeps } from "./run-context.js";
import { mayUse } from "./transitions.js";

export interface Rejoin {
  threadId: string;
  runId: string;
  /** sha256 of the request body (runDigest): a reconnect repeats the request as it was. */
  digest: string;
  caller: Caller;
}

/**
 * Whether the run may be rejoined: "unknown" when the thread (as far as the caller may know) never ran it, "reused"
 * when its id now names another request's run (a resume that reused it: only the first run's kept events, if any,
 * answer this body).
 */
export async function confirmRejoin(deps: RunDeps, rejoin: Rejoin): Promise<"ok" | "unknown" | "reused"> {
  const record = await deps.threads.read(rejoin.threadId);
  const seen = record && mayUse(rejoin.caller, record) ? runDigestOf(record, rejoin.runId) : undefined;
  if (seen === undefined) return "unknown";
  return seen === rejoin.digest ? "ok" : "reused";
}
