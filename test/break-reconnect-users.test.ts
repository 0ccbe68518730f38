// break-reconnect: reconnects and observer cursors across users (JWT auth, docs/auth.md). A stranger who knows
// (or guesses) another user's thread, run, body and cursor must be answered exactly as for a thread that does
// not exist, must never get one of that user's events, and must not take the run over (it goes on for its owner).
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamProblems } from "./helpers/checks.js";
import { tokenFor } from "./helpers/jwks.js";
import { openSse, scriptByPrompt, sessionEventOf, slowTurn, startJwtStack, type JwtStack } from "./helpers/e2e.js";

const SLOW = "alice's slow secret";

let stack: JwtStack;
let alice: string;
let bob: string;

beforeAll(async () => {
  stack = await startJwtStack({
    kid: "k1",
    script: scriptByPrompt({ [SLOW]: () => slowTurn("session-alice", 150, 20) }),
    gateway: { reconnectGraceSeconds: 10 },
  });
  alice = await tokenFor(stack.key, "alice");
  bob = await tokenFor(stack.key, "bob");
});
afterAll(async () => {
  await stack.close();
});

async function post(path: string, token: string, body: unknown, lastEventId?: string): Promise<{ status: number; text: string; code?: string }> {
  const reply = await fetch(stack.gateway.url + path, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}`, ...(lastEventId !== undefined && { "Last-Event-ID": lastEventId }) },
    body: JSON.stringify(body),
  });
  const text = await reply.text();
  let code: string | undefined;
  try {
    code = JSON.parse(text).error?.code;
  } catch {
    code = undefined;
  }
  return { status: reply.status, text, ...(code !== undefined && { code }) };
}

describe("a stranger's reconnects and observations", () => {
  it("are answered as for a thread that does not exist, leak nothing, and leave alice's run to alice", async () => {
    const body = stack.input({ prompt: SLOW });
    const live = await openSse(stack.gateway.url + "/", body, { Authorization: `Bearer ${alice}` });
    expect(live.status).toBe(200);
    await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    const { executionId } = sessionEventOf(live.events) as { executionId: string };
    const ghost = { ...body, threadId: randomUUID(), runId: randomUUID() };
    const secret = /alice|tick|session-alice/;
    // The same request shapes for alice's real thread and for a thread nobody has.
    const cursors = (runId: string) => [`${runId}:0`, `${runId}:1`, `${runId}:3`, `${runId}:999999`, `${runId}#1:1`];
    for (const [i, cursor] of cursors(body.runId).entries()) {
      const stranger = await post("/", bob, body, cursor);
      const nobody = await post("/", bob, ghost, cursors(ghost.runId)[i]!);
      expect({ cursor, status: stranger.status, code: stranger.code }).toEqual({ cursor, status: nobody.status, code: nobody.code });
      expect(stranger.text).not.toMatch(secret);
      // Another body under alice's run id: not a RUN_ID_CONFLICT (that would say the run exists).
      const other = await post("/", bob, { ...body, messages: [{ id: "m-bob", role: "user", content: "bob" }] }, cursor);
      expect({ cursor, status: other.status, code: other.code }).toEqual({ cursor, status: nobody.status, code: nobody.code });
    }
    const observe = (exec: string) => `/extensions/iac-code/v1/executions/${exec}/subscribe`;
    for (const cursor of [undefined, `${body.runId}:0`, `${body.runId}:2`, `${body.runId}#1:1`, "garbage"]) {
      const stranger = await post(observe(executionId), bob, { threadId: body.threadId, runId: body.runId, rosInvocationId: "invocation-1" }, cursor);
      const nobody = await post(observe(randomUUID()), bob, { threadId: ghost.threadId, runId: ghost.runId, rosInvocationId: "invocation-1" }, cursor?.replace(body.runId, ghost.runId));
      expect({ cursor, status: stranger.status, code: stranger.code }).toEqual({ cursor, status: nobody.status, code: nobody.code });
      expect(stranger.status).not.toBe(200);
      expect(stranger.text).not.toMatch(secret);
    }
    // Bob on his own thread, naming alice's run and cursors: nothing of alice's either.
    const own = stack.input({ prompt: "hello" });
    const bobRun = await post("/", bob, own);
    expect(bobRun.status).toBe(200);
    const bobSession = /"executionId":"([^"]+)"/.exec(bobRun.text)![1]!;
    for (const cursor of [`${body.runId}:1`, `${body.runId}#1:1`, `${own.runId}:1`]) {
      const crossed = await post(observe(bobSession), bob, { threadId: own.threadId, runId: body.runId, rosInvocationId: "invocation-1" }, cursor);
      expect(crossed.text, cursor).not.toMatch(secret);
    }
    // Alice's run was never taken over: her stream goes on to its end.
    const events = await live.rest();
    expect(streamProblems(events)).toEqual([]);
    expect(events.at(-1)?.type).toBe("RUN_FINISHED");
    expect(stack.upstream.cancelled).toEqual([]);
  }, 30_000);
});
