// --state-store URLs: what they name (host, port, database, credentials, TLS), what is wrong with one, and how
// one is shown in logs. No I/O and no client library, so the configuration can check a URL cheaply.
/** The URL as it may be logged: the password replaced by "***" and any query dropped (it could carry one too). */
export function redactRedisUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "<invalid redis url>";
  }
  const auth = parsed.username !== "" || parsed.password !== "" ? `${parsed.username}${parsed.password !== "" ? ":***" : ""}@` : "";
  return `${parsed.protocol}//${auth}${parsed.host}${parsed.pathname}`;
}

export interface RedisTarget {
  host: string;
  port: number;
  db: number;
  username?: string;
  password?: string;
  tls: boolean;
  /** For SNI: the host name, when it is not an IP address. */
  servername?: string;
}

/**
 * What is wrong with a --state-store URL, as the tail of "<setting> …", or undefined when it can be used.
 * Never echoes the URL (it may hold a password).
 */
export function redisUrlProblem(url: string): string | undefined {
  try {
    parseRedisUrl(url);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

// Redis answers SELECT beyond its `databases` (16 by default) with an error the client only logs, and would go on
// in database 0: a deployment's records could mix with another's.
const MAX_DB = 15;

export function parseRedisUrl(url: string): RedisTarget {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:")) throw new Error("must be a redis:// or rediss:// URL.");
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  if (host === "") throw new Error("must name a host.");
  const dbText = parsed.pathname.replace(/^\//, "");
  const db = dbText === "" ? 0 : /^\d{1,2}$/.test(dbText) ? Number(dbText) : Number.NaN;
  if (!Number.isInteger(db) || db > MAX_DB) throw new Error(`must name a database from 0 to ${MAX_DB} (redis://host:port/N).`);
  const tls = parsed.protocol === "rediss:";
  const isIp = /^[\d.]+$/.test(host) || host.includes(":");
  let username: string;
  let password: string;
  try {
    username = decodeURIComponent(parsed.username);
    password = decodeURIComponent(parsed.password);
  } catch {
    throw new Error("has a user name or password that is not valid percent-encoding.");
  }
  return {
    host,
    port: parsed.port === "" ? 6379 : Number(parsed.port),
    db,
    ...(username !== "" && { username }),
    ...(password !== "" && { password }),
    tls,
    ...(tls && !isIp && { servername: host }),
  };
}

