// Shared end-to-end plumbing: a real gateway in front of a real (scripted or raw) A2A 1.0 upstream on
// 127.0.0.1, a valid RunAgentInput, the real @ag-ui/client HttpAgent as the consumer, and raw-byte
// readers for the SSE framing contract. Every run read through here is schema-checked and verified.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { HttpAgent, type AgentSubscriber, type BaseEvent, type RunAgentInput } from "@ag-ui/client";
import { expect, vi } from "vitest";
import {
  createDemoScript,
  startRawA2AServer,
  startScriptedA2AServer,
  type RawA2AServer,
  type RawA2AServerOptions,
  type ScriptItem,
  type ScriptedA2AServer,
  type TurnContext,
  type TurnScript,
} from "../../src/demo/index.js";
import { startGateway, type GatewayOptions, type RunningGateway } from "../../src/gateway.js";
import type { JwtOptions } from "../../src/http/jwt.js";
import { AUDIENCE, ISSUER, signingKey, startJwksServer, type SigningKey } from "./jwks.js";
import { e2eDemoScript } from "./pacing.js";

import { runProblems } from "./checks.js";
import { silentLogger } from "./logger.js";

export { postRaw, rawHttp, replyOf, type RawReply } from "./http.js";
import { frame } from "./frames.js";

export { frame } from "./frames.js";
import { SseSplitter, parseSse, type SseRecord, type WireEvent } from "./sse.js";

export type { SseRecord, WireEvent } from "./sse.js";

export interface Stack<U> {
  gateway: RunningGateway;
  upstream: U;
  /** The allowed root (a fresh temp dir); workspaces live below it. */
  root: string;
  /** An existing workspace directory under `root`. */
  workspace: string;
  /** A valid RunAgentInput for this stack's workspace. */
  input(overrides?: InputOverrides): RunAgentInput;
  close(): Promise<void>;
}

export interface StackOptions {
  gateway?: Partial<GatewayOptions>;
  /** The scripted upstream serves h2c and the gateway speaks HTTP/2 to it. */
  http2?: boolean;
}

export { silentLogger } from "./logger.js";

/** A scripted SDK upstream (the demo script at the run's pacing, see pacing.ts, unless told otherwise) behind a gateway. */
export function startStack(options?: StackOptions & { script?: TurnScript; upstreamToken?: string }): Promise<Stack<ScriptedA2AServer>>;
/** A hand-driven raw upstream behind a gateway. */
export function startStack(options: StackOptions & { raw: RawA2AServerOptions["handle"] }): Promise<Stack<RawA2AServer>>;
export async function startStack(
  options: StackOptions & { script?: TurnScript; upstreamToken?: string; raw?: RawA2AServerOptions["handle"] } = {},
): Promise<Stack<ScriptedA2AServer | RawA2AServer>> {
  const upstream = options.raw
    ? await startRawA2AServer({ handle: options.raw })
    : await startScriptedA2AServer({
        script: options.script ?? e2eDemoScript(),
        ...(options.upstreamToken !== undefined && { token: options.upstreamToken }),
        ...(options.http2 && { http2: true }),
      });
  const root = await mkdtemp(path.join(tmpdir(), "agui-e2e-"));
  const workspace = path.join(root, "ws-1");
  await mkdir(workspace);
  let gateway: RunningGateway;
  try {
    gateway = await startGateway({
      host: "127.0.0.1",
      port: 0,
      a2aUrl: upstream.url,
      allowedRoots: [root],
      logger: silentLogger,
      // The gateway's own self-check runs in every test; close() fails the test on any violation.
      validateEvents: true,
      ...(options.http2 && { a2aHttp2: true }),
      ...options.gateway,
    });
  } catch (error) {
    await upstream.close();
    throw error;
  }
  return {
    gateway,
    upstream,
    root,
    workspace,
    input: (overrides) => runInput(workspace, overrides),
    close: async () => {
      const violations = (await gateway.metrics.validationViolations.get()).values.reduce((n, v) => n + v.value, 0);
      await gateway.close();
      await upstream.close();
      await rm(root, { recursive: true, force: true });
      expect(violations, "events the gateway's --validate-events self-check flagged").toBe(0);
    },
  };
}

/** A scripted stack whose gateway verifies user tokens against a JWKS server of its own. */
export interface JwtStack extends Stack<ScriptedA2AServer> {
  /** The one key the JWKS server publishes: `tokenFor(stack.key, sub)`. */
  key: SigningKey;
}

/** `startStack` with `jwt` set to a JWKS server of one key (`kid`); `jwt` adds to that configuration; `close` ends both. */
export async function startJwtStack(options: StackOptions & { kid: string; script?: TurnScript; jwt?: Partial<JwtOptions> }): Promise<JwtStack> {
  const { kid, jwt, ...stackOptions } = options;
  const key = await signingKey(kid);
  const jwks = await startJwksServer([key]);
  let stack: Stack<ScriptedA2AServer>;
  try {
    stack = await startStack({ ...stackOptions, gateway: { ...stackOptions.gateway, jwt: { jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE, ...jwt } } });
  } catch (error) {
    await jwks.close();
    throw error;
  }
  return {
    ...stack,
    key,
    close: async () => {
      try {
        await stack.close();
      } finally {
        await jwks.close();
      }
    },
  };
}

export { runInput, type InputOverrides } from "./run-input.js";
import { runInput, type InputOverrides } from "./run-input.js";

// ---- the real AG-UI client -------------------------------------------------------------------

export interface HttpAgentRun {
  /** The events as they were on the wire (before the client's enforcement could strip anything). */
  events: WireEvent[];
  /** The events the agent's subscribers saw (after enforce/verify). */
  agentEvents: BaseEvent[];
  agent: HttpAgent;
  /** The raw SSE bytes. */
  raw: string;
  status: number;
  headers: Headers;
}

export interface HttpAgentOptions {
  headers?: Record<string, string>;
  /** Reuse an agent (keeps its messages and pendingInterrupts); its threadId must match input.threadId. */
  agent?: HttpAgent;
  subscriber?: AgentSubscriber;
}

/**
 * One run through `HttpAgent.runAgent` with exactly our input (threadId, runId, messages, forwardedProps).
 * Fails unless the client accepted the stream, every wire event parses with EventSchema without losing a
 * key, the client warned about nothing, and the whole run passes verifyAguiStream.
 */
export async function runWithHttpAgent(url: string, input: RunAgentInput, opts: HttpAgentOptions = {}): Promise<HttpAgentRun> {
  let raw: Promise<string> = Promise.resolve("");
  let status = 0;
  let headers = new Headers();
  const teeingFetch = async (target: string, init: RequestInit): Promise<Response> => {
    const response = await fetch(target, init);
    status = response.status;
    headers = response.headers;
    if (!response.body) return response;
    const [forAgent, forTest] = response.body.tee();
    raw = new Response(forTest).text().catch(() => "");
    return new Response(forAgent, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  const agent =
    opts.agent ??
    new HttpAgent({
      url,
      threadId: input.threadId,
      initialMessages: input.messages,
      initialState: input.state,
      ...(opts.headers && { headers: opts.headers }),
    });
  if (opts.agent) {
    expect(agent.threadId).toBe(input.threadId);
    agent.setMessages(input.messages);
  }
  agent.fetch = teeingFetch;
  const agentEvents: BaseEvent[] = [];
  const warnings: unknown[][] = [];
  const warn = vi.spyOn(console, "warn").mockImplementation((...args: unknown[]) => void warnings.push(args));
  const error = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void warnings.push(args));
  try {
    await agent.runAgent(
      {
        runId: input.runId,
        tools: input.tools,
        context: input.context,
        forwardedProps: input.forwardedProps,
        ...(input.resume !== undefined && { resume: input.resume }),
      },
      {
        ...opts.subscriber,
        onEvent: (params) => {
          agentEvents.push(params.event);
          return opts.subscriber?.onEvent?.(params);
        },
      },
    );
  } finally {
    warn.mockRestore();
    error.mockRestore();
  }
  // Soft: the client's complaint (it strips unknown keys with a warning) is reported without hiding the test's own checks.
  expect.soft(warnings, "the AG-UI client warned").toEqual([]);
  const text = await raw;
  const events = readSse(text).events;
  expectValidRun(events);
  expect(agentEvents.map((e) => e.type)).toEqual(events.map((e) => e.type));
  return { events, agentEvents, agent, raw: text, status, headers };
}

/** Every event parses with the AG-UI schema without losing a key, and the run is well-formed. */
export function expectValidRun(events: readonly WireEvent[]): void {
  expect(runProblems(events)).toEqual([]);
}

/**
 * Splits the gateway's SSE bytes and asserts the framing contract: LF only, each record either the exact
 * heartbeat comment or one `data: ` line of compact JSON, and the stream ends on a record boundary.
 */
export function readSse(text: string): { events: WireEvent[]; records: SseRecord[] } {
  const { events, records, problems } = parseSse(text, { compact: true });
  expect(problems, "the SSE framing contract").toEqual([]);
  return { events, records };
}

/** An SSE response read incrementally, so a test can act mid-stream (cancel, disconnect). */
export interface LiveSse {
  status: number;
  headers: Headers;
  events: WireEvent[];
  /** Reads until an event matches (or the stream ends: then undefined). */
  until(predicate: (event: WireEvent) => boolean): Promise<WireEvent | undefined>;
  /** Reads to the end; returns all events (with `timeoutMs`: those read by then, the stream dropped). */
  rest(timeoutMs?: number): Promise<WireEvent[]>;
  abort(): void;
}

export async function openSse(url: string, body: unknown, headers: Record<string, string> = {}): Promise<LiveSse> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream", ...headers },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  return liveSse(response, controller);
}

/** Reads an SSE response already fetched (with `controller`'s signal) incrementally, as openSse does. */
export function liveSse(response: Response, controller: AbortController): LiveSse {
  const events: WireEvent[] = [];
  const reader = response.body!.getReader();
  const splitter = new SseSplitter();
  let ended = false;
  let seen = 0;
  const readMore = async (): Promise<boolean> => {
    if (ended) return false;
    const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true as const }));
    if (done) {
      ended = true;
      return false;
    }
    events.push(...splitter.push(value));
    return true;
  };
  const live: LiveSse = {
    status: response.status,
    headers: response.headers,
    events,
    async until(predicate) {
      for (;;) {
        while (seen < events.length) {
          const event = events[seen++]!;
          if (predicate(event)) return event;
        }
        if (!(await readMore())) return undefined;
      }
    },
    async rest(timeoutMs) {
      const timer = timeoutMs === undefined ? undefined : setTimeout(() => live.abort(), timeoutMs);
      while (await readMore());
      clearTimeout(timer);
      return events;
    },
    abort() {
      ended = true;
      controller.abort();
    },
  };
  return live;
}

// ---- small protocol helpers ------------------------------------------------------------------

export function typesOf(events: readonly { type: string }[]): string[] {
  return events.map((e) => e.type);
}

export function ofType(events: readonly WireEvent[], type: string): WireEvent[] {
  return events.filter((e) => e.type === type);
}

export function sessionEventOf(events: readonly WireEvent[]): { [key: string]: unknown } {
  const session = events.find((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
  expect(session, "the iac-code.session.v1 event").toBeDefined();
  return session!["value"] as { [key: string]: unknown };
}

/** Polls `check` every 25 ms until it returns true, at most `timeoutMs`. */
export async function waitFor(check: () => boolean, timeoutMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}

/** The text of a turn's user message, which hand-written scripts are chosen by. */
export function promptOf(turn: TurnContext): string {
  return (turn.userMessage.parts ?? []).map((p) => p.text ?? "").join("");
}

/** A script that plays `table[prompt]` for known prompts and the demo agent (no delays) for anything else. */
export function scriptByPrompt(table: Record<string, (turn: TurnContext) => ScriptItem[]>): TurnScript {
  const demo = createDemoScript({ frameDelayMs: 0 });
  return (turn) => table[promptOf(turn)]?.(turn) ?? demo(turn);
}

/**
 * A turn that streams `ticks` text deltas `delayMs` apart: long enough to act on mid-stream; a cancel ends it at once.
 * Its message id is the same every turn unless one is given (as a real kernel does, per message).
 */
export function slowTurn(sessionId: string, ticks = 200, delayMs = 50, messageId = "m-slow"): ScriptItem[] {
  return [
    frame.working({ sessionId }),
    ...Array.from({ length: ticks }, (_, i): ScriptItem[] => [frame.working({ text: `tick ${i} `, messageId }), { delayMs }]).flat(),
    frame.status("TASK_STATE_COMPLETED", { sessionId }),
  ];
}
