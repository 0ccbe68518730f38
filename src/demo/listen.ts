// The listener of the loopback fakes (demo kernel, raw fault server, bench upstream): HTTP/1.1, or HTTP/2
// without TLS (prior knowledge) whose compatibility request/response stand in for node:http's. It counts
// connections (HTTP/2: sessions) and its close also ends kept-alive connections and open sessions.
import { createServer, type IncomingMessage, type Server as Http1Server, type ServerResponse } from "node:http";
import { createServer as createH2cServer, type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from "node:http2";
import type { AddressInfo, Server } from "node:net";

export type FakeRequest = IncomingMessage | Http2ServerRequest;
export type FakeResponse = ServerResponse | Http2ServerResponse;

export interface LoopbackListenOptions {
  port?: number;
  http2?: boolean;
  /** Tunes the HTTP/1.1 server (timeouts) before it listens. */
  configureHttp1?: (server: Http1Server) => void;
}

export interface LoopbackListener {
  port: number;
  /** `http://127.0.0.1:<port>/` */
  url: string;
  connections(): number;
  /** Stops listening and drops every connection; the same promise on every call. */
  close(): Promise<void>;
}

/** HTTP/1.1 only: the handler gets node:http's own request and response. */
export function listenLoopback(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  options?: LoopbackListenOptions & { http2?: false },
): Promise<LoopbackListener>;
export function listenLoopback(handle: (req: FakeRequest, res: FakeResponse) => void, options: LoopbackListenOptions): Promise<LoopbackListener>;
export async function listenLoopback(
  handle: ((req: IncomingMessage, res: ServerResponse) => void) | ((req: FakeRequest, res: FakeResponse) => void),
  options: LoopbackListenOptions = {},
): Promise<LoopbackListener> {
  let connections = 0;
  const sessions = new Set<Http2Session>();
  let server: Server;
  let dropAll: () => void;
  if (options.http2) {
    // The overloads only let an HTTP/2 listener have a handler that takes both kinds.
    const h2 = createH2cServer(handle as (req: FakeRequest, res: FakeResponse) => void);
    h2.on("session", (session) => {
      connections++;
      sessions.add(session);
      session.once("close", () => sessions.delete(session));
    });
    server = h2;
    dropAll = () => {
      for (const session of sessions) session.destroy();
    };
  } else {
    const h1 = createServer(handle);
    h1.on("connection", () => connections++);
    options.configureHttp1?.(h1);
    server = h1;
    dropAll = () => h1.closeAllConnections();
  }
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    port,
    url: `http://127.0.0.1:${port}/`,
    connections: () => connections,
    close(): Promise<void> {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        dropAll();
      });
      return closing;
    },
  };
}
