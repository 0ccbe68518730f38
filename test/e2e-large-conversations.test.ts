// Conversations the way apps send them, large and hostile (2 MB of history; quotes, backslashes, U+2028/2029, NUL,
// emoji, a lone surrogate and JSON in the text), through HttpAgent and GatewayAgent, over HTTP/1.1 and h2c to the
// kernel, at a realistic pace and at once: a connection cut mid-stream is recovered with no event twice and none
// missing, the kernel gets each turn's message exactly once and whole, a reload shows the conversation, and a second
// verified user gets nothing of the first's thread.
import { randomUUID } from "node:crypto";
import { HttpAgent, type BaseEvent, type Message } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayAgent } from "../src/client/index.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { startCuttingProxy, type CuttingProxy } from "./helpers/cutting-proxy.js";
import { postRaw } from "./helpers/http.js";
import { tokenFor } from "./helpers/jwks.js";
import { promptOf, readSse, scriptByPrompt, slowTurn, startJwtStack, startStack, type JwtStack, type Stack } from "./helpers/e2e.js";
import { seeded } from "./helpers/seeded.js";

const USER_ID = 'u\u2028"<x>';
const HOSTILE = 'héllo "quoted" \\back\\slash\u2028line\u2029para 🚀🚀 \u0000nul </script> {"jsonrpc":"2.0"} ';
function history(n: number): Message[] {
  return Array.from({ length: n }, (_, i) =>
    i % 2 === 0
      ? { id: `u-${i}-${randomUUID()}`, role: "user" as const, content: HOSTILE.repeat(200) + i }
      : { id: `a-${i}-${randomUUID()}`, role: "assistant" as const, content: "ok " + HOSTILE.repeat(100) },
  );
}

/** "paced …" streams 60 deltas 15 ms apart, "fast …" 300 at once; anything else is the demo agent. */
function script() {
  const demo = scriptByPrompt({});
  return (turn: Parameters<typeof demo>[0]) => {
    const prompt = promptOf(turn);
    if (prompt.startsWith("paced ")) return slowTurn("s-paced", 60, 15);
    if (prompt.startsWith("fast ")) return slowTurn("s-fast", 300, 0);
    return demo(turn);
  };
}

const sentPrompts = (upstream: ScriptedA2AServer) =>
  upstream.requests.filter((r) => r.method === "SendStreamingMessage").map((r) => (r.params as { message: { parts: { text?: string }[] } }).message.parts.map((p) => p.text ?? "").join(""));

function texts(events: BaseEvent[]): string {
  return events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => (e as unknown as { delta: string }).delta).join("");
}

describe.each([
  ["HTTP/1.1", false],
  ["h2c", true],
])("large hostile conversations, cuts and reloads (%s to the kernel)", (_transport, http2) => {
  let stack: Stack<ScriptedA2AServer>;
  let proxy: CuttingProxy | undefined;
  let cut: () => number | undefined = () => undefined;
  beforeAll(async () => {
    stack = await startStack({ script: script(), http2, gateway: { reconnectGraceSeconds: 10 } });
  });
  afterAll(async () => {
    await proxy?.close();
    await stack?.close();
  });

  for (const kind of ["paced", "fast"] as const) {
    it(`${kind}: HttpAgent, then GatewayAgent through a cut, then a reload`, async () => {
      const random = seeded(kind === "paced" ? 7 : 11);
      for (let round = 0; round < 3; round++) {
        const threadId = randomUUID();
        const prompt = `${kind} ${HOSTILE.repeat(50)} \ud800 lone`;
        const messages: Message[] = [...history(40), { id: `u-last-${randomUUID()}`, role: "user", content: prompt }];
        const forwardedProps = { iacCode: { schemaVersion: 1, rosInvocationId: "inv-1", cwd: stack.workspace, userId: USER_ID } };
        const before = sentPrompts(stack.upstream).length;
        // Uncut reference with the plain HttpAgent.
        const plain = new HttpAgent({ url: stack.gateway.url, threadId, initialMessages: messages });
        const plainEvents: BaseEvent[] = [];
        await plain.runAgent({ runId: randomUUID(), forwardedProps }, { onEvent: ({ event }) => void plainEvents.push(event) });
        for (const e of plainEvents) expect(() => EventSchema.parse(e)).not.toThrow();
        expect(plainEvents.at(-1)?.type).toBe("RUN_FINISHED");
        // The same thread, next turn, through the cutting proxy with GatewayAgent.
        let connections = 0;
        const cutAt = 200 + Math.floor(random() * 6000);
        // A proxy of its own per round: fetch's pool would otherwise reuse the last round's connection, uncut.
        await proxy?.close();
        proxy = await startCuttingProxy(stack.gateway.url, () => cut());
        cut = () => (connections++ === 0 ? cutAt : undefined);
        const cutsBefore = proxy.cuts;
        const second = `${prompt} again`;
        const agent = new GatewayAgent({ url: proxy.url, threadId, initialMessages: [...plain.messages, { id: `u-2-${randomUUID()}`, role: "user", content: second }], backoffMs: 20 });
        const events: BaseEvent[] = [];
        let error: unknown;
        await agent.runAgent({ runId: randomUUID(), forwardedProps }, { onEvent: ({ event }) => void events.push(event) }).catch((e: unknown) => (error = e));
        cut = () => undefined;
        expect(error).toBeUndefined();
        for (const e of events) expect(() => EventSchema.parse(e)).not.toThrow();
        expect(events.filter((e) => e.type === "RUN_STARTED")).toHaveLength(1);
        expect(events.at(-1)?.type).toBe("RUN_FINISHED");
        expect(texts(events)).toBe(texts(plainEvents));
        expect(proxy.cuts).toBe(cutsBefore + 1);
        // The kernel got each turn's message exactly once, whole, and the user id as sent.
        expect(sentPrompts(stack.upstream).slice(before)).toEqual([prompt, second]);
        const sent = stack.upstream.requests.filter((r) => r.method === "SendStreamingMessage").at(-1)!;
        expect((sent.params as { message: { metadata: { iac_code: { user_id?: string } } } }).message.metadata.iac_code.user_id).toBe(USER_ID);
        // A reload: a fresh agent connects and sees the conversation's end.
        const reloaded = new GatewayAgent({ url: proxy.url, threadId });
        const seen: BaseEvent[] = [];
        await reloaded.connectAgent({ forwardedProps }, { onEvent: ({ event }) => void seen.push(event) });
        for (const e of seen) expect(() => EventSchema.parse(e)).not.toThrow();
        expect(seen.at(-1)?.type).toBe("RUN_FINISHED");
        expect(reloaded.messages.filter((m) => m.role === "user").map((m) => m.content).slice(-2)).toEqual([prompt, second]);
      }
    }, 120_000);
  }
});

describe("a second verified user", () => {
  let stack: JwtStack;
  beforeAll(async () => {
    stack = await startJwtStack({ kid: "k1", script: script(), jwt: { jwksCooldownMs: 0 } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("gets neither the first's large conversation, its status, nor its thread", async () => {
    const alice = await tokenFor(stack.key, "alice");
    const bob = await tokenFor(stack.key, "bob");
    const input = stack.input({ prompt: "paced" });
    const body = { ...input, messages: [...history(20), ...input.messages] };
    const live = await postRaw(stack.gateway.url, body, { "Content-Type": "application/json", Authorization: `Bearer ${alice}` });
    expect(live.status).toBe(200);
    expect(readSse(live.text).events.at(-1)?.type).toBe("RUN_FINISHED");
    const status = await fetch(`${stack.gateway.url}threads/${input.threadId}`, { headers: { Authorization: `Bearer ${bob}` } });
    expect(status.status).toBe(404);
    const connect = await postRaw(`${stack.gateway.url}connect`, { threadId: input.threadId, runId: randomUUID(), messages: [], state: {}, tools: [], context: [], forwardedProps: input.forwardedProps }, { "Content-Type": "application/json", Authorization: `Bearer ${bob}` });
    expect(connect.text).not.toContain(HOSTILE.slice(0, 10));
    expect(connect.text).not.toContain("tick ");
    const stolen = await postRaw(stack.gateway.url, { ...stack.input({ prompt: "fast" }), threadId: input.threadId }, { "Content-Type": "application/json", Authorization: `Bearer ${bob}` });
    expect(stolen.status).toBe(409);
    expect(stolen.json.code ?? stolen.json.error?.code).toBe("THREAD_BINDING_CONFLICT");
    // And the gateway still answers.
    expect((await fetch(`${stack.gateway.url}health`)).status).toBe(200);
  }, 60_000);
});
