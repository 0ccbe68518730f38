// Request/reply between replicas over Redis pub/sub: a replica that receives a call for a thread another replica
// runs (a cancel, an answer) asks that owner directly. Each replica listens on `<prefix>replica:<ownerId>` and gets
// replies on `<prefix>reply:<ownerId>`, both on a connection of its own (a subscribed connection can send nothing
// else). Pub/sub is fire-and-forget, so every request ends: answered, nobody listening (PUBLISH reached no one),
// or timed out. Messages are JSON from other replicas, and anything malformed is logged and dropped.
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { closeRedisConnection, createRedisConnection, type RedisConnectionOptions } from "./redis-connection.js";
import { DEFAULT_REDIS_PREFIX } from "./redis-store.js";

export interface RedisRelayOptions extends RedisConnectionOptions {
  /** This replica's id: the owner id its leases carry. */
  ownerId: string;
  /** Prepended to the channel names; default "agui-gateway:" (the store's). */
  prefix?: string;
  /** A command connection to PUBLISH on (the store's, say); the relay opens its own when absent. */
  publisher?: Redis;
}

/** Why a request got no reply; "no-handler" and "handler-failed" mean the owner is alive. */
export type RelayMiss = "no-subscriber" | "timeout" | "unavailable" | "no-handler" | "handler-failed" | "closed";

export type RelayAnswer = { answered: true; reply: unknown } | { answered: false; reason: RelayMiss };

export type RelayHandler = (payload: unknown) => Promise<unknown>;

interface RequestMessage {
  type: "request";
  id: string;
  from: string;
  kind: string;
  payload: unknown;
}

interface ReplyMessage {
  type: "reply";
  id: string;
  ok: boolean;
  reply?: unknown;
  error?: "no-handler" | "handler-failed";
}

/** Larger messages are dropped unread: nothing the replicas send comes near it. */
const MAX_MESSAGE_LENGTH = 1 << 20;
const WARN_INTERVAL_MS = 10_000;

export class RedisRelay {
  readonly ownerId: string;
  private readonly requestChannel: string;
  private readonly prefix: string;
  private readonly subscriber: Redis;
  private readonly publisher: Redis;
  private readonly ownsPublisher: boolean;
  private readonly logger: Logger;
  private readonly handlers = new Map<string, RelayHandler>();
  private readonly pending = new Map<string, (answer: RelayAnswer) => void>();
  private readonly subscribed: Promise<void>;
  private markSubscribed!: () => void;
  private closed = false;
  private lastWarnAt = Number.NEGATIVE_INFINITY;

  constructor(options: RedisRelayOptions) {
    if (typeof options.ownerId !== "string" || options.ownerId === "") throw new TypeError("ownerId must be a non-empty string");
    const { ownerId, prefix = DEFAULT_REDIS_PREFIX, publisher, ...connection } = options;
    this.ownerId = ownerId;
    this.prefix = prefix;
    this.requestChannel = `${prefix}replica:${ownerId}`;
    this.logger = options.logger.child({ relay: ownerId });
    this.subscribed = new Promise((resolve) => {
      this.markSubscribed = resolve;
    });
    this.subscriber = createRedisConnection({ ...connection, name: connection.name ?? "agui-relay-subscriber" });
    this.publisher = publisher ?? createRedisConnection({ ...connection, name: connection.name ?? "agui-relay-publisher" });
    this.ownsPublisher = publisher === undefined;
    this.subscriber.on("message", (channel: string, message: string) => this.receive(channel, message));
    // Subscribe on every (re)connection; SUBSCRIBE to a channel already subscribed is a no-op.
    this.subscriber.on("ready", () => void this.subscribe());
    if (this.subscriber.status === "ready") void this.subscribe();
  }

  /** Resolves once this replica listens for requests and replies (the first time). */
  whenSubscribed(): Promise<void> {
    return this.subscribed;
  }

  /** One handler per kind; its result (JSON) is the reply, a throw answers "handler-failed". */
  onRequest(kind: string, handler: RelayHandler): void {
    this.handlers.set(kind, handler);
  }

  /** Never rejects for Redis' sake (a miss is an answer); throws only when `payload` is not JSON-serializable. */
  async request(toOwnerId: string, kind: string, payload: unknown, timeoutMs: number): Promise<RelayAnswer> {
    if (this.closed) return { answered: false, reason: "closed" };
    const id = randomUUID();
    const message: RequestMessage = { type: "request", id, from: this.ownerId, kind, payload };
    const text = JSON.stringify(message);
    return new Promise<RelayAnswer>((resolve) => {
      const timer = setTimeout(() => finish({ answered: false, reason: "timeout" }), timeoutMs);
      const finish = (answer: RelayAnswer) => {
        if (!this.pending.delete(id)) return;
        clearTimeout(timer);
        resolve(answer);
      };
      this.pending.set(id, finish);
      // A reply can arrive before PUBLISH returns: it travels on the other connection.
      void (async () => {
        await this.subscribed;
        if (!this.pending.has(id)) return;
        try {
          const receivers = await this.publisher.publish(`${this.prefix}replica:${toOwnerId}`, text);
          if (receivers === 0) finish({ answered: false, reason: "no-subscriber" });
        } catch (error) {
          this.logger.debug({ error: errorMessage(error) }, "relay request not sent");
          finish({ answered: false, reason: "unavailable" });
        }
      })();
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const finish of [...this.pending.values()]) finish({ answered: false, reason: "closed" });
    // Anyone still waiting to publish sees `closed` through the emptied pending map.
    this.markSubscribed();
    await Promise.all([closeRedisConnection(this.subscriber), this.ownsPublisher ? closeRedisConnection(this.publisher) : undefined]);
  }

  private async subscribe(): Promise<void> {
    if (this.closed) return;
    try {
      await this.subscriber.subscribe(this.requestChannel, `${this.prefix}reply:${this.ownerId}`);
      this.markSubscribed();
    } catch (error) {
      // The next 'ready' tries again.
      this.warn({ error: errorMessage(error) }, "relay could not subscribe");
    }
  }

  private receive(channel: string, text: string): void {
    if (this.closed) return;
    const message = text.length > MAX_MESSAGE_LENGTH ? undefined : parseMessage(text);
    if (channel === this.requestChannel && message?.type === "request") {
      void this.answer(message);
    } else if (channel !== this.requestChannel && message?.type === "reply") {
      const finish = this.pending.get(message.id);
      if (finish === undefined) return; // Late: that request already timed out.
      finish(message.ok ? { answered: true, reply: message.reply } : { answered: false, reason: message.error ?? "handler-failed" });
    } else {
      this.warn({ channel, length: text.length }, "relay ignored a malformed message");
    }
  }

  private async answer(request: RequestMessage): Promise<void> {
    const handler = this.handlers.get(request.kind);
    let reply: ReplyMessage;
    if (handler === undefined) {
      reply = { type: "reply", id: request.id, ok: false, error: "no-handler" };
    } else {
      try {
        reply = { type: "reply", id: request.id, ok: true, reply: await handler(request.payload) };
      } catch (error) {
        this.logger.warn({ kind: request.kind, from: request.from, error: errorMessage(error) }, "relay handler failed");
        reply = { type: "reply", id: request.id, ok: false, error: "handler-failed" };
      }
    }
    let text: string;
    try {
      text = JSON.stringify(reply);
    } catch (error) {
      this.logger.warn({ kind: request.kind, error: errorMessage(error) }, "relay handler's reply is not JSON");
      text = JSON.stringify({ type: "reply", id: request.id, ok: false, error: "handler-failed" } satisfies ReplyMessage);
    }
    if (this.closed) return;
    await this.publisher.publish(`${this.prefix}reply:${request.from}`, text).catch((error: unknown) => {
      this.logger.debug({ error: errorMessage(error) }, "relay reply not sent");
    });
  }

  private warn(fields: Record<string, unknown>, message: string): void {
    const now = Date.now();
    if (now - this.lastWarnAt < WARN_INTERVAL_MS) return;
    this.lastWarnAt = now;
    this.logger.warn(fields, message);
  }
}

function parseMessage(text: string): RequestMessage | ReplyMessage | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined;
  const m = json as Record<string, unknown>;
  if (typeof m.id !== "string" || m.id === "") return undefined;
  if (m.type === "request") {
    if (typeof m.from !== "string" || m.from === "" || typeof m.kind !== "string") return undefined;
    return { type: "request", id: m.id, from: m.from, kind: m.kind, payload: m.payload };
  }
  if (m.type === "reply" && typeof m.ok === "boolean") {
    const error = m.error === "no-handler" || m.error === "handler-failed" ? m.error : undefined;
    return { type: "reply", id: m.id, ok: m.ok, reply: m.reply, ...(error !== undefined && { error }) };
  }
  return undefined;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
