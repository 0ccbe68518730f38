// A hand-driven JSON-RPC/SSE fake without the SDK, for bytes a well-behaved server never sends:
// CRLF framing, `event: error` frames, comments, broken JSON, partial lines, sockets reset mid-stream.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { listenLoopback } from "./listen.js";
import { readRequestText } from "./read-body.js";

export interface RawExchange {
  method: string;
  id: unknown;
  params: any;
  headers: IncomingHttpHeaders;
  /** The request body as received. */
  body: string;
  /** The HTTP request line, for the REST extensions (`GET /iac-code/pipeline/state?…`). */
  http: { method: string; url: string };
}

export interface RawResponder {
  /** Plain JSON reply (a JSON-RPC error body, an HTTP 500, a 401...). */
  json(status: number, body: unknown): void;
  /** 200 text/event-stream, headers flushed immediately. */
  sseStart(): void;
  /** `data: {"jsonrpc":"2.0","id":<id>,"result":...}` + blank line; CRLF line ends if asked (iac-code uses CRLF). */
  sseFrame(result: unknown, opts?: { crlf?: boolean }): void;
  /** `event: error` + `data: {"jsonrpc":"2.0","id":<id>,"error":...}` + blank line. */
  sseError(error: { code: number; message: string; data?: unknown }, opts?: { crlf?: boolean }): void;
  /** Arbitrary bytes: comments, non-JSON data lines, partial lines. */
  sseRaw(text: string): void;
  /** Close the response cleanly. */
  end(): void;
  /** Reset the socket (mid-stream failure). */
  destroy(): void;
  /** Resolves when the client disconnects or the response is finished. */
  closed: Promise<void>;
}

export interface RawA2AServerOptions {
  handle(ex: RawExchange, res: RawResponder): void | Promise<void>;
  port?: number;
}

export interface RawA2AServer {
  url: string;
  port: number;
  requests: RawExchange[];
  close(): Promise<void>;
}


function parseExchange(req: IncomingMessage, body: string): RawExchange {
  let parsed: { method?: unknown; id?: unknown; params?: unknown } = {};
  try {
    const value: unknown = JSON.parse(body);
    if (value && typeof value === "object") parsed = value as typeof parsed;
  } catch {
    // Not JSON: the handler still sees the raw body.
  }
  return {
    method: typeof parsed.method === "string" ? parsed.method : "",
    id: parsed.id ?? null,
    params: parsed.params,
    headers: req.headers,
    body,
    http: { method: req.method ?? "", url: req.url ?? "" },
  };
}

function responder(res: ServerResponse, id: unknown): RawResponder {
  const closed = new Promise<void>((resolve) => res.once("close", () => resolve()));
  const writable = (): boolean => !res.destroyed && !res.writableEnded;
  const write = (text: string): void => {
    if (writable()) res.write(text);
  };
  const frame = (lines: string[], crlf: boolean | undefined): string => {
    const eol = crlf ? "\r\n" : "\n";
    return lines.map((line) => line + eol).join("") + eol;
  };
  return {
    json(status, body) {
      if (!writable()) return;
      const text = JSON.stringify(body);
      res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
      res.end(text);
    },
    sseStart() {
      if (res.headersSent) return;
      res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", Connection: "keep-alive" });
      res.flushHeaders();
    },
    sseFrame(result, opts) {
      write(frame([`data: ${JSON.stringify({ jsonrpc: "2.0", id, result })}`], opts?.crlf));
    },
    sseError(error, opts) {
      write(frame(["event: error", `data: ${JSON.stringify({ jsonrpc: "2.0", id, error })}`], opts?.crlf));
    },
    sseRaw(text) {
      write(text);
    },
    end() {
      if (writable()) res.end();
    },
    destroy() {
      res.destroy();
    },
    closed,
  };
}

export async function startRawA2AServer(opts: RawA2AServerOptions): Promise<RawA2AServer> {
  const requests: RawExchange[] = [];
  const listener = await listenLoopback((req, res) => {
    void (async () => {
      const exchange = parseExchange(req, await readRequestText(req));
      requests.push(exchange);
      await opts.handle(exchange, responder(res, exchange.id));
    })().catch((err: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ error: String(err) }));
      } else {
        res.destroy();
      }
    });
  }, { ...(opts.port !== undefined && { port: opts.port }) });
  return {
    url: listener.url,
    port: listener.port,
    requests,
    close: () => listener.close(),
  };
}
