// Request bodies are counted while they stream in, against the request's own limit and against a budget
// shared by all connections (what is buffered and parsed at once). The rest of a refused body is still read
// — discarded, up to a bound — before the connection closes: a client that writes its whole body before
// reading (Python urllib, requests) otherwise meets a reset socket instead of the JSON envelope. A keep-alive
// client gets the answer at once (the drain goes on behind it); one that asked for `Connection: close`
// gets it once its body is in, since Node closes such a connection as soon as the answer is sent. A body
// that has not arrived by its deadline is cut with 408.
import type { IncomingMessage } from "node:http";
import { GatewayError } from "../errors.js";
import { messageText } from "../i18n/index.js";

export interface BodyTexts {
  tooLarge: string;
  invalidJson: string;
  notObject: string;
}

export const RUN_BODY: BodyTexts = {
  tooLarge: messageText("http.bodyTooLarge"),
  invalidJson: messageText("http.bodyNotJson"),
  notObject: messageText("input.notObject"),
};

export const CANCEL_BODY: BodyTexts = {
  tooLarge: messageText("http.cancelBodyTooLarge"),
  invalidJson: messageText("http.cancelBodyNotJson"),
  notObject: messageText("cancel.notObject"),
};

/** Bytes of a refused body read and discarded so its client can read the answer; beyond it the socket is closed. */
export const MAX_DRAIN_BYTES = 64 * 1024 * 1024;

/** Request-body bytes held across all connections, from the first byte until the request is admitted or refused. */
export class BodyBudget {
  private used = 0;
  constructor(readonly totalBytes: number) {}

  get inUse(): number {
    return this.used;
  }

  /** One request's share; release() it once the body has been parsed and acted on. */
  lease(): BodyLease {
    return new BodyLease(this);
  }

  /** @internal */
  take(bytes: number): boolean {
    if (this.used + bytes > this.totalBytes) return false;
    this.used += bytes;
    return true;
  }

  /** @internal */
  give(bytes: number): void {
    this.used -= bytes;
  }
}

export class BodyLease {
  private held = 0;
  constructor(private readonly budget: BodyBudget) {}

  /** Holds `bytes` more, or nothing when the budget cannot cover them. */
  grow(bytes: number): boolean {
    if (!this.budget.take(bytes)) return false;
    this.held += bytes;
    return true;
  }

  release(): void {
    this.budget.give(this.held);
    this.held = 0;
  }
}

export interface BodyReadOptions {
  /** The budget share the body is counted against; without it only `limit` applies. */
  lease?: BodyLease;
  /** Whole-body deadline from now; 0 or absent = none. */
  deadlineMs?: number;
}

export const bodyErrors = {
  busy: () => new GatewayError(503, "SERVER_BUSY", messageText("http.tooManyBodies")),
  timeout: () => new GatewayError(408, "REQUEST_TIMEOUT", messageText("http.bodyTimeout")),
};

export function readBody(req: IncomingMessage, limit: number, texts: BodyTexts, options: BodyReadOptions = {}): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const { lease } = options;
    const declared = Number(req.headers["content-length"]);
    const known = req.headers["content-length"] !== undefined && Number.isInteger(declared) && declared >= 0;
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const deadlineAt = options.deadlineMs && options.deadlineMs > 0 ? Date.now() + options.deadlineMs : undefined;
    const cleanup = () => {
      settled = true;
      if (timer) clearTimeout(timer);
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onGone);
      req.off("aborted", onGone);
    };
    const refuse = (error: GatewayError) => {
      if (settled) return;
      cleanup();
      chunks.length = 0;
      lease?.release();
      if (error.status === 408 || req.readableEnded) return reject(error);
      const remainingMs = deadlineAt === undefined ? 0 : Math.max(1, deadlineAt - Date.now());
      if (closesAfterAnswer(req)) return drain(req, size, limit + MAX_DRAIN_BYTES, remainingMs, () => reject(error));
      drain(req, size, limit + MAX_DRAIN_BYTES, remainingMs);
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return refuse(new GatewayError(413, "REQUEST_TOO_LARGE", texts.tooLarge));
      if (!known && lease && !lease.grow(chunk.length)) return refuse(bodyErrors.busy());
      chunks.push(chunk);
    };
    const onEnd = () => {
      if (settled) return;
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    // The client went away mid-body: nobody reads an answer, and the socket is gone with it.
    const onGone = () => refuse(new GatewayError(400, "INVALID_JSON", texts.invalidJson));
    const timer = options.deadlineMs && options.deadlineMs > 0 ? setTimeout(() => refuse(bodyErrors.timeout()), options.deadlineMs) : undefined;
    if (known && declared > limit) return refuse(new GatewayError(413, "REQUEST_TOO_LARGE", texts.tooLarge));
    if (known && lease && !lease.grow(declared)) return refuse(bodyErrors.busy());
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onGone);
    req.on("aborted", onGone);
    if (req.readableEnded) onEnd();
  });
}

/**
 * Before an error answer to a request whose body nobody read (401, 404, 415 …): a client that asked for
 * `Connection: close` would otherwise be reset mid-upload, so its body is drained first (bounded as above).
 * Keep-alive connections need nothing: Node discards an unread body behind the answer itself.
 */
export function drainUnreadBody(req: IncomingMessage, deadlineMs: number): Promise<void> {
  if (req.readableEnded || drained.has(req) || req.listenerCount("data") > 0 || !closesAfterAnswer(req)) return Promise.resolve();
  return new Promise((resolve) => drain(req, 0, MAX_REQUEST_DRAIN_LIMIT, deadlineMs, resolve));
}

const MAX_REQUEST_DRAIN_LIMIT = 12 * 1024 * 1024 + MAX_DRAIN_BYTES;

/** Requests whose body is (or was) drained: one drain per request. */
const drained = new WeakSet<IncomingMessage>();

/** The connection ends with this answer: HTTP/1.0 without keep-alive, or `Connection: close`. */
function closesAfterAnswer(req: IncomingMessage): boolean {
  const connection = String(req.headers.connection ?? "").toLowerCase();
  if (req.httpVersion === "1.0") return !connection.includes("keep-alive");
  return connection.split(",").some((token) => token.trim() === "close");
}

/**
 * Reads and discards what is left of a refused body, then calls `done`. Past `maxBytes` in all, or after
 * `deadlineMs` (0 = none), it stops reading: `done` still runs, and the connection closes with the answer.
 */
function drain(req: IncomingMessage, alreadyRead: number, maxBytes: number, deadlineMs: number, done: () => void = () => undefined): void {
  drained.add(req);
  let total = alreadyRead;
  let finished = false;
  // Declared before `finish`, which a body declared too long calls before any timer is set.
  let timer: NodeJS.Timeout | undefined;
  const finish = (cut: boolean) => {
    if (finished) return;
    finished = true;
    if (timer) clearTimeout(timer);
    req.off("data", onData);
    req.off("end", onEnd);
    req.off("close", onEnd);
    done();
    // What the client still sends will not be read: closing now is the only bound.
    if (cut) setImmediate(() => req.socket.destroySoon());
  };
  const onData = (chunk: Buffer) => {
    total += chunk.length;
    if (total > maxBytes) return finish(true);
    // One chunk per turn of the event loop: a hundred refused uploads drained at full speed would hold the loop for
    // whole batches of reads, and every other request (/health among them) would wait behind them.
    req.pause();
    setImmediate(() => {
      if (!finished) req.resume();
    });
  };
  const onEnd = () => finish(false);
  const declared = Number(req.headers["content-length"]);
  if (Number.isInteger(declared) && declared > maxBytes) return finish(true);
  if (deadlineMs > 0) timer = setTimeout(() => finish(true), deadlineMs);
  req.on("data", onData);
  req.once("end", onEnd);
  req.once("close", onEnd);
  req.resume();
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Strict UTF-8 and JSON; the top level must be an object. */
export function parseJsonObject(body: Buffer, texts: BodyTexts): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(body));
  } catch {
    throw new GatewayError(400, "INVALID_JSON", texts.invalidJson);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new GatewayError(400, "INVALID_INPUT", texts.notObject);
  }
  if (depthExceeds(value, MAX_JSON_DEPTH)) throw new GatewayError(400, "INVALID_INPUT", messageText("http.bodyTooDeep"));
  return value as Record<string, unknown>;
}

/** Deeper documents would overflow the stack of every recursive step after parsing (digest, validation). */
export const MAX_JSON_DEPTH = 128;

function depthExceeds(root: object, limit: number): boolean {
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (depth > limit) return true;
    if (typeof value !== "object" || value === null) continue;
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}
