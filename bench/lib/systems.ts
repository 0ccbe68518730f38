// The systems under comparison, each one child process behind the same upstream, and how a client
// asks each of them for the same upstream stream.
import { randomUUID } from "node:crypto";
import type { GatewayChildArgs } from "../children/gateway.js";
import { CLI_NODE_FLAGS } from "./build.js";
import { spawnChild, type ChildHandle } from "./children.js";
import { rpcBody, runAgentInput } from "./client.js";
import { contextIdFor, type BenchContext } from "./context.js";

/** BENCH_GATEWAY_NODE_FLAGS: node flags added after the CLI's own (which they override), to compare V8 settings. */
const EXTRA_NODE_FLAGS = (process.env.BENCH_GATEWAY_NODE_FLAGS ?? "").split(/\s+/).filter(Boolean);

export interface System {
  name: string;
  url: string;
  child: ChildHandle<{ url: string; port: number }> | undefined;
  /** A fresh request body for `prompt`, and the contextId the upstream will see for it. */
  request(prompt: string): Promise<{ body: string; contextId: string }>;
  stop(): Promise<void>;
}

export async function startGatewaySystem(
  ctx: BenchContext,
  name: string,
  options: {
    heartbeatSeconds?: number;
    stateDir?: string;
    stateStore?: string;
    execArgv?: string[];
    upstream?: { url: string; http2: boolean };
    /** Another build's gateway module (--compare-dist); default the build under test. */
    module?: string;
    /** Export OpenTelemetry spans to this OTLP/HTTP traces URL. */
    tracing?: { exporterUrl: string };
    reconnectGraceSeconds?: number;
    replay?: GatewayChildArgs["replay"];
  } = {},
): Promise<System> {
  const args: GatewayChildArgs = {
    module: options.module ?? ctx.build.gateway,
    a2aUrl: options.upstream?.url ?? ctx.upstream.ready.url,
    ...(options.upstream?.http2 && { a2aHttp2: true }),
    allowedRoots: [ctx.root],
    ...(options.heartbeatSeconds !== undefined && { heartbeatSeconds: options.heartbeatSeconds }),
    ...(options.stateDir !== undefined && { stateDir: options.stateDir }),
    ...(options.stateStore !== undefined && { stateStore: options.stateStore }),
    ...(options.tracing !== undefined && { tracing: options.tracing }),
    ...(options.reconnectGraceSeconds !== undefined && { reconnectGraceSeconds: options.reconnectGraceSeconds }),
    ...(options.replay !== undefined && { replay: options.replay }),
  };
  const child = await spawnChild<{ url: string; port: number }>(name, "gateway.ts", { args, execArgv: [...CLI_NODE_FLAGS, ...EXTRA_NODE_FLAGS, ...(options.execArgv ?? [])] });
  return gatewayLike(ctx, name, child.ready.url, child, () => child.stop());
}

/** Anything that takes a RunAgentInput (our gateway, the Python reference adapter). */
export function gatewayLike(
  ctx: BenchContext,
  name: string,
  url: string,
  child: System["child"],
  stop: () => Promise<void>,
): System {
  return {
    name,
    url,
    child,
    request: async (prompt) => {
      const threadId = `bench-${randomUUID()}`;
      return { body: runAgentInput(threadId, ctx.workspace, prompt), contextId: await contextIdFor(ctx, threadId) };
    },
    stop,
  };
}

export async function startRelaySystem(ctx: BenchContext, kind: "floor" | "raw"): Promise<System> {
  const child = await spawnChild<{ url: string; port: number }>(`${kind} relay`, "relay.ts", { args: { kind, upstreamUrl: ctx.upstream.ready.url } });
  return {
    name: `${kind} relay`,
    url: child.ready.url,
    child,
    request: async (prompt) => {
      const contextId = `agui-${randomUUID().replaceAll("-", "")}00000000`;
      return { body: rpcBody(contextId, prompt), contextId };
    },
    stop: () => child.stop(),
  };
}
