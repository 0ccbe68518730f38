// A TCP proxy on 127.0.0.1 that cuts connections the way a network does: after a chosen number of response
// bytes it destroys both sides, mid-record or mid-header, whatever lies there. Nothing here imports vitest.
import { createServer, connect, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

export interface CuttingProxy {
  url: string;
  /** Connections cut so far. */
  readonly cuts: number;
  close(): Promise<void>;
}

/**
 * Forwards to `target` (an http:// URL, or a function choosing one per connection: a balancer). `cutAfter()` is asked
 * once per connection: the response bytes after which it is cut, or undefined to leave it alone.
 */
export async function startCuttingProxy(target: string | (() => string), cutAfter: () => number | undefined): Promise<CuttingProxy> {
  const targetOf = typeof target === "string" ? () => target : target;
  const sockets = new Set<Socket>();
  let cuts = 0;
  const server: Server = createServer((client) => {
    const { hostname, port } = new URL(targetOf());
    const upstream = connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    const limit = cutAfter();
    let sent = 0;
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("data", (chunk) => upstream.write(chunk));
    upstream.on("data", (chunk: Buffer) => {
      if (limit === undefined) return void client.write(chunk);
      const room = limit - sent;
      sent += chunk.length;
      if (chunk.length < room) return void client.write(chunk);
      cuts += 1;
      // The bytes before the cut still go out, then the connection is gone.
      client.write(chunk.subarray(0, Math.max(0, room)), cut);
      upstream.pause();
    });
    for (const socket of [client, upstream]) {
      socket.on("error", cut);
      socket.on("close", () => {
        sockets.delete(socket);
        cut();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get cuts() {
      return cuts;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
