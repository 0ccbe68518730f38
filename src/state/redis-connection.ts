// One Redis (or Valkey) connection for the shared state store and the relay. Thread state must answer or fail
// within a request's budget, never wait for Redis to come back: commands fail at once while disconnected and
// time out when a connected server stops answering, and the client keeps reconnecting in the background.
import { Redis, type RedisOptions } from "ioredis";
import type { Logger } from "pino";
import { parseRedisUrl, redactRedisUrl, redisUrlProblem } from "./redis-url.js";

export { redactRedisUrl, redisUrlProblem } from "./redis-url.js";

export type RedisReadiness = "ready" | "connecting" | "down";

export interface RedisConnectionOptions {
  /** `redis://[user[:password]@]host[:port][/db]` or `rediss://…` (TLS). */
  url: string;
  /** Wins over a password in the URL (the caller reads it from IAC_CODE_AGUI_REDIS_PASSWORD). */
  password?: string;
  logger: Logger;
  /** Per connection attempt; default 2000. */
  connectTimeoutMs?: number;
  /** Per command while connected; default 2000. */
  commandTimeoutMs?: number;
  /** Longest pause between reconnect attempts; default 2000. */
  maxReconnectDelayMs?: number;
  /** Shown in logs and CLIENT LIST. */
  name?: string;
  /**
   * Queue commands until the connection is up instead of failing them. Only for a subscriber connection, whose one
   * command (SUBSCRIBE) should simply take effect once Redis is reachable.
   */
  queueWhileConnecting?: boolean;
  /** Minimum time between two logged connection errors; default 10 000. */
  errorLogIntervalMs?: number;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 2_000;
const DEFAULT_COMMAND_TIMEOUT_MS = 2_000;
const DEFAULT_MAX_RECONNECT_DELAY_MS = 2_000;
const FIRST_RECONNECT_DELAY_MS = 50;
const DEFAULT_ERROR_LOG_INTERVAL_MS = 10_000;

const readinessOf = new WeakMap<Redis, () => RedisReadiness>();

export function createRedisConnection(options: RedisConnectionOptions): Redis {
  const problem = redisUrlProblem(options.url);
  if (problem !== undefined) throw new Error(`the Redis URL ${problem.replace(/\.$/, "")}: ${redactRedisUrl(options.url)}`);
  const target = parseRedisUrl(options.url);
  const shownUrl = redactRedisUrl(options.url);
  const logger = options.logger.child({ redis: shownUrl, ...(options.name !== undefined && { redisConnection: options.name }) });
  const maxDelay = options.maxReconnectDelayMs ?? DEFAULT_MAX_RECONNECT_DELAY_MS;
  const password = options.password ?? target.password;
  const redisOptions: RedisOptions = {
    host: target.host,
    port: target.port,
    db: target.db,
    ...(target.username !== undefined && { username: target.username }),
    ...(password !== undefined && { password }),
    ...(target.tls && { tls: target.servername === undefined ? {} : { servername: target.servername } }),
    ...(options.name !== undefined && { connectionName: options.name }),
    connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    commandTimeout: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    retryStrategy: (attempt) => Math.min(FIRST_RECONNECT_DELAY_MS * 2 ** Math.min(attempt - 1, 16), maxDelay),
    enableOfflineQueue: options.queueWhileConnecting === true,
    // A write whose reply was lost is not replayed on the next connection: the caller saw it fail and decides
    // (re-reading the version tells whether it landed).
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: options.queueWhileConnecting === true ? null : 0,
    // Keys are prefixed by the store itself: its scripts and SCAN need the full names.
    keyPrefix: "",
  };
  const client = new Redis(redisOptions);

  let lastErrorLoggedAt = Number.NEGATIVE_INFINITY;
  let unloggedErrors = 0;
  const errorLogInterval = options.errorLogIntervalMs ?? DEFAULT_ERROR_LOG_INTERVAL_MS;
  // Without a listener an 'error' event would crash the process; while Redis is away one arrives per attempt.
  client.on("error", (error: unknown) => {
    const now = Date.now();
    if (now - lastErrorLoggedAt < errorLogInterval) {
      unloggedErrors++;
      return;
    }
    lastErrorLoggedAt = now;
    // The message only: a failed AUTH's error object carries the command's arguments, the password among them.
    logger.warn({ error: errorMessage(error), ...(unloggedErrors > 0 && { suppressed: unloggedErrors }) }, "redis connection error");
    unloggedErrors = 0;
  });
  // `failed`: the connection closed (or an attempt failed) since it was last ready.
  let failed = false;
  let everReady = false;
  client.on("ready", () => {
    logger.info(everReady ? "redis connection restored" : "redis connection ready");
    everReady = true;
    failed = false;
  });
  client.on("close", () => {
    if (everReady && !failed && client.status !== "end") logger.warn("redis connection lost; reconnecting");
    failed = true;
  });
  readinessOf.set(client, () => {
    if (client.status === "ready") return "ready";
    if (failed || client.status === "end" || client.status === "close") return "down";
    return "connecting";
  });
  return client;
}

/**
 * "ready" when commands can be sent; "connecting" while the first attempt is under way; "down" after a connection
 * was lost or an attempt failed, until the next one is ready.
 */
export function redisReadiness(client: Redis): RedisReadiness {
  const known = readinessOf.get(client);
  if (known !== undefined) return known();
  if (client.status === "ready") return "ready";
  return client.status === "end" || client.status === "close" || client.status === "reconnecting" ? "down" : "connecting";
}

/** Resolves true once the client is ready, false after `timeoutMs`. */
export function waitForRedisReady(client: Redis, timeoutMs: number): Promise<boolean> {
  if (client.status === "ready") return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      client.off("ready", onReady);
      resolve(false);
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    client.once("ready", onReady);
  });
}

/**
 * Resolves true once the client is ready, false as soon as an attempt fails or after `timeoutMs`: for a caller
 * that will wait for a connection under way but not for Redis to come back.
 */
export function waitForRedisAttempt(client: Redis, timeoutMs: number): Promise<boolean> {
  if (client.status === "ready") return Promise.resolve(true);
  return new Promise((resolve) => {
    const settle = (ready: boolean) => {
      clearTimeout(timer);
      client.off("ready", onReady);
      client.off("close", onClose);
      resolve(ready);
    };
    const onReady = () => settle(true);
    const onClose = () => settle(false);
    const timer = setTimeout(() => settle(false), timeoutMs);
    client.once("ready", onReady);
    client.once("close", onClose);
  });
}

/** QUIT when Redis answers within `timeoutMs`, else drop the socket; never throws. */
export async function closeRedisConnection(client: Redis, timeoutMs = 1_000): Promise<void> {
  if (client.status === "end") return;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.quit(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("quit timed out")), timeoutMs);
      }),
    ]);
  } catch {
    // Not connected or not answering.
  } finally {
    clearTimeout(timer);
    client.disconnect();
  }
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
