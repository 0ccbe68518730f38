// CopilotKit in front of the gateway, wired as an app would: a CopilotRuntime (v2, SSE mode, in-memory runner) on
// 127.0.0.1 serving an @ag-ui/client HttpAgent that points at the gateway, with `iacCode` added on the server by
// an AG-UI middleware (so the LLM key and AccessKey secrets never reach the page), and @copilotkit/core's client
// (what @copilotkit/react-core wraps) talking to the runtime. The core client needs a `window`: run under jsdom.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { HttpAgent, type AbstractAgent, type BaseEvent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { CopilotKitCore } from "@copilotkit/core";
import { CopilotRuntime, InMemoryAgentRunner, type AgentRunner } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";
import { expect } from "vitest";
import type { JsonObject } from "../../operators/types.js";
import { schemaProblems } from "./checks.js";
import { expectValidRun, readSse, type WireEvent } from "./e2e.js";

// CopilotKit's runtime telemetry is off for every test process (it reads these on each capture).
process.env["COPILOTKIT_TELEMETRY_DISABLED"] = "true";
process.env["DO_NOT_TRACK"] = "1";

/** One gateway exchange as the runtime's HttpAgent made it. */
export interface GatewayExchange {
  body: JsonObject;
  status: number;
  /** The SSE bytes (or the JSON refusal) once the response ended. */
  text: Promise<string>;
}

export interface CopilotRuntimeServer {
  /** The runtime's base URL (what `runtimeUrl` is set to in an app). */
  url: string;
  /** Every request the runtime's agents sent to the gateway, in order. */
  exchanges: GatewayExchange[];
  close(): Promise<void>;
}

/** Agent name → the iacCode its server-side middleware adds. */
export type AgentTable = Record<string, JsonObject>;

/** The two agents both CopilotKit suites register: `iac` (normal turns) and `iac-pipeline` (pipeline mode). */
export function iacAgents(iacCode: JsonObject): AgentTable {
  return { iac: iacCode, "iac-pipeline": { ...iacCode, rosInvocationId: "invocation-pipeline", runMode: "pipeline" } };
}

export interface RuntimeOptions {
  /** The runtime's runner, given the fetch the runtime's process uses (default: CopilotKit's in-memory runner). */
  runner?: (fetch: (url: string, init: RequestInit) => Promise<Response>) => AgentRunner;
  /** The agents' class (default: @ag-ui/client's HttpAgent). */
  agentClass?: new (config: { url: string; headers?: Record<string, string> }) => HttpAgent;
  /** Headers the agents send to the gateway (its static token). */
  headers?: Record<string, string>;
}

export async function startCopilotRuntime(gatewayUrl: string, agents: AgentTable, options: RuntimeOptions = {}): Promise<CopilotRuntimeServer> {
  const exchanges: GatewayExchange[] = [];
  // close() is the runtime's process ending: every request it has open to the gateway is dropped with it.
  const processAlive = new AbortController();
  const processFetch = (target: string, init: RequestInit): Promise<Response> =>
    fetch(target, { ...init, signal: init.signal ? AbortSignal.any([init.signal, processAlive.signal]) : processAlive.signal });
  const recordingFetch = async (target: string, init: RequestInit): Promise<Response> => {
    const response = await processFetch(target, init);
    const exchange: GatewayExchange = { body: JSON.parse(String(init.body)) as JsonObject, status: response.status, text: Promise.resolve("") };
    exchanges.push(exchange);
    if (!response.body) return response;
    const [forAgent, forTest] = response.body.tee();
    exchange.text = new Response(forTest).text().catch(() => "");
    return new Response(forAgent, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  const served: Record<string, AbstractAgent> = {};
  for (const [name, iacCode] of Object.entries(agents)) {
    const agent = new (options.agentClass ?? HttpAgent)({ url: gatewayUrl, ...(options.headers && { headers: options.headers }) });
    agent.fetch = recordingFetch;
    // The page never holds iacCode: the server adds it to every run of this agent.
    agent.use((input, next) => next.run({ ...input, forwardedProps: { ...(input.forwardedProps as object), iacCode } }));
    served[name] = agent;
  }
  // The runtime bundles @ag-ui/client 0.0.59 types; the agents are @ag-ui/client 1.0 HttpAgents (the same shape).
  const runtime = new CopilotRuntime({ agents: served as never, runner: options.runner?.(processFetch) ?? new InMemoryAgentRunner() });
  const handler = createCopilotNodeListener({ runtime, basePath: "/api/copilotkit" });
  const server: Server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api/copilotkit`,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        processAlive.abort();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface CopilotClient {
  core: CopilotKitCore;
  agent: AbstractAgent;
  /** Every event the client's agent delivered to its subscribers. */
  events: BaseEvent[];
  /** Errors CopilotKit reported through its subscribers. */
  errors: { code: string; message: string }[];
  /** Adds a user message and runs the agent, as the chat input does; resolves with the events of that run. */
  send(text: string): Promise<BaseEvent[]>;
}

/** A page: a CopilotKitCore connected to the runtime, with one agent (optionally on an existing thread). */
export async function connectClient(
  runtimeUrl: string,
  agentId: string,
  options: { properties?: Record<string, unknown>; threadId?: string } = {},
): Promise<CopilotClient> {
  const core = new CopilotKitCore({ runtimeUrl, ...(options.properties && { properties: options.properties }) });
  const errors: CopilotClient["errors"] = [];
  core.subscribe({ onError: ({ code, error }) => void errors.push({ code: String(code), message: error.message }) });
  for (let i = 0; i < 200 && core.runtimeConnectionStatus !== "connected"; i++) await new Promise((r) => setTimeout(r, 25));
  expect(core.runtimeConnectionStatus, "the client reached the runtime").toBe("connected");
  const agent = core.getAgent(agentId) as unknown as AbstractAgent;
  expect(agent, `the runtime serves ${agentId}`).toBeDefined();
  if (options.threadId !== undefined) agent.threadId = options.threadId;
  const events: BaseEvent[] = [];
  agent.subscribe({ onEvent: ({ event }) => void events.push(event) });
  return {
    core,
    agent,
    events,
    errors,
    async send(text) {
      const from = events.length;
      agent.addMessage({ id: randomUUID(), role: "user", content: text });
      await core.runAgent({ agent: agent as never });
      return events.slice(from);
    },
  };
}

/**
 * Every gateway stream the runtime read parses with EventSchema without losing a key and is a well-formed run,
 * and every event the client delivered parses with EventSchema. Returns the gateway streams' events.
 */
export async function expectValidTraffic(server: CopilotRuntimeServer, client?: CopilotClient): Promise<WireEvent[][]> {
  const streams: WireEvent[][] = [];
  for (const exchange of server.exchanges) {
    if (exchange.status !== 200) continue;
    const { events } = readSse(await exchange.text);
    // A run the client stopped (a disconnect) has no terminal event by design; its events must still parse.
    if (events.some((e) => e.type === "RUN_FINISHED" || e.type === "RUN_ERROR")) expectValidRun(events);
    else expect(schemaProblems(events)).toEqual([]);
    streams.push(events);
  }
  for (const event of client?.events ?? []) expect(() => EventSchema.parse(event), `client ${event.type}`).not.toThrow();
  return streams;
}

/** The RUN_FINISHED a client run ended with (fails otherwise). */
export function finishedOf(events: readonly BaseEvent[]): { runId: string; outcome?: { type: string; interrupts?: { id: string }[] } } {
  const last = events.at(-1) as { type: string } | undefined;
  expect(last?.type, "the run ends with RUN_FINISHED").toBe("RUN_FINISHED");
  return last as never;
}
