// Child: the gateway under test, loaded from the module the parent picked (dist/ when fresh, else src/).
import { pathToFileURL } from "node:url";
import pino from "pino";
import { childArgs, failStart, serveParent } from "../lib/child-ipc.js";

export interface GatewayChildArgs {
  module: string;
  a2aUrl: string;
  allowedRoots: string[];
  heartbeatSeconds?: number;
  stateDir?: string;
  /** redis:// URL: thread state in Redis instead of stateDir. */
  stateStore?: string;
  a2aHttp2?: boolean;
  /** OpenTelemetry spans exported to this OTLP/HTTP traces URL. */
  tracing?: { exporterUrl: string };
  /** --reconnect-grace: a run whose client went away waits this long for a reconnect. */
  reconnectGraceSeconds?: number;
  /** --replay-events / --replay-mib / …: what is kept of each run's stream. */
  replay?: { events?: number; mib?: number; retentionSeconds?: number; budgetMib?: number };
}

try {
  const args = childArgs<GatewayChildArgs>();
  const { startGateway } = (await import(pathToFileURL(args.module).href)) as typeof import("../../src/gateway.js");
  const gateway = await startGateway({
    host: "127.0.0.1",
    port: 0,
    a2aUrl: args.a2aUrl,
    allowedRoots: args.allowedRoots,
    logger: pino({ level: "silent" }),
    ...(args.heartbeatSeconds !== undefined && { heartbeatSeconds: args.heartbeatSeconds }),
    ...(args.stateDir !== undefined && { stateDir: args.stateDir }),
    ...(args.stateStore !== undefined && { stateStore: args.stateStore }),
    ...(args.a2aHttp2 && { a2aHttp2: true }),
    ...(args.tracing !== undefined && { tracing: args.tracing }),
    ...(args.reconnectGraceSeconds !== undefined && { reconnectGraceSeconds: args.reconnectGraceSeconds }),
    ...(args.replay !== undefined && { replay: args.replay }),
  });
  serveParent({ url: gateway.url, port: gateway.port }, {
    connections: () => new Promise((resolve, reject) => gateway.server.getConnections((e, n) => (e ? reject(e) : resolve(n)))),
  }, () => gateway.close());
} catch (error) {
  failStart(error);
}
