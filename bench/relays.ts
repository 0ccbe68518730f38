// The two baselines every gateway figure is divided by, both Koa on node:http with undici upstream:
// - the floor relay: the least work any projecting gateway must do — undici in, eventsource-parser,
//   JSON.parse and JSON.stringify of each frame, SSE out with backpressure (one write per upstream chunk);
// - the raw relay: the upstream bytes piped to the client untouched — the physical ceiling.
// The client POSTs a JSON-RPC body; both forward it upstream as is.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createParser } from "eventsource-parser";
import Koa, { type Context } from "koa";
import { Agent, request } from "undici";

export type RelayKind = "floor" | "raw";

export interface Relay {
  url: string;
  port: number;
  close(): Promise<void>;
}

const SSE_HEADERS = { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", Connection: "keep-alive" };

export async function startRelay(kind: RelayKind, upstreamUrl: string): Promise<Relay> {
  const agent = new Agent();
  const app = new Koa();
  // A client hanging up mid-stream is routine here; Koa would print each one's stack.
  app.silent = true;
  app.use(async (ctx) => {
    if (ctx.method !== "POST") {
      ctx.status = 404;
      return;
    }
    const body = await readBody(ctx);
    const abort = new AbortController();
    ctx.req.on("close", () => abort.abort());
    const upstream = await request(upstreamUrl, {
      dispatcher: agent,
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream", "A2A-Version": "1.0" },
      body,
      signal: abort.signal,
      bodyTimeout: 0,
    });
    if (kind === "raw") {
      ctx.set(SSE_HEADERS);
      ctx.status = 200;
      // Koa pipes the stream into the response, so backpressure is Node's own.
      ctx.body = upstream.body;
      return;
    }
    ctx.respond = false;
    await floorRelay(ctx, upstream.body as AsyncIterable<Uint8Array>).catch(() => undefined);
  });
  const server: Server = createServer(app.callback());
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/`,
    port,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await agent.destroy();
    },
  };
}

async function floorRelay(ctx: Context, body: AsyncIterable<Uint8Array>): Promise<void> {
  const res = ctx.res;
  res.writeHead(200, SSE_HEADERS);
  res.flushHeaders();
  let out = "";
  const parser = createParser({
    onEvent: (event) => {
      out += `data: ${JSON.stringify(JSON.parse(event.data))}\n\n`;
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (out === "") continue;
    const ok = res.write(out);
    out = "";
    if (!ok && !(await drained(res))) return;
  }
  res.end();
}

function drained(res: NodeJS.WritableStream & { destroyed: boolean }): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const done = (ok: boolean) => {
      res.removeListener("drain", onDrain);
      res.removeListener("close", onClose);
      resolve(ok);
    };
    res.on("drain", onDrain);
    res.on("close", onClose);
  });
}

async function readBody(ctx: Context): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
