// Raw HTTP for every test, the soak and the flood bench: fetch where fetch can say it, node:http for what it
// cannot (any method, verbatim paths, latin-1 header bytes, a declared length larger than the body, paced or
// chunked uploads). Every reply carries its text and, when the text is JSON, the parsed value. No vitest here.
import { request as httpRequest, Agent as HttpAgent, type IncomingMessage } from "node:http";

/** The parsed JSON of `text`, or undefined when it is not JSON. */
export function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// ---- node:http -----------------------------------------------------------------------------------

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  text: string;
  json?: any;
}

/** Reads a node:http response to its end. */
export function readReply(res: IncomingMessage): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    res.on("data", (chunk: Buffer) => parts.push(chunk));
    res.on("error", reject);
    res.on("end", () => {
      const body = Buffer.concat(parts);
      const text = body.toString("utf8");
      const json = jsonOf(text);
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text, ...(json !== undefined && { json }) });
    });
  });
}

// One keep-alive pool for all test traffic, so thousands of cases do not cost thousands of sockets.
const agent = new HttpAgent({ keepAlive: true, maxSockets: 64 });

/** A request over node:http (which, unlike fetch, sends any method and latin-1 header bytes). */
export function httpCall(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array; timeoutMs?: number; path?: string } = {},
): Promise<Reply> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    // node:http frames a DELETE/OPTIONS body with neither Content-Length nor chunking; say the length always.
    const length = options.body === undefined ? {} : { "Content-Length": String(Buffer.byteLength(options.body)) };
    // `path` goes out verbatim ("//x", "/%00"), never through URL resolution.
    const where = { host: target.hostname, port: target.port, path: options.path ?? `${target.pathname}${target.search}` };
    const req = httpRequest({ ...where, method: options.method ?? "POST", headers: { ...options.headers, ...length }, agent }, (res) => {
      readReply(res).then((reply) => {
        clearTimeout(timer);
        resolve(reply);
      }, reject);
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${options.timeoutMs ?? 15_000} ms`)), options.timeoutMs ?? 15_000);
    req.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    if (options.body !== undefined) req.end(options.body);
    else req.end();
  });
}

export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return httpCall(url, {
    headers: { "Content-Type": "application/json", Accept: "text/event-stream", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

// ---- fetch-shaped replies ------------------------------------------------------------------------

export interface RawReply {
  status: number;
  headers: Headers;
  text: string;
  json?: any;
}

/** POST with fetch; `body` objects are JSON-encoded, strings and buffers are sent as they are. */
export async function postRaw(
  url: string,
  body: unknown,
  headers: Record<string, string> = { "Content-Type": "application/json" },
): Promise<RawReply> {
  const payload = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
  const response = await fetch(url, { method: "POST", headers, body: payload });
  return replyOf(response);
}

export async function replyOf(response: Response): Promise<RawReply> {
  const text = await response.text();
  const json = jsonOf(text);
  return { status: response.status, headers: response.headers, text, ...(json !== undefined && { json }) };
}

/**
 * A request over node:http for what fetch cannot send: a declared Content-Length larger than the body,
 * or a long chunked body. Chunks are written until the server answers (then the rest is dropped).
 */
export function rawHttp(
  url: string,
  options: { method?: string; headers?: Record<string, string>; chunks?: Iterable<Buffer | string> },
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(url, { method: options.method ?? "POST", headers: options.headers ?? {} }, (res) => {
      answered = true;
      readReply(res).then((reply) => {
        req.destroy();
        const headers = new Headers();
        for (const [key, value] of Object.entries(reply.headers)) if (typeof value === "string") headers.set(key, value);
        resolve({ status: reply.status, headers, text: reply.text, ...(reply.json !== undefined && { json: reply.json }) });
      }, reject);
    });
    // The server may cut the upload short once it has answered; that is the point, not a failure.
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    void (async () => {
      for (const chunk of options.chunks ?? []) {
        if (answered || req.destroyed) return;
        if (!req.write(chunk)) await new Promise<void>((done) => {
          req.once("drain", done);
          req.once("close", done);
        });
      }
      if (!answered && !req.destroyed && !("content-length" in lowerKeys(options.headers))) req.end();
    })();
  });
}

function lowerKeys(headers: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
}
