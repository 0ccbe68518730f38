// --max-active-runs-per-user: a user's run holds one of the user's slots from admission until its end. A slot is
// renewed while the run goes on, so the slots of a replica that died free themselves after a short while.
import { randomUUID } from "node:crypto";
import { LimitError } from "../errors.js";
import { messageText } from "../i18n/index.js";
import type { UserCounters } from "../state/user-counters.js";
import type { Caller } from "./caller.js";
import { admission } from "./errors.js";

export interface UserRunLimit {
  counters: UserCounters;
  /** Runs one user may have going at once (0: no limit). */
  max: number;
}

export interface RunSlot {
  release(): Promise<void>;
}

const SLOT_TTL_MS = 60_000;
/** When no run can be said to end soon: ask again in a few seconds. */
const RETRY_AFTER_SECONDS = 5;

/** The caller's slot for one run; undefined when no limit applies (no limit set, or not a user). Throws 429 when all are held. */
export async function takeRunSlot(limit: UserRunLimit | undefined, caller: Caller): Promise<RunSlot | undefined> {
  if (!limit || limit.max <= 0 || caller.kind !== "user") return undefined;
  const { counters } = limit;
  const { userId } = caller;
  const runKey = randomUUID();
  let taken: boolean;
  try {
    taken = await counters.takeRunSlot(userId, runKey, limit.max, SLOT_TTL_MS);
  } catch {
    throw admission.stateUnavailable();
  }
  if (!taken) throw new LimitError("USER_RUN_LIMIT", messageText("limits.userRuns"), RETRY_AFTER_SECONDS);
  const renewal = setInterval(() => void counters.renewRunSlot(userId, runKey, SLOT_TTL_MS).catch(() => undefined), SLOT_TTL_MS / 3);
  renewal.unref();
  return {
    release: async () => {
      clearInterval(renewal);
      // Not released (Redis down): the slot expires with its TTL.
      await counters.releaseRunSlot(userId, runKey).catch(() => undefined);
    },
  };
}
