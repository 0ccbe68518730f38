// Per-user counters behind the per-user limits: requests in the current window, and the runs a user has going.
// In memory for one replica; in Redis, shared by every replica of the same store (each step one script, so two
// replicas can never both take the last slot).
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";

export interface UserCounters {
  /** Counts one request in the user's current `windowMs` window: the count so far and the ms until it resets. */
  hit(userId: string, windowMs: number): Promise<{ count: number; resetMs: number }>;
  /** Takes one of the user's `max` run slots for `runKey`, held for `ttlMs` unless renewed; false when all are held. */
  takeRunSlot(userId: string, runKey: string, max: number, ttlMs: number): Promise<boolean>;
  renewRunSlot(userId: string, runKey: string, ttlMs: number): Promise<void>;
  releaseRunSlot(userId: string, runKey: string): Promise<void>;
}

export class MemoryUserCounters implements UserCounters {
  private readonly windows = new Map<string, { endsAt: number; count: number }>();
  private readonly slots = new Map<string, Map<string, number>>();

  async hit(userId: string, windowMs: number): Promise<{ count: number; resetMs: number }> {
    const now = Date.now();
    // Ended windows go as new ones come: the map holds the users seen within one window.
    if (this.windows.size > 10_000) for (const [id, w] of this.windows) if (w.endsAt <= now) this.windows.delete(id);
    let window = this.windows.get(userId);
    if (!window || window.endsAt <= now) {
      window = { endsAt: now + windowMs, count: 0 };
      this.windows.set(userId, window);
    }
    window.count++;
    return { count: window.count, resetMs: window.endsAt - now };
  }

  async takeRunSlot(userId: string, runKey: string, max: number, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const held = this.slots.get(userId) ?? new Map<string, number>();
    for (const [key, expiresAt] of held) if (expiresAt <= now) held.delete(key);
    if (held.size >= max) return false;
    held.set(runKey, now + ttlMs);
    this.slots.set(userId, held);
    return true;
  }

  async renewRunSlot(userId: string, runKey: string, ttlMs: number): Promise<void> {
    const held = this.slots.get(userId);
    if (held?.has(runKey)) held.set(runKey, Date.now() + ttlMs);
  }

  async releaseRunSlot(userId: string, runKey: string): Promise<void> {
    const held = this.slots.get(userId);
    held?.delete(runKey);
    if (held?.size === 0) this.slots.delete(userId);
  }
}

// KEYS: window counter. ARGV: window ms. Returns {count, ms left}.
const HIT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local left = redis.call('PTTL', KEYS[1])
if left < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) left = tonumber(ARGV[1]) end
return {count, left}
`;

// KEYS: the user's run slots (a sorted set scored by expiry). ARGV: run key, max, now ms, ttl ms. Returns 1 when taken.
const TAKE_SLOT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`;

export class RedisUserCounters implements UserCounters {
  constructor(
    private readonly client: Redis,
    private readonly prefix: string,
  ) {}

  async hit(userId: string, windowMs: number): Promise<{ count: number; resetMs: number }> {
    const [count, left] = (await this.client.eval(HIT, 1, this.key("requests", userId), String(windowMs))) as [number, number];
    return { count: Number(count), resetMs: Number(left) };
  }

  async takeRunSlot(userId: string, runKey: string, max: number, ttlMs: number): Promise<boolean> {
    const reply = await this.client.eval(TAKE_SLOT, 1, this.key("runs", userId), runKey, String(max), String(Date.now()), String(ttlMs));
    return Number(reply) === 1;
  }

  async renewRunSlot(userId: string, runKey: string, ttlMs: number): Promise<void> {
    const key = this.key("runs", userId);
    await this.client.zadd(key, "XX", Date.now() + ttlMs, runKey);
    await this.client.pexpire(key, ttlMs);
  }

  async releaseRunSlot(userId: string, runKey: string): Promise<void> {
    await this.client.zrem(this.key("runs", userId), runKey);
  }

  /** User ids are hashed: any text is a valid id, not every text a tidy key. */
  private key(kind: string, userId: string): string {
    return `${this.prefix}user:${kind}:${createHash("sha256").update(userId, "utf8").digest("hex")}`;
  }
}
