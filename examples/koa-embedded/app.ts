// An existing Koa service with its own session login that hosts the gateway under /agent: the gateway's
// middleware from `agui-gateway/server`, and an authenticate hook that turns the service's session into the
// gateway's user. Each logged-in user owns the threads they start and cannot see anyone else's.
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Koa from "koa";
import { GatewayError, createGatewayMiddleware } from "agui-gateway/server";

/** The service's own accounts (a real service would ask its user database). */
const PASSWORDS: Readonly<Record<string, string>> = { alice: "wonderland", bob: "builder" };

export interface ExampleOptions {
  /** Loopback URL of the A2A 1.0 kernel (`iac-code a2a`, or the built-in demo upstream). */
  a2aUrl: string;
  /** Workspace roots runs may use. */
  allowedRoots: string[];
  port?: number;
}

export interface RunningExample {
  url: string;
  close(): Promise<void>;
}

export async function startExample(options: ExampleOptions): Promise<RunningExample> {
  const sessions = new Map<string, string>();
  const app = new Koa();
  app.keys = [randomUUID()];

  const agent = await createGatewayMiddleware({
    prefix: "/agent",
    a2aUrl: options.a2aUrl,
    allowedRoots: options.allowedRoots,
    // The service's session decides who is asking; no session, no agent.
    authenticate: (ctx) => {
      const userId = sessions.get(ctx.cookies.get("sid", { signed: true }) ?? "");
      if (userId === undefined) throw new GatewayError(401, "UNAUTHORIZED", "Log in first.");
      return { kind: "user", userId };
    },
  });
  // Before any body parser of the host: the gateway reads its own request bodies.
  app.use(agent.middleware);

  app.use(async (ctx) => {
    if (ctx.method === "POST" && ctx.path === "/login") {
      const { user, password } = JSON.parse(await bodyText(ctx.req)) as { user?: string; password?: string };
      if (user === undefined || PASSWORDS[user] === undefined || PASSWORDS[user] !== password) {
        ctx.status = 401;
        ctx.body = { error: "wrong user or password" };
        return;
      }
      const sid = randomUUID();
      sessions.set(sid, user);
      ctx.cookies.set("sid", sid, { signed: true, httpOnly: true, sameSite: "strict" });
      ctx.body = { user };
      return;
    }
    ctx.body = "The example service. POST /login, then talk AG-UI to /agent.";
  });

  const server: Server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await agent.close();
    },
  };
}

async function bodyText(req: NodeJS.ReadableStream): Promise<string> {
  let text = "";
  for await (const chunk of req) {
    text += String(chunk);
    if (text.length > 4096) throw new Error("login body too large");
  }
  return text;
}
