// Outsider checks of --cors-origins on the answers cors.test does not try: the body budget's 503 (with its
// Retry-After), the body deadline's 408, a 413, the observer's stream and the cancel route's 404. An allowed
// origin can read each (and the headers it needs); a refused one gets no Access-Control-* header on any.
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { startStack, type Stack } from "./helpers/e2e.js";
import { httpCall, postJson, type Reply } from "./helpers/http.js";

const APP = "https://app.example.com";
const EVIL = "https://evil.example.com";
let stack: Stack<ScriptedA2AServer>;

beforeAll(async () => {
  stack = await startStack({ gateway: { corsOrigins: [APP], bodyBudgetMib: 4 / 1024, bodyTimeoutSeconds: 1 } });
});

afterAll(async () => {
  await stack?.close();
});

const corsHeadersOf = (headers: Reply["headers"]): string[] => Object.keys(headers).filter((name) => name.startsWith("access-control-"));

/** Sends headers and the first bytes of a body, then nothing: the body deadline cuts it. */
function stalledBody(origin: string): Promise<{ status: number; headers: Reply["headers"] }> {
  return new Promise((resolve, reject) => {
    const url = new URL(stack.gateway.url);
    const req = request(
      { host: url.hostname, port: url.port, path: "/", method: "POST", headers: { Origin: origin, "Content-Type": "application/json", "Content-Length": "1000" } },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers as Reply["headers"] }));
      },
    );
    req.on("error", reject);
    req.write("{");
  });
}

describe("CORS on the answers of the limits", () => {
  it("503 SERVER_BUSY (body budget): readable with its Retry-After by an allowed origin only", async () => {
    const big = JSON.stringify(stack.input({ prompt: "z".repeat(8_000) }));
    const allowed = await postJson(stack.gateway.url, big, { Origin: APP });
    expect(allowed.status).toBe(503);
    expect(allowed.headers["access-control-allow-origin"]).toBe(APP);
    expect(String(allowed.headers["access-control-expose-headers"]).toLowerCase()).toContain("retry-after");
    expect(allowed.headers["access-control-allow-credentials"]).toBeUndefined();
    const refused = await postJson(stack.gateway.url, big, { Origin: EVIL });
    expect(refused.status).toBe(503);
    expect(corsHeadersOf(refused.headers)).toEqual([]);
  });

  it("408 (body deadline): readable by an allowed origin only", async () => {
    const allowed = await stalledBody(APP);
    expect(allowed.status).toBe(408);
    expect(allowed.headers["access-control-allow-origin"]).toBe(APP);
    const refused = await stalledBody(EVIL);
    expect(refused.status).toBe(408);
    expect(corsHeadersOf(refused.headers)).toEqual([]);
  });

  it("the cancel route's 404 and the observer route's 404: readable by an allowed origin only", async () => {
    for (const route of ["cancel", "subscribe"]) {
      const url = new URL(`extensions/iac-code/v1/executions/nope/${route}`, stack.gateway.url).toString();
      const body = { threadId: "t", rosInvocationId: "r", ...(route === "subscribe" && { runId: "x" }) };
      const allowed = await httpCall(url, { headers: { Origin: APP, "Content-Type": "application/json" }, body: JSON.stringify(body) });
      expect(allowed.status, allowed.text).toBe(404);
      expect(allowed.headers["access-control-allow-origin"]).toBe(APP);
      const refused = await httpCall(url, { headers: { Origin: EVIL, "Content-Type": "application/json" }, body: JSON.stringify(body) });
      expect(refused.status).toBe(404);
      expect(corsHeadersOf(refused.headers)).toEqual([]);
    }
  });

  it("a preflight carrying credentials mode is never answered with Allow-Credentials", async () => {
    const reply = await httpCall(new URL("/", stack.gateway.url).toString(), {
      method: "OPTIONS",
      headers: { Origin: APP, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type, authorization", Cookie: "a=b" },
    });
    expect(reply.status).toBe(204);
    expect(reply.headers["access-control-allow-origin"]).toBe(APP);
    expect(reply.headers["access-control-allow-credentials"]).toBeUndefined();
  });
});
