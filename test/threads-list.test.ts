// GET /threads: a user's own threads, most recently active first, a page at a time, on the file store and on
// Redis (an index per owner, checked against the records). Hostile queries first; nobody sees another's threads.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localize } from "../src/i18n/index.js";
import { FileThreadStore } from "../src/state/file-store.js";
import { RedisThreadStore } from "../src/state/redis-store.js";
import { expectValidRun, openSse, postRaw, readSse, scriptByPrompt, slowTurn, startJwtStack, startStack, type JwtStack, type RawReply } from "./helpers/e2e.js";
import { tokenFor } from "./helpers/jwks.js";
import { startRedis, type RedisServer } from "./helpers/redis.js";

const TRUSTED_TOKEN = "runtime-secret-list";
const SLOW = "stream slowly";

interface Subject {
  gateway: Partial<Parameters<typeof startStack>[0] & object>["gateway"];
  /** Removes a thread's record behind the gateway's back (an index entry left without its record). */
  forget(threadId: string): Promise<void>;
  close(): Promise<void>;
}

const subjects: [string, () => Promise<Subject>][] = [
  [
    "the file store",
    async () => {
      const stateDir = await mkdtemp(path.join(tmpdir(), "agui-list-"));
      return {
        gateway: { stateDir },
        forget: (threadId) => new FileThreadStore({ dir: stateDir }).remove(threadId),
        close: () => rm(stateDir, { recursive: true, force: true }),
      };
    },
  ],
  [
    "Redis",
    async () => {
      const redis: RedisServer = await startRedis();
      const client = new Redis(redis.url);
      const store = new RedisThreadStore({ client });
      return {
        gateway: { stateStore: redis.url },
        forget: async (threadId) => void (await client.del(store.threadKey(threadId))),
        close: async () => {
          client.disconnect();
          await redis.stop();
        },
      };
    },
  ],
];

describe.each(subjects)("GET /threads on %s", (_name, make) => {
  let subject: Subject;
  let stack: JwtStack;
  const as = async (user: string) => ({ "Content-Type": "application/json", Authorization: `Bearer ${await tokenFor(stack.key, user)}` });
  const list = async (user: string | Record<string, string>, query = "") =>
    fetch(`${stack.gateway.url}threads${query}`, { headers: typeof user === "string" ? await as(user) : user }).then(async (r) => {
      const text = await r.text();
      return { status: r.status, headers: r.headers, text, json: JSON.parse(text) } as RawReply;
    });
  const startThread = async (user: string) => {
    const input = stack.input();
    const reply = await postRaw(stack.gateway.url, input, await as(user));
    expect(reply.status, reply.text).toBe(200);
    expectValidRun(readSse(reply.text).events);
    return input.threadId;
  };

  beforeAll(async () => {
    subject = await make();
    stack = await startJwtStack({
      kid: "list-key",
      script: scriptByPrompt({ [SLOW]: () => slowTurn("session-list-1") }),
      gateway: { authToken: TRUSTED_TOKEN, ...subject.gateway },
    });
  });
  afterAll(async () => {
    await stack.close();
    await subject.close();
  });

  it("refuses a malformed query with 400 INVALID_INPUT, and callers that are not users with 404", async () => {
    for (const query of ["?limit=0", "?limit=101", "?limit=x", "?limit=1&limit=2", "?cursor=%%%", "?cursor=bm90LWEtY3Vyc29y", "?other=1"]) {
      const reply = await list("alice", query);
      expect(reply.status, query).toBe(400);
      expect(reply.json.error.code).toBe("INVALID_INPUT");
    }
    const reply = await list({ Authorization: `Bearer ${await tokenFor(stack.key, "alice")}`, "Accept-Language": "pt" }, "?limit=0");
    expect(reply.json.error.message).toBe(localize("pt", "limit must be an integer from 1 to 100, and cursor a nextCursor this route returned."));
    expect((await list({ Authorization: `Bearer ${TRUSTED_TOKEN}` })).status).toBe(404);
    expect((await list({})).status).toBe(401);
  });

  it("lists the caller's threads only, most recently active first, a page at a time", async () => {
    const first = await startThread("dora");
    const second = await startThread("dora");
    const third = await startThread("dora");
    const strangers = await startThread("eve");
    // A new turn makes the first thread the most recently active.
    const again = stack.input({ threadId: first });
    expect((await postRaw(stack.gateway.url, again, await as("dora"))).status).toBe(200);

    const page1 = await list("dora", "?limit=2");
    expect(page1.status, page1.text).toBe(200);
    expect(page1.json.threads.map((t: { threadId: string }) => t.threadId)).toEqual([first, third]);
    for (const thread of page1.json.threads) {
      expect(thread).toEqual({ threadId: expect.any(String), createdAt: expect.any(String), lastActiveAt: expect.any(String), status: "idle", pendingInterrupts: 0 });
      expect(Date.parse(thread.lastActiveAt)).toBeGreaterThanOrEqual(Date.parse(thread.createdAt));
    }
    const page2 = await list("dora", `?limit=2&cursor=${page1.json.nextCursor}`);
    expect(page2.json.threads.map((t: { threadId: string }) => t.threadId)).toEqual([second]);
    expect(page2.json.nextCursor).toBeUndefined();
    const eve = await list("eve");
    expect(eve.json).toEqual({ threads: [expect.objectContaining({ threadId: strangers })] });
  });

  it("shows a running thread as running, and forgets a thread whose record is gone", async () => {
    const input = stack.input({ prompt: SLOW });
    const live = await openSse(stack.gateway.url, input, await as("finn"));
    await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
    expect((await list("finn")).json.threads).toEqual([expect.objectContaining({ threadId: input.threadId, status: "running" })]);
    live.abort();
    await live.rest();
    const gone = await startThread("finn");
    await subject.forget(gone);
    expect((await list("finn")).json.threads.map((t: { threadId: string }) => t.threadId)).toEqual([input.threadId]);
  });

  describe("DELETE /threads/{threadId}", () => {
    const remove = async (threadId: string, headers: Record<string, string>) =>
      fetch(`${stack.gateway.url}threads/${encodeURIComponent(threadId)}`, { method: "DELETE", headers }).then(async (r) => ({ status: r.status, text: await r.text() }));

    it("answers a stranger, an unknown thread and a malformed id alike: 404 NOT_FOUND; the owner's thread stays", async () => {
      const threadId = await startThread("gina");
      const stranger = await remove(threadId, await as("hank"));
      const unknown = await remove("no-such-thread", await as("hank"));
      expect(stranger.status).toBe(404);
      expect(JSON.parse(stranger.text)).toEqual(JSON.parse(unknown.text));
      expect(JSON.parse(stranger.text).error.code).toBe("NOT_FOUND");
      expect((await remove("%E0%A4%A", await as("gina"))).status).toBe(404);
      expect((await list("gina")).json.threads.map((t: { threadId: string }) => t.threadId)).toEqual([threadId]);
      expect((await remove(threadId, {})).status).toBe(401);
    });

    it("cancels the owner's running run, forgets the thread and its run ids (204)", async () => {
      const input = stack.input({ prompt: SLOW });
      const owner = await as("ivan");
      const live = await openSse(stack.gateway.url, input, owner);
      await live.until((e) => e.type === "TEXT_MESSAGE_CONTENT");
      const reply = await remove(input.threadId, owner);
      expect(reply.status, reply.text).toBe(204);
      expect(reply.text).toBe("");
      const events = await live.rest();
      expectValidRun(events);
      expect(["RUN_ERROR", "RUN_FINISHED"]).toContain(events.at(-1)?.type);
      expect((await list("ivan")).json.threads).toEqual([]);
      expect((await remove(input.threadId, owner)).status).toBe(404);
      // The thread is gone with its run ids: the same thread and run id start afresh, for anyone.
      const again = await postRaw(stack.gateway.url, { ...input, messages: stack.input().messages }, await as("judy"));
      expect(again.status, again.text).toBe(200);
      expect((await list("judy")).json.threads.map((t: { threadId: string }) => t.threadId)).toEqual([input.threadId]);
    });

    it("lets the trusted caller forget a user's thread", async () => {
      const threadId = await startThread("kim");
      expect((await remove(threadId, { Authorization: `Bearer ${TRUSTED_TOKEN}` })).status).toBe(204);
      expect((await list("kim")).json.threads).toEqual([]);
    });
  });
});
