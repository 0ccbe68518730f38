// --user-request-limit: every request of a user counts in the user's current window, on every replica together.
// Trusted and anonymous callers are not limited here (the body budget and connection cap still apply).
import type { Context, Next } from "koa";
import { LimitError } from "../errors.js";
import { messageText } from "../i18n/index.js";
import { admission } from "../runs/errors.js";
import type { Caller } from "../runs/caller.js";
import type { UserCounters } from "../state/user-counters.js";

export interface UserRequestLimit {
  counters: UserCounters;
  /** Requests per window (0: no limit). */
  limit: number;
  windowMs: number;
}

export function limitUserRequests(options: UserRequestLimit | undefined) {
  return async (ctx: Context, next: Next) => {
    const caller = ctx.state.caller as Caller | undefined;
    if (options && options.limit > 0 && caller?.kind === "user") {
      let hit: { count: number; resetMs: number };
      try {
        hit = await options.counters.hit(caller.userId, options.windowMs);
      } catch {
        throw admission.stateUnavailable();
      }
      if (hit.count > options.limit) throw new LimitError("USER_RATE_LIMITED", messageText("limits.userRequests"), Math.max(1, Math.ceil(hit.resetMs / 1000)));
    }
    await next();
  };
}
