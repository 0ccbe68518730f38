// Every refusal before the SSE stream starts, over raw HTTP: the order of the checks (auth → content
// type → size → JSON → object → language → envelope → admission), the JSON envelope
// {"error":{"code","message"}}, localization, the routes' 404/405, and the cancel extension.
import { existsSync } from "node:fs";
import { symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RawA2AServer, RawExchange, RawResponder, ScriptedA2AServer } from "../src/demo/index.js";
import { localize } from "../src/i18n/index.js";
import {
  expectValidRun,
  openSse,
  postRaw,
  rawHttp,
  readSse,
  scriptByPrompt,
  sessionEventOf,
  slowTurn,
  startStack,
  waitFor,
  type RawReply,
  type Stack,
} from "./helpers/e2e.js";

const TOKEN = "agui-secret";
const AUTH = { Authorization: `Bearer ${TOKEN}` };
const JSON_HEADERS = { "Content-Type": "application/json", ...AUTH };
const MiB = 1024 * 1024;
const SESSION_ID = "session-errors-1";

const KNOWN_CODES = new Set([
  "UNAUTHORIZED",
  "UNSUPPORTED_MEDIA_TYPE",
  "REQUEST_TOO_LARGE",
  "INVALID_JSON",
  "INVALID_INPUT",
  "STATE_UNAVAILABLE",
  "EXECUTION_LOST",
  "DUPLICATE_RUN_ID",
  "RUN_ID_CONFLICT",
  "THREAD_BUSY",
  "THREAD_BINDING_CONFLICT",
  "RESUME_REQUIRED",
  "EXECUTION_NOT_FOUND",
  "NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "A2A_UNAVAILABLE",
]);

let stack: Stack<ScriptedA2AServer>;

beforeAll(async () => {
  stack = await startStack({
    script: scriptByPrompt({ "stream slowly": () => slowTurn(SESSION_ID) }),
    gateway: { authToken: TOKEN },
  });
});

afterAll(async () => {
  await stack.close();
});

/** The refusal is exactly one JSON envelope with this status and code; returns its message. */
function expectRefusal(reply: RawReply, status: number, code: string): string {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get("content-type")).toMatch(/^application\/json/);
  expect(Object.keys(reply.json ?? {})).toEqual(["error"]);
  expect(Object.keys(reply.json.error).sort()).toEqual(["code", "message"]);
  expect(reply.json.error.code).toBe(code);
  expect(reply.json.error.message).toEqual(expect.any(String));
  return reply.json.error.message as string;
}

/** The request started a run: 200 SSE that ends with a terminal event. */
function expectRun(reply: RawReply): void {
  expect(reply.status, reply.text).toBe(200);
  expect(reply.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const { events } = readSse(reply.text);
  expect(events[0]?.type).toBe("RUN_STARTED");
  expect(["RUN_FINISHED", "RUN_ERROR"]).toContain(events.at(-1)?.type);
}

const post = (body: unknown, headers: Record<string, string> = JSON_HEADERS) => postRaw(stack.gateway.url, body, headers);

describe("auth (401 UNAUTHORIZED)", () => {
  it.each([
    ["no Authorization header", {}],
    ["another scheme", { Authorization: `Basic ${TOKEN}` }],
    ["a wrong token", { Authorization: "Bearer not-the-token" }],
    ["an extra space", { Authorization: `Bearer  ${TOKEN}` }],
    ["no space at all", { Authorization: `Bearer${TOKEN}` }],
    ["a bare scheme", { Authorization: "Bearer" }],
  ])("refuses %s", async (_name, auth) => {
    const reply = await post(stack.input(), { "Content-Type": "application/json", ...auth });
    expect(expectRefusal(reply, 401, "UNAUTHORIZED")).toBe("A valid bearer token is required.");
  });

  it("accepts the scheme case-insensitively (`bearer`)", async () => {
    expectRun(await post(stack.input(), { "Content-Type": "application/json", Authorization: `bearer ${TOKEN}` }));
  });
});

describe("content type (415 UNSUPPORTED_MEDIA_TYPE)", () => {
  it.each([["text/plain"], ["application/x-www-form-urlencoded"], ["application/jsonx"]])("refuses %s", async (type) => {
    const reply = await post(JSON.stringify(stack.input()), { ...AUTH, "Content-Type": type });
    expect(expectRefusal(reply, 415, "UNSUPPORTED_MEDIA_TYPE")).toBe("Content-Type must be application/json.");
  });

  it("refuses a request without Content-Type", async () => {
    const reply = await rawHttp(stack.gateway.url, { headers: AUTH, chunks: [JSON.stringify(stack.input())] });
    expectRefusal(reply, 415, "UNSUPPORTED_MEDIA_TYPE");
  });

  it("accepts parameters and any case: `Application/JSON; charset=utf-8`", async () => {
    expectRun(await post(stack.input(), { ...AUTH, "Content-Type": "Application/JSON; charset=utf-8" }));
  });
});

describe("size (413 REQUEST_TOO_LARGE)", () => {
  it("refuses a declared Content-Length over 12 MiB before reading the body", async () => {
    const reply = await rawHttp(stack.gateway.url, {
      headers: { ...JSON_HEADERS, "Content-Length": String(12 * MiB + 1) },
      chunks: ['{"threadId":'],
    });
    expect(expectRefusal(reply, 413, "REQUEST_TOO_LARGE")).toBe("The AG-UI request body is too large.");
  });

  it("refuses a chunked body that grows past 12 MiB without Content-Length", async () => {
    const chunk = Buffer.alloc(MiB, 0x20);
    const reply = await rawHttp(stack.gateway.url, { headers: JSON_HEADERS, chunks: Array.from({ length: 14 }, () => chunk) });
    expectRefusal(reply, 413, "REQUEST_TOO_LARGE");
  });

  it("still serves after refusing a large body", async () => {
    expect((await fetch(new URL("/health", stack.gateway.url))).status).toBe(200);
  });
});

describe("JSON (400 INVALID_JSON) and the top level (400 INVALID_INPUT)", () => {
  it.each([
    ["truncated JSON", '{"threadId": "t"'],
    ["an empty body", ""],
    ["trailing garbage", '{"a":1} x'],
  ])("refuses %s", async (_name, body) => {
    expect(expectRefusal(await post(body), 400, "INVALID_JSON")).toBe("The request body is not valid JSON.");
  });

  it("refuses invalid UTF-8 inside a JSON string", async () => {
    const bytes = Buffer.concat([Buffer.from('{"threadId":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]);
    expectRefusal(await post(new Uint8Array(bytes)), 400, "INVALID_JSON");
  });

  it.each([["an array", "[]"], ["a string", '"run"'], ["null", "null"], ["a number", "7"]])("refuses %s", async (_name, body) => {
    expect(expectRefusal(await post(body), 400, "INVALID_INPUT")).toBe("RunAgentInput must be a JSON object.");
  });
});

describe("envelope and forwardedProps (400 INVALID_INPUT naming the field)", () => {
  const omit = (key: string) => {
    const input: Record<string, unknown> = { ...stack.input() };
    delete input[key];
    return input;
  };

  it.each([
    ["threadId missing", () => omit("threadId"), "threadId"],
    ["runId empty", () => stack.input({ runId: "" }), "runId"],
    ["messages not an array", () => ({ ...stack.input(), messages: {} }), "messages"],
    ["state missing", () => omit("state"), "state"],
    ["forwardedProps missing", () => omit("forwardedProps"), "forwardedProps"],
    ["iacCode missing", () => stack.input({ forwardedProps: {} }), "forwardedProps.iacCode"],
    ["schemaVersion 2", () => stack.input({ iacCode: { schemaVersion: 2 } }), "forwardedProps.iacCode.schemaVersion"],
    ['schemaVersion "1"', () => stack.input({ iacCode: { schemaVersion: "1" } }), "forwardedProps.iacCode.schemaVersion"],
    ["an unknown iacCode key", () => stack.input({ iacCode: { bogus: true } }), "forwardedProps.iacCode.bogus"],
    ["rosInvocationId too long", () => stack.input({ iacCode: { rosInvocationId: "x".repeat(257) } }), "forwardedProps.iacCode.rosInvocationId"],
    ["thinking.budget 0", () => stack.input({ iacCode: { thinking: { enabled: true, budget: 0 } } }), "forwardedProps.iacCode.thinking.budget"],
    ["cleanupOnly as a string", () => stack.input({ iacCode: { cleanupOnly: "true" } }), "forwardedProps.iacCode.cleanupOnly"],
    ["runMode unknown", () => stack.input({ iacCode: { runMode: "fast" } }), "forwardedProps.iacCode.runMode"],
    ["client tools", () => stack.input({ tools: [{ name: "t", description: "d", parameters: {} }] }), "tools"],
  ])("refuses %s", async (_name, build, field) => {
    const message = expectRefusal(await post(build()), 400, "INVALID_INPUT");
    expect(message).toContain(field);
  });

  it("refuses a cwd outside the allowed roots", async () => {
    const message = expectRefusal(await post(stack.input({ iacCode: { cwd: path.dirname(stack.root) } })), 400, "INVALID_INPUT");
    expect(message).toContain("The iac-code workspace is outside the allowed roots.");
    expect(message).toContain("forwardedProps.iacCode.cwd");
  });

  it("refuses a cwd that escapes the root through a symlink", async () => {
    const link = path.join(stack.root, "escape");
    if (!existsSync(link)) await symlink(path.dirname(stack.root), link);
    const reply = await post(stack.input({ iacCode: { cwd: path.join(link, "inside") } }));
    expect(expectRefusal(reply, 400, "INVALID_INPUT")).toContain("outside the allowed roots");
    expect(existsSync(path.join(path.dirname(stack.root), "inside"))).toBe(false);
  });

  it("refuses a relative cwd", async () => {
    const message = expectRefusal(await post(stack.input({ iacCode: { cwd: "ws-1" } })), 400, "INVALID_INPUT");
    expect(message).toContain("The iac-code workspace must be an absolute path.");
  });

  it("refuses a cwd that is a file", async () => {
    const file = path.join(stack.root, "not-a-dir");
    await writeFile(file, "x");
    expect(expectRefusal(await post(stack.input({ iacCode: { cwd: file } })), 400, "INVALID_INPUT")).toContain("not a directory");
  });

  it("creates a missing workspace under the root and sends its resolved path upstream", async () => {
    const cwd = path.join(stack.root, "new", "deep", "ws");
    const input = stack.input({ iacCode: { cwd } });
    expectRun(await post(input));
    expect(existsSync(cwd)).toBe(true);
    const sent = stack.upstream.requests.find(
      (r) => (r.params as { message?: { messageId?: string } }).message?.messageId === input.messages[0]!.id,
    );
    expect((sent?.params as { message: { metadata: { iac_code: { cwd: string } } } }).message.metadata.iac_code.cwd).toBe(cwd);
  });

  it("refuses a run without a user message", async () => {
    const reply = await post(stack.input({ messages: [{ id: "a1", role: "assistant", content: "Hello" }] }));
    expect(expectRefusal(reply, 400, "INVALID_INPUT")).toContain("A new run requires a user message.");
  });

  it("refuses a remote image URL", async () => {
    const reply = await post(
      stack.input({
        messages: [
          {
            id: "u1",
            role: "user",
            content: [{ type: "image", source: { type: "url", value: "https://example.com/a.png", mimeType: "image/png" } }],
          },
        ],
      } as never),
    );
    const message = expectRefusal(reply, 400, "INVALID_INPUT");
    expect(message).toContain("Remote media URLs are not supported.");
    expect(message).toContain("messages.0.content.0.source");
  });

  it("refuses image data that is not strict base64", async () => {
    const reply = await post(
      stack.input({
        messages: [
          { id: "u1", role: "user", content: [{ type: "image", source: { type: "data", value: "iVBOR w0K\n", mimeType: "image/png" } }] },
        ],
      } as never),
    );
    expect(expectRefusal(reply, 400, "INVALID_INPUT")).toContain("The image data is not valid base64.");
  });

  it("a refused request does not take its runId", async () => {
    const input = stack.input();
    expectRefusal(await post({ ...input, tools: [{ name: "x" }] }), 400, "INVALID_INPUT");
    expectRun(await post(input));
  });
});

describe("the order of the checks", () => {
  it("auth before content type", async () => {
    expectRefusal(await post("{bad", { "Content-Type": "text/plain", Authorization: "Bearer wrong" }), 401, "UNAUTHORIZED");
  });

  it("content type before JSON", async () => {
    expectRefusal(await post("{bad", { ...AUTH, "Content-Type": "text/plain" }), 415, "UNSUPPORTED_MEDIA_TYPE");
  });

  it("size before JSON", async () => {
    const reply = await rawHttp(stack.gateway.url, { headers: { ...JSON_HEADERS, "Content-Length": String(13 * MiB) }, chunks: ["{bad"] });
    expectRefusal(reply, 413, "REQUEST_TOO_LARGE");
  });

  it("the object check before the envelope", async () => {
    expect(expectRefusal(await post("[1,2]"), 400, "INVALID_INPUT")).toBe("RunAgentInput must be a JSON object.");
  });
});

describe("localization", () => {
  const japanese = /[\u3040-\u30ff\u4e00-\u9fff]/;

  it("uses Accept-Language (`ja-JP, en;q=0.5` → ja)", async () => {
    const reply = await post(stack.input(), { "Content-Type": "application/json", "Accept-Language": "ja-JP, en;q=0.5" });
    const message = expectRefusal(reply, 401, "UNAUTHORIZED");
    expect(message).toBe(localize("ja", "A valid bearer token is required."));
    expect(message).toMatch(japanese);
  });

  it("weighs q values (`zh;q=0, en;q=0.2, ja;q=1` → ja)", async () => {
    const reply = await post("{bad", { ...JSON_HEADERS, "Accept-Language": "zh;q=0, en;q=0.2, ja;q=1" });
    expect(expectRefusal(reply, 400, "INVALID_JSON")).toBe(localize("ja", "The request body is not valid JSON."));
  });

  it("preferredLanguage in the body beats Accept-Language, even for an envelope error", async () => {
    const input: Record<string, unknown> = { ...stack.input({ iacCode: { preferredLanguage: "de" } }) };
    delete input["threadId"];
    const message = expectRefusal(await post(input, { ...JSON_HEADERS, "Accept-Language": "fr" }), 400, "INVALID_INPUT");
    expect(message.startsWith(localize("de", "Invalid AG-UI RunAgentInput envelope."))).toBe(true);
    expect(localize("de", "Invalid AG-UI RunAgentInput envelope.")).not.toBe("Invalid AG-UI RunAgentInput envelope.");
    expect(message).toContain("threadId");
  });

  it("the body's language cannot apply before the body is read (401 stays in the header's language)", async () => {
    const body = stack.input({ iacCode: { preferredLanguage: "de" } });
    const reply = await post(body, { "Content-Type": "application/json", "Accept-Language": "fr", Authorization: "Bearer nope" });
    expect(expectRefusal(reply, 401, "UNAUTHORIZED")).toBe(localize("fr", "A valid bearer token is required."));
  });

  it("an unsupported language falls back to English", async () => {
    const reply = await post("{bad", { ...JSON_HEADERS, "Accept-Language": "ko-KR, xx;q=0.9" });
    expect(expectRefusal(reply, 400, "INVALID_JSON")).toBe("The request body is not valid JSON.");
    const input: Record<string, unknown> = { ...stack.input({ iacCode: { preferredLanguage: "ko" } }), runId: 5 };
    expect(expectRefusal(await post(input), 400, "INVALID_INPUT")).toContain("Invalid AG-UI RunAgentInput envelope.");
  });
});

describe("routes", () => {
  it("an unknown path is a JSON 404 NOT_FOUND", async () => {
    expectRefusal(await postRaw(new URL("/nope", stack.gateway.url).href, {}, JSON_HEADERS), 404, "NOT_FOUND");
    const get = await fetch(new URL("/extensions/iac-code/v1/unknown", stack.gateway.url));
    expect(get.status).toBe(404);
    expect(((await get.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND");
  });

  it("GET / is a JSON 405 with Allow: POST", async () => {
    const response = await fetch(stack.gateway.url);
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("POST");
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("METHOD_NOT_ALLOWED");
  });

  it("POST /health is a JSON 405 that allows GET", async () => {
    const reply = await postRaw(new URL("/health", stack.gateway.url).href, {}, JSON_HEADERS);
    expectRefusal(reply, 405, "METHOD_NOT_ALLOWED");
    expect(reply.headers.get("allow")).toContain("GET");
  });
});

describe("the cancel extension", () => {
  const cancelUrl = (executionId: string) =>
    new URL(`/extensions/iac-code/v1/executions/${encodeURIComponent(executionId)}/cancel`, stack.gateway.url).href;

  it("checks auth, content type, size and JSON in that order", async () => {
    const body = { threadId: "t", rosInvocationId: "invocation-1" };
    expectRefusal(await postRaw(cancelUrl("e1"), body, { "Content-Type": "text/plain" }), 401, "UNAUTHORIZED");
    expectRefusal(await postRaw(cancelUrl("e1"), "{bad", { ...AUTH, "Content-Type": "text/plain" }), 415, "UNSUPPORTED_MEDIA_TYPE");
    const big = { ...body, padding: "x".repeat(64 * 1024) };
    expect(expectRefusal(await postRaw(cancelUrl("e1"), big, JSON_HEADERS), 413, "REQUEST_TOO_LARGE")).toBe(
      "The cancel request body is too large.",
    );
    expect(expectRefusal(await postRaw(cancelUrl("e1"), "{bad", JSON_HEADERS), 400, "INVALID_JSON")).toBe(
      "The cancel request body is not valid JSON.",
    );
    expect(expectRefusal(await postRaw(cancelUrl("e1"), "[]", JSON_HEADERS), 400, "INVALID_INPUT")).toBe(
      "The cancel request must be a JSON object.",
    );
  });

  it.each([
    ["threadId missing", { rosInvocationId: "invocation-1" }],
    ["rosInvocationId empty", { threadId: "t", rosInvocationId: "" }],
    ["threadId not a string", { threadId: 3, rosInvocationId: "invocation-1" }],
  ])("refuses a body with %s", async (_name, body) => {
    expect(expectRefusal(await postRaw(cancelUrl("e1"), body, JSON_HEADERS), 400, "INVALID_INPUT")).toBe(
      "threadId and rosInvocationId are required.",
    );
  });

  it("an unknown execution is 404 EXECUTION_NOT_FOUND", async () => {
    const reply = await postRaw(cancelUrl("no-such-execution"), { threadId: "no-such-thread", rosInvocationId: "invocation-1" }, JSON_HEADERS);
    expect(expectRefusal(reply, 404, "EXECUTION_NOT_FOUND")).toBe("The execution was not found.");
  });

  it("cancels an active run: 200 cancelled, the stream ends with RUN_ERROR CANCELLED, again → already_terminal", async () => {
    const input = stack.input({ prompt: "stream slowly" });
    const live = await openSse(stack.gateway.url, input, AUTH);
    expect(live.status).toBe(200);
    await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    const { executionId, taskId } = sessionEventOf(live.events) as { executionId: string; taskId: string };

    const wrongInvocation = await postRaw(cancelUrl(executionId), { threadId: input.threadId, rosInvocationId: "other" }, JSON_HEADERS);
    expectRefusal(wrongInvocation, 404, "EXECUTION_NOT_FOUND");

    const body = { threadId: input.threadId, rosInvocationId: "invocation-1" };
    const cancelled = await postRaw(cancelUrl(executionId), body, JSON_HEADERS);
    expect(cancelled.status).toBe(200);
    expect(cancelled.json).toEqual({ executionId, status: "cancelled" });
    expect(stack.upstream.cancelled).toContain(taskId);

    const events = await live.rest();
    const last = events.at(-1);
    expect(last).toMatchObject({ type: "RUN_ERROR", code: "CANCELLED" });
    // Spans are closed before the terminal event (the kernel's "canceled" status text is a message of its own).
    expectValidRun(events);
    expect(events.at(-2)?.type).toBe("TEXT_MESSAGE_END");

    await waitFor(() => stack.gateway.runs.activeRunCount === 0);
    const again = await postRaw(cancelUrl(executionId), body, JSON_HEADERS);
    expect(again.status).toBe(200);
    expect(again.json).toEqual({ executionId, status: "already_terminal" });
  });
});

describe("the cancel extension with a failing upstream", () => {
  let raw: Stack<RawA2AServer>;

  beforeAll(async () => {
    raw = await startStack({
      raw: async (ex: RawExchange, res: RawResponder) => {
        if (ex.method === "CancelTask") return res.json(500, { error: "kernel down" });
        // A turn that stays open until the gateway lets go of it.
        const contextId = ex.params.message.contextId as string;
        res.sseStart();
        res.sseFrame({ task: { id: "raw-cancel-task", contextId, status: { state: "TASK_STATE_SUBMITTED" } } });
        res.sseFrame({
          statusUpdate: {
            taskId: "raw-cancel-task",
            contextId,
            status: { state: "TASK_STATE_WORKING" },
            metadata: { iac_code: { iacCodeSessionId: SESSION_ID } },
          },
        });
        await res.closed;
      },
      gateway: { authToken: TOKEN },
    });
  });

  afterAll(async () => {
    await raw?.close();
  });

  it("answers a JSON A2A_UNAVAILABLE envelope, never a bare 500", async () => {
    const input = raw.input();
    const live = await openSse(raw.gateway.url, input, AUTH);
    try {
      const session = await live.until((e) => e.type === "CUSTOM" && e["name"] === "iac-code.session.v1");
      const { executionId } = session!["value"] as { executionId: string };
      const url = new URL(`/extensions/iac-code/v1/executions/${executionId}/cancel`, raw.gateway.url).href;
      const reply = await postRaw(url, { threadId: input.threadId, rosInvocationId: "invocation-1" }, JSON_HEADERS);
      expect(reply.status).toBeGreaterThanOrEqual(400);
      expect(reply.status).not.toBe(500);
      expectRefusal(reply, reply.status, "A2A_UNAVAILABLE");
    } finally {
      live.abort();
    }
  });
});

describe("garbage never gets a bare 500", () => {
  it("a deeply nested body (10 000 levels in `state`, 20 KB) is a 400 envelope, not a 500", async () => {
    const depth = 10_000;
    const text = JSON.stringify(stack.input()).replace('"state":{}', `"state":${"[".repeat(depth)}${"]".repeat(depth)}`);
    expect(text.length).toBeLessThan(64 * 1024);
    const reply = await post(text);
    expect(reply.status, reply.text).toBe(400);
    expect(["INVALID_JSON", "INVALID_INPUT"]).toContain(reply.json?.error?.code);
    expect((await fetch(new URL("/health", stack.gateway.url))).status).toBe(200);
  });

  it("answers 50 malformed requests with known JSON envelopes and stays healthy", async () => {
    const valid = () => stack.input() as unknown as Record<string, unknown>;
    const anyJson = fc.jsonValue({ maxDepth: 3 });
    const mutated = fc.tuple(fc.constantFrom("threadId", "runId", "state", "messages", "tools", "context", "forwardedProps", "resume", "parentRunId"), anyJson).map(
      ([key, value]) => JSON.stringify({ ...valid(), [key]: value }),
    );
    const mutatedIacCode = fc.tuple(fc.constantFrom("schemaVersion", "rosInvocationId", "cwd", "thinking", "alibabaCloud", "preferredLanguage", "model"), anyJson).map(
      ([key, value]) => {
        const input = valid();
        const props = input["forwardedProps"] as { iacCode: Record<string, unknown> };
        return JSON.stringify({ ...input, forwardedProps: { iacCode: { ...props.iacCode, [key]: value } } });
      },
    );
    const body = fc.oneof(
      anyJson.map((v) => JSON.stringify(v)),
      fc.string({ maxLength: 200 }),
      fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes).toString("latin1")),
      mutated,
      mutatedIacCode,
    );
    const headers = fc.record({
      contentType: fc.constantFrom("application/json", "application/json; charset=utf-8", "text/plain", "", "application/json;;;", "APPLICATION/JSON "),
      auth: fc.constantFrom(`Bearer ${TOKEN}`, `bearer ${TOKEN}`, "Bearer", "", `Bearer ${TOKEN} `, "Bearer \u00e9t\u00e9", `Token ${TOKEN}`),
      language: fc.constantFrom("", "ja", "*", "de;q=abc", "zh-CN,zh;q=0.9", ";;;,,,", "q=1", "fr;q=1e400"),
      route: fc.constantFrom("/", "/", "/", "/extensions/iac-code/v1/executions/x/cancel", "/extensions/iac-code/v1/executions/%2e%2e/cancel"),
    });
    const cases = fc.sample(fc.tuple(body, headers), { numRuns: 50, seed: 20240611 });
    expect(cases).toHaveLength(50);

    for (const [payload, h] of cases) {
      const requestHeaders: Record<string, string> = {};
      if (h.contentType) requestHeaders["Content-Type"] = h.contentType;
      if (h.auth) requestHeaders["Authorization"] = h.auth;
      if (h.language) requestHeaders["Accept-Language"] = h.language;
      const reply = await postRaw(new URL(h.route, stack.gateway.url).href, payload, requestHeaders);
      const context = `${h.route} ${JSON.stringify(h)} ${payload.slice(0, 120)} → ${reply.status} ${reply.text.slice(0, 200)}`;
      expect(reply.status, context).not.toBeGreaterThanOrEqual(500);
      if (reply.status === 200) {
        if (reply.headers.get("content-type")?.startsWith("text/event-stream")) expectRun(reply);
        else expect(reply.json, context).toMatchObject({ status: expect.stringMatching(/^(cancelled|already_terminal)$/) });
        continue;
      }
      expect(reply.headers.get("content-type"), context).toMatch(/^application\/json/);
      expect(KNOWN_CODES.has(reply.json?.error?.code), context).toBe(true);
      expect(reply.json.error.message, context).toEqual(expect.any(String));
    }
    const health = await fetch(new URL("/health", stack.gateway.url));
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: "ok" });
  });
});
