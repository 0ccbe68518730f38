// One contract, every ThreadStore: the run layer may be given any of them and must see the same behaviour — the
// same text stored, the same refusals before anything is written, the same StateUnavailableError for a record that
// cannot be trusted. Each store says how to plant a raw stored record and read one back.
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FileThreadStore } from "../src/state/file-store.js";
import { serializeThreadRecord, serializeThreadRecordCompact } from "../src/state/record-text.js";
import { createRedisConnection, closeRedisConnection } from "../src/state/redis-connection.js";
import { RedisThreadStore } from "../src/state/redis-store.js";
import { MemoryThreadStore, StateUnavailableError, type ThreadRecord, type ThreadStore } from "../src/state/thread-store.js";
import { silentLogger } from "./helpers/logger.js";
import { startRedis, type RedisServer } from "./helpers/redis.js";
import { threadRecord } from "./helpers/thread-record.js";

interface Subject {
  store: ThreadStore;
  /** Stores raw text (or bytes) as thread `threadId`'s record, bypassing every check. */
  plant(threadId: string, content: string | Buffer): Promise<void>;
  /** The stored text, exactly. */
  storedText(threadId: string): Promise<string | undefined>;
  /** The text this store keeps for a record: the durable stores' canonical text, the memory store's without whitespace. */
  textOf(record: ThreadRecord): string;
  /** Whether the store keeps bytes (so invalid UTF-8 can be planted); the memory store keeps strings. */
  holdsBytes: boolean;
  cleanup(): Promise<void>;
}

let redis: RedisServer;
let redisClient: ReturnType<typeof createRedisConnection>;

const subjects: Array<[string, () => Promise<Subject>]> = [
  [
    "MemoryThreadStore",
    async () => {
      const threads = new Map<string, string>();
      return {
        store: new MemoryThreadStore({ threads }),
        plant: async (threadId, content) => void threads.set(threadId, content.toString()),
        storedText: async (threadId) => threads.get(threadId),
        textOf: serializeThreadRecordCompact,
        holdsBytes: false,
        cleanup: async () => undefined,
      };
    },
  ],
  [
    "FileThreadStore",
    async () => {
      const dir = await fsp.mkdtemp(path.join(os.tmpdir(), "agui-contract-"));
      const store = new FileThreadStore({ dir });
      return {
        store,
        plant: async (threadId, content) => {
          await fsp.mkdir(path.join(dir, "threads"), { recursive: true });
          await fsp.writeFile(store.fileFor(threadId), content);
        },
        storedText: (threadId) => fsp.readFile(store.fileFor(threadId), "utf8").catch(() => undefined),
        textOf: serializeThreadRecord,
        holdsBytes: true,
        cleanup: () => fsp.rm(dir, { recursive: true, force: true }),
      };
    },
  ],
  [
    "RedisThreadStore",
    async () => {
      // One server for the file; a prefix per test keeps the tests apart.
      const store = new RedisThreadStore({ client: redisClient, prefix: `contract-${randomUUID()}:` });
      return {
        store,
        plant: async (threadId, content) => void (await redisClient.hset(store.threadKey(threadId), "record", content, "version", "1")),
        storedText: async (threadId) => (await redisClient.hget(store.threadKey(threadId), "record")) ?? undefined,
        textOf: serializeThreadRecord,
        holdsBytes: true,
        cleanup: async () => undefined,
      };
    },
  ],
];

beforeAll(async () => {
  redis = await startRedis();
  redisClient = createRedisConnection({ url: redis.url, logger: silentLogger });
});

afterAll(async () => {
  await closeRedisConnection(redisClient);
  await redis.stop();
});

describe.each(subjects)("%s honours the ThreadStore contract", (_name, make) => {
  let s: Subject;
  beforeEach(async () => {
    s = await make();
  });
  afterEach(async () => {
    await s.cleanup();
  });

  it("loads undefined for a thread it never saw", async () => {
    expect(await s.store.load("never-seen")).toBeUndefined();
  });

  it("stores the canonical text byte for byte and loads back an equal record", async () => {
    const saved = threadRecord();
    await s.store.save(saved);
    expect(await s.storedText("thread-1")).toBe(s.textOf(saved));
    const loaded = await s.store.load("thread-1");
    expect(loaded).toEqual(saved);
    expect(serializeThreadRecord(loaded!)).toBe(serializeThreadRecord(saved));
  });

  it("keeps a thread's owner (a user id, never a token) byte for byte", async () => {
    const owned = threadRecord("thread-1", { owner: "alice@example.com" });
    await s.store.save(owned);
    expect(await s.storedText("thread-1")).toBe(s.textOf(owned));
    expect(s.textOf(owned)).toMatch(/"owner": ?"alice@example.com"/);
    expect(await s.store.load("thread-1")).toEqual(owned);
  });

  it("replaces the record on the next save", async () => {
    await s.store.save(threadRecord());
    const next = threadRecord("thread-1", { terminalExecutionIds: ["exec-0", "exec-1"] });
    await s.store.save(next);
    expect(await s.store.load("thread-1")).toEqual(next);
  });

  it("keeps ids that are not plain file names apart (case, unicode, length)", async () => {
    const ids = ["Thread-A", "thread-a", "スレッド", "a/b\\c", "x".repeat(300)];
    for (const id of ids) await s.store.save(threadRecord(id));
    for (const id of ids) expect((await s.store.load(id))?.threadId).toBe(id);
    expect(new Set(await s.store.threadIds!())).toEqual(new Set(ids));
  });

  it.each<[string, (r: ThreadRecord) => ThreadRecord]>([
    ["a wrong schemaVersion", (r) => ({ ...r, schemaVersion: 2 as 1 })],
    ["a malformed run digest", (r) => ({ ...r, runDigests: [{ runId: "r", digest: "not-a-digest" }] })],
    ["an empty cwd", (r) => ({ ...r, cwd: "" })],
    ["an empty owner", (r) => ({ ...r, owner: "" })],
    ["a non-finite pipelineSequence", (r) => ({ ...r, execution: { ...r.execution, pipelineSequence: Number.NaN } })],
    ["text among the text digests", (r) => ({ ...r, execution: { ...r.execution, textSnapshotDigests: ["the assistant's words"] } })],
    ["text in the parked span", (r) => ({ ...r, execution: { ...r.execution, parkedSpan: { traceId: "the prompt", spanId: "00f067aa0ba902b7", parkedAt: "2030-01-01T00:00:00.000Z" } } })],
    ["an extra field in the parked span", (r) => ({ ...r, execution: { ...r.execution, parkedSpan: { ...r.execution.parkedSpan!, traceState: "vendor=x" } as never } })],
  ])("refuses to save a record with %s, and stores nothing", async (_case, edit) => {
    await expect(s.store.save(edit(threadRecord("refused")))).rejects.toThrow(/refusing/);
    expect(await s.storedText("refused")).toBeUndefined();
    expect(await s.store.load("refused")).toBeUndefined();
  });

  it.each([
    ["an LLM key in a pending input", (r: ThreadRecord) => void Object.assign(r.execution.pending["input-1"]!.value, { llmApiKey: "sk-test-secret" })],
    ["tool input in a pending input", (r: ThreadRecord) => void Object.assign(r.execution.pending["input-1"]!.value, { toolInput: { command: "rm -rf /" } })],
    ["a bearer token at the top level", (r: ThreadRecord) => void Object.assign(r, { bearerToken: "secret-token" })],
  ])("refuses %s, and the secret is stored nowhere", async (_case, edit) => {
    const r = threadRecord("secret");
    edit(r);
    await expect(s.store.save(r)).rejects.toThrow(/refusing/);
    expect(await s.storedText("secret")).toBeUndefined();
  });

  it("removes a thread, and removing an unknown one is fine", async () => {
    await s.store.save(threadRecord("gone"));
    await s.store.save(threadRecord("kept"));
    await s.store.remove!("gone");
    await s.store.remove!("never-seen");
    expect(await s.store.load("gone")).toBeUndefined();
    expect(await s.store.threadIds!()).toEqual(["kept"]);
  });

  it("lists stored threads, skipping records that are not JSON or name another thread", async () => {
    await s.store.save(threadRecord("one"));
    await s.store.save(threadRecord("two"));
    await s.plant("broken", "{not json");
    await s.plant("impostor", serializeThreadRecord(threadRecord("someone-else")));
    expect((await s.store.threadIds!()).sort()).toEqual(["one", "two"]);
  });

  it("refuses records it cannot trust with StateUnavailableError, while a healthy thread still loads", async () => {
    const healthy = threadRecord("healthy");
    await s.store.save(healthy);
    const full = serializeThreadRecord(threadRecord("bad"));
    const wrongThread = serializeThreadRecord(threadRecord("other"));
    const secret = full.replace('"cwd":', '"llmApiKey": "sk-secret",\n  "cwd":');
    const badSequence = full.replace('"pipelineSequence": 3', '"pipelineSequence": 1.5');
    const contents: Array<string | Buffer> = ["{not json", full.slice(0, full.length / 2), "", "[]", wrongThread, secret, badSequence];
    if (s.holdsBytes) contents.push(Buffer.from([0x7b, 0xff, 0x7d]));
    for (const content of contents) {
      await s.plant("bad", content);
      await expect(s.store.load("bad")).rejects.toBeInstanceOf(StateUnavailableError);
    }
    expect(await s.store.load("healthy")).toEqual(healthy);
  });
});
