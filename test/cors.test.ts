// --cors-origins over HTTP: what a browser's preflight and its actual requests get back, for an allowed origin,
// for refused ones, with CORS off (the default), and on the console's own paths (same origin only).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleRoutes } from "../src/console/route.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { CORS_ALLOWED_HEADERS } from "../src/http/cors.js";
import { expectValidRun, readSse, startStack, type Stack } from "./helpers/e2e.js";
import { httpCall, postJson, type Reply } from "./helpers/http.js";

const APP = "https://app.example.com";
const TOKEN = "cors-test-token";
/** Every route the gateway serves, and routes of features still to come: a preflight does not depend on them. */
const API_ROUTES: [path: string, method: string][] = [
  ["/", "POST"],
  ["/capabilities", "GET"],
  ["/health", "GET"],
  ["/metrics", "GET"],
  ["/extensions/iac-code/v1/executions/exec-1/cancel", "POST"],
  ["/extensions/iac-code/v1/executions/exec-1/subscribe", "POST"],
  ["/connect", "POST"],
  ["/threads", "GET"],
  ["/threads/thread-1", "GET"],
  // A page forgets a user's thread with DELETE.
  ["/threads/thread-1", "DELETE"],
];
const REFUSED_ORIGINS = [
  "https://evil.example.com",
  "https://app.example.com.evil.example",
  "http://app.example.com",
  "https://app.example.com:8443",
  "https://APP.example.com",
  "null",
  `${APP}, https://evil.example.com`,
  `https://${"a".repeat(8_000)}.example.com`,
];

let stack: Stack<ScriptedA2AServer>;
let plain: Stack<ScriptedA2AServer>;
let consoleDist: string;

beforeAll(async () => {
  consoleDist = await mkdtemp(join(tmpdir(), "cors-console-"));
  const consolePages = consoleRoutes({ distDir: consoleDist, cwd: consoleDist, demo: false });
  [stack, plain] = await Promise.all([
    startStack({ gateway: { corsOrigins: [APP, "http://127.0.0.1:5173"], authToken: TOKEN, extraMiddleware: [consolePages] } }),
    startStack({ gateway: { authToken: TOKEN } }),
  ]);
});

afterAll(async () => {
  await stack?.close();
  await plain?.close();
  if (consoleDist) await rm(consoleDist, { recursive: true, force: true });
});

function preflight(base: string, path: string, origin: string, method = "POST"): Promise<Reply> {
  return httpCall(new URL(path, base).toString(), {
    method: "OPTIONS",
    headers: { Origin: origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": "content-type, authorization" },
  });
}

const corsHeadersOf = (reply: Reply): string[] => Object.keys(reply.headers).filter((name) => name.startsWith("access-control-"));
const varyOf = (reply: Reply): string[] => String(reply.headers["vary"] ?? "").split(",").map((v) => v.trim().toLowerCase());

describe("preflights", () => {
  it("are answered on every API route for an allowed origin", async () => {
    for (const [path, method] of API_ROUTES) {
      const reply = await preflight(stack.gateway.url, path, APP, method);
      expect(reply.status, path).toBe(204);
      expect(reply.text, path).toBe("");
      expect(reply.headers["access-control-allow-origin"], path).toBe(APP);
      expect(reply.headers["access-control-allow-methods"], path).toBe("GET,HEAD,POST,DELETE");
      expect(reply.headers["access-control-allow-headers"], path).toBe(CORS_ALLOWED_HEADERS.join(","));
      expect(reply.headers["access-control-max-age"], path).toBe("600");
      expect(reply.headers["access-control-allow-credentials"], path).toBeUndefined();
      expect(varyOf(reply), path).toContain("origin");
    }
    expect(CORS_ALLOWED_HEADERS).toEqual(["content-type", "authorization", "accept", "last-event-id", "traceparent", "tracestate"]);
    // Each listed origin is answered with itself, never with another one or a wildcard.
    const second = await preflight(stack.gateway.url, "/", "http://127.0.0.1:5173");
    expect(second.headers["access-control-allow-origin"]).toBe("http://127.0.0.1:5173");
  });

  it("give a refused origin no Access-Control-* header: the routes refuse OPTIONS as before", async () => {
    for (const origin of REFUSED_ORIGINS) {
      const reply = await preflight(stack.gateway.url, "/", origin);
      expect(corsHeadersOf(reply), origin.slice(0, 60)).toEqual([]);
      expect(reply.status).toBe(405);
      expect(reply.json).toEqual({ error: { code: "METHOD_NOT_ALLOWED", message: expect.any(String) } });
      expect(varyOf(reply)).toContain("origin");
    }
    const unknownPath = await preflight(stack.gateway.url, "/no-such-route", "https://evil.example.com");
    expect(corsHeadersOf(unknownPath)).toEqual([]);
    expect(unknownPath.json?.error.code).toBe("NOT_FOUND");
  });

  it("are not CORS without Access-Control-Request-Method: a plain OPTIONS is refused as before", async () => {
    const reply = await httpCall(stack.gateway.url, { method: "OPTIONS", headers: { Origin: APP } });
    expect(reply.status).toBe(405);
    expect(reply.headers["allow"]).toBe("POST");
    expect(corsHeadersOf(reply)).toEqual([]);
  });

  it("get no Access-Control-* header with CORS off (the default): same origin only", async () => {
    for (const [path, method] of API_ROUTES) {
      const reply = await preflight(plain.gateway.url, path, APP, method);
      expect(corsHeadersOf(reply), path).toEqual([]);
      expect([404, 405], path).toContain(reply.status);
    }
  });

  it("are not answered on the console's own paths", async () => {
    const reply = await preflight(stack.gateway.url, "/console/config.json", APP, "GET");
    expect(reply.status).toBe(405);
    expect(corsHeadersOf(reply)).toEqual([]);
    const page = await httpCall(new URL("/console/config.json", stack.gateway.url).toString(), { method: "GET", headers: { Origin: APP } });
    expect(page.status).toBe(200);
    expect(corsHeadersOf(page)).toEqual([]);
  });
});

describe("requests from another origin", () => {
  it("an allowed origin may read the run's stream and the headers a client needs", async () => {
    const reply = await postJson(stack.gateway.url, stack.input(), { Origin: APP, Authorization: `Bearer ${TOKEN}` });
    expect(reply.status).toBe(200);
    expect(reply.headers["content-type"]).toMatch(/^text\/event-stream/);
    expect(reply.headers["access-control-allow-origin"]).toBe(APP);
    expect(reply.headers["access-control-expose-headers"]).toBe("content-type,retry-after,www-authenticate");
    expect(reply.headers["access-control-allow-credentials"]).toBeUndefined();
    expect(varyOf(reply)).toContain("origin");
    const { events } = readSse(reply.text);
    expectValidRun(events);
    expect(events.at(-1)?.type).toBe("RUN_FINISHED");
  });

  it("an allowed origin may read a refusal's JSON envelope too", async () => {
    const unauthorized = await postJson(stack.gateway.url, stack.input(), { Origin: APP, Authorization: "Bearer wrong" });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.json).toEqual({ error: { code: "UNAUTHORIZED", message: expect.any(String) } });
    expect(unauthorized.headers["access-control-allow-origin"]).toBe(APP);
    const invalid = await postJson(stack.gateway.url, "{", { Origin: APP, Authorization: `Bearer ${TOKEN}` });
    expect(invalid.status).toBe(400);
    expect(invalid.headers["access-control-allow-origin"]).toBe(APP);
    const capabilities = await httpCall(new URL("/capabilities", stack.gateway.url).toString(), {
      method: "GET",
      headers: { Origin: APP, Authorization: `Bearer ${TOKEN}` },
    });
    expect(capabilities.status).toBe(200);
    expect(capabilities.headers["access-control-allow-origin"]).toBe(APP);
  });

  it("a refused origin's answer carries no Access-Control-* header, so no browser hands it to the page", async () => {
    for (const origin of REFUSED_ORIGINS) {
      const reply = await postJson(stack.gateway.url, stack.input(), { Origin: origin, Authorization: "Bearer wrong" });
      expect(reply.status).toBe(401);
      expect(corsHeadersOf(reply), origin.slice(0, 60)).toEqual([]);
    }
  });
});
