// A scripted OpenAI-compatible chat-completions server on 127.0.0.1, the LLM behind the real `iac-code a2a`
// kernel in the interop suite (a2a-upstream.md §9.2). Each request is answered by the current script, which
// inspects the incoming messages; anything the script does not claim gets a short `stop` completion so
// background/helper calls (titles, summaries) can never hang a test.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { readRequestText } from "../../src/demo/read-body.js";

export interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; type?: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  [key: string]: unknown;
}

export interface ChatRequest {
  model: string;
  stream: boolean;
  messages: ChatMessage[];
  tools: unknown[];
}

export interface ScriptedToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** What one model response says, in streaming order: reasoning, then text, then tool calls. */
export interface LlmReply {
  reasoning?: string[];
  text?: string[];
  toolCalls?: ScriptedToolCall[];
  /**
   * Send the first content chunk, then hold the response open until the client goes away (a cancel) or
   * `stallMs` passes, whichever comes first; a stall that times out finishes normally.
   */
  stallMs?: number;
  /** Refuse the call with this HTTP status and an OpenAI-style error body instead of answering. */
  httpError?: number;
}

/** `undefined` = not this script's business: answered with the default short completion. */
export type LlmScript = (request: ChatRequest) => LlmReply | undefined;

export interface FakeLlm {
  /** The base URL the kernel is configured with (`IAC_CODE_BASE_URL`), ending in `/v1`. */
  baseUrl: string;
  /** Every chat request received, in order. */
  requests: ChatRequest[];
  /** Responses that were still streaming when the client disconnected. */
  abandoned: number;
  setScript(script: LlmScript | undefined): void;
  close(): Promise<void>;
}

export const MODEL = "fake-model";
const DEFAULT_REPLY: LlmReply = { text: ["OK."] };
const BODY_LIMIT = 8 * 1024 * 1024;

/** The plain text of a message's `content`, whether it is a string or a list of parts. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => (typeof part === "object" && part !== null && typeof (part as { text?: unknown }).text === "string" ? (part as { text: string }).text : ""))
    .join("");
}

/** The text of the latest user message: scripts key on a marker word the test put into its prompt. */
export function lastUserText(request: ChatRequest): string {
  const users = request.messages.filter((m) => m.role === "user");
  return contentText(users.at(-1)?.content);
}

/** The tool-result messages of a request (present once the kernel ran or refused a tool). */
export function toolResults(request: ChatRequest): ChatMessage[] {
  return request.messages.filter((m) => m.role === "tool");
}

/**
 * True when this request is the main agent loop (it offers tools), not a helper call. Streaming or not:
 * after a failed streaming call the kernel retries the same turn without streaming.
 */
export function isAgentCall(request: ChatRequest): boolean {
  return request.tools.length > 0;
}

export async function startFakeLlm(): Promise<FakeLlm> {
  let script: LlmScript | undefined;
  const requests: ChatRequest[] = [];
  const open = new Set<ServerResponse>();
  const timers = new Set<NodeJS.Timeout>();
  const state = { abandoned: 0 };

  const server: Server = createServer((req, res) => {
    open.add(res);
    res.on("close", () => open.delete(res));
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(error) } });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (req.method === "GET" && url.pathname === "/v1/models") {
      sendJson(res, 200, { object: "list", data: [{ id: MODEL, object: "model", owned_by: "interop" }] });
      return;
    }
    if (req.method !== "POST" || url.pathname !== "/v1/chat/completions") {
      sendJson(res, 404, { error: { message: `no route ${req.method} ${url.pathname}` } });
      return;
    }
    const body = JSON.parse(await readRequestText(req, BODY_LIMIT)) as Record<string, unknown>;
    const request: ChatRequest = {
      model: typeof body["model"] === "string" ? body["model"] : "",
      stream: body["stream"] === true,
      messages: Array.isArray(body["messages"]) ? (body["messages"] as ChatMessage[]) : [],
      tools: Array.isArray(body["tools"]) ? body["tools"] : [],
    };
    requests.push(request);
    const reply = script?.(request) ?? DEFAULT_REPLY;
    if (reply.httpError !== undefined) {
      // 400 is not retried by the OpenAI SDK, so the kernel sees the refusal at once.
      sendJson(res, reply.httpError, { error: { message: "scripted refusal", type: "invalid_request_error", code: "scripted" } });
      return;
    }
    if (request.stream) await streamReply(res, reply);
    else sendJson(res, 200, completion(reply));
  }

  async function streamReply(res: ServerResponse, reply: LlmReply): Promise<void> {
    const id = `chatcmpl-${requests.length}`;
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      ({ id, object: "chat.completion.chunk", created, model: MODEL, choices: [{ index: 0, delta, finish_reason: finish }] });
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", Connection: "keep-alive" });
    const send = (payload: unknown) => res.write(`data: ${JSON.stringify(payload)}\n\n`);

    send(chunk({ role: "assistant", content: "" }));
    for (const piece of reply.reasoning ?? []) send(chunk({ reasoning_content: piece }));
    const texts = reply.text ?? [];
    if (reply.stallMs !== undefined) {
      send(chunk({ content: texts[0] ?? "Thinking about it" }));
      const gone = await stall(res, reply.stallMs);
      if (gone) {
        state.abandoned++;
        return;
      }
      for (const piece of texts.slice(1)) send(chunk({ content: piece }));
    } else {
      for (const piece of texts) send(chunk({ content: piece }));
    }
    const calls = reply.toolCalls ?? [];
    calls.forEach((call, index) => {
      // id and name first, then the arguments in fragments, as OpenAI streams them.
      send(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }));
      for (const fragment of fragments(call.arguments)) send(chunk({ tool_calls: [{ index, function: { arguments: fragment } }] }));
    });
    send(chunk({}, calls.length > 0 ? "tool_calls" : "stop"));
    send({ id, object: "chat.completion.chunk", created, model: MODEL, choices: [], usage: usage(reply) });
    res.write("data: [DONE]\n\n");
    res.end();
  }

  /** Resolves true if the client disconnected, false when the stall ran out. */
  function stall(res: ServerResponse, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        res.off("close", onClose);
        resolve(false);
      }, ms);
      timers.add(timer);
      const onClose = () => {
        clearTimeout(timer);
        timers.delete(timer);
        resolve(true);
      };
      res.once("close", onClose);
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    get abandoned() {
      return state.abandoned;
    },
    setScript(next) {
      script = next;
    },
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      for (const res of open) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function completion(reply: LlmReply): Record<string, unknown> {
  const calls = reply.toolCalls ?? [];
  return {
    id: "chatcmpl-plain",
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: MODEL,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: (reply.text ?? []).join(""),
          ...(reply.reasoning && { reasoning_content: reply.reasoning.join("") }),
          ...(calls.length > 0 && {
            tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })),
          }),
        },
        finish_reason: calls.length > 0 ? "tool_calls" : "stop",
      },
    ],
    usage: usage(reply),
  };
}

function usage(reply: LlmReply): Record<string, unknown> {
  const completionTokens = (reply.text ?? []).length + (reply.reasoning ?? []).length + (reply.toolCalls ?? []).length * 5;
  return { prompt_tokens: 100, completion_tokens: completionTokens, total_tokens: 100 + completionTokens, prompt_tokens_details: { cached_tokens: 0 } };
}

/** Splits a JSON argument string into a few pieces so the client has to reassemble it. */
function fragments(text: string): string[] {
  const size = Math.max(1, Math.ceil(text.length / 3));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}


function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

// ---- the scripted conversations of the interop suite ---------------------------------------------

/** Marker words a prompt carries to pick its conversation. */
export const MARKER = {
  reasoning: "interop-reasoning",
  permission: "interop-permission",
  stall: "interop-stall",
  llmError: "interop-llm-error",
  followUp: "interop-follow-up",
} as const;

export const SCRIPTED = {
  reasoning: ["Let me think ", "about a greeting."],
  greeting: ["Hello ", "from the fake model."],
  beforeTool: "I will create a.txt.",
  toolCallId: "call_interop_touch",
  toolArguments: JSON.stringify({ command: "touch a.txt" }),
  afterAllow: "Created a.txt.",
  afterDeny: "Understood, I did not create a.txt.",
  stallFirst: "Working on it ",
  followUp: "Second turn answered.",
} as const;

/**
 * One script for every interop conversation, keyed on the latest user message's marker. The permission
 * conversation is a bash call that needs an interactive permission; what comes after depends on the tool
 * result the kernel sends back (a real exit code, or its denial text).
 */
export const interopScript: LlmScript = (request) => {
  if (!isAgentCall(request)) return undefined;
  const prompt = lastUserText(request);
  if (prompt.includes(MARKER.reasoning)) return { reasoning: [...SCRIPTED.reasoning], text: [...SCRIPTED.greeting] };
  if (prompt.includes(MARKER.stall)) return { text: [SCRIPTED.stallFirst, "never sent"], stallMs: 30_000 };
  if (prompt.includes(MARKER.llmError)) return { httpError: 400 };
  if (prompt.includes(MARKER.followUp)) return { text: [SCRIPTED.followUp] };
  if (prompt.includes(MARKER.permission)) {
    const result = toolResults(request).find((m) => m.tool_call_id === SCRIPTED.toolCallId);
    if (!result) {
      return { text: [SCRIPTED.beforeTool], toolCalls: [{ id: SCRIPTED.toolCallId, name: "bash", arguments: SCRIPTED.toolArguments }] };
    }
    return { text: [/denied/i.test(contentText(result.content)) ? SCRIPTED.afterDeny : SCRIPTED.afterAllow] };
  }
  return undefined;
};
