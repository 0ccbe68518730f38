// The Lua scripts of the Redis thread store: each reads and writes in one step, so a version check, a lease check
// and the write they guard can never be split by another replica's command.
// KEYS: thread, lease. ARGV: expected version ("*": whatever is stored), record text, fence token ("" for none).
// Returns {1, new version} | {0, stored version} (stale) | {-1} (lease lost) | {-2} (stored version unreadable).
const SAVE_VERSIONED = `
if ARGV[3] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[3] then return {-1} end
local stored = redis.call('HGET', KEYS[1], 'version')
local current = 0
if stored then
  current = tonumber(stored)
  if not current or current < 1 or current ~= math.floor(current) then return {-2} end
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  return {-2}
end
if ARGV[1] ~= '*' and current ~= tonumber(ARGV[1]) then return {0, current} end
redis.call('HSET', KEYS[1], 'record', ARGV[2], 'version', current + 1)
return {1, current + 1}
`;

// KEYS: thread, lease. ARGV: fence token ("" for none). Returns 1, or -1 when the lease is lost.
const REMOVE_FENCED = `
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1])
return 1
`;

// KEYS: lease. ARGV: new token, ttl ms. Returns {1, token} or {0, the holder's token}.
const ACQUIRE_LEASE = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1, ARGV[1]} end
return {0, redis.call('GET', KEYS[1])}
`;

// KEYS: lease. ARGV: token, ttl ms. Returns 1 when renewed.
const RENEW_LEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

// KEYS: lease. ARGV: token. Returns 1 when deleted.
const DELETE_LEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

// KEYS: lease. Returns {} or {token, remaining ms}, read together.
const READ_LEASE = `
local token = redis.call('GET', KEYS[1])
if not token then return {} end
return {token, redis.call('PTTL', KEYS[1])}
`;

export const SCRIPTS = {
  aguiSaveVersioned: { numberOfKeys: 2, lua: SAVE_VERSIONED },
  aguiRemoveFenced: { numberOfKeys: 2, lua: REMOVE_FENCED },
  aguiAcquireLease: { numberOfKeys: 1, lua: ACQUIRE_LEASE },
  aguiRenewLease: { numberOfKeys: 1, lua: RENEW_LEASE },
  aguiDeleteLease: { numberOfKeys: 1, lua: DELETE_LEASE },
  aguiReadLease: { numberOfKeys: 1, lua: READ_LEASE },
} as const;

export type ScriptName = keyof typeof SCRIPTS;
