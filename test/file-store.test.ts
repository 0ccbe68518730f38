import { createHash } from "node:crypto";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FileThreadStore, serializeThreadRecord, type FsLayer } from "../src/state/file-store.js";
import { serializeThreadRecordCompact } from "../src/state/record-text.js";
import { defaultStateDir, threadFileStem } from "../src/state/thread-key.js";
import { StateUnavailableError, type ThreadRecord } from "../src/state/thread-store.js";
import { assertStorable, parseThreadRecord } from "../src/state/validate.js";
import { DIGEST_A, DIGEST_B, threadRecord } from "./helpers/thread-record.js";

/** The shared fixture with two open steps and one remembered run, as these tests were written against. */
function record(threadId = "thread-1", overrides: Partial<ThreadRecord> = {}): ThreadRecord {
  const base = threadRecord(threadId);
  return {
    ...base,
    execution: { ...base.execution, pipelineOpenSteps: ["step:evaluate_candidates", "candidate:cand-0:template_generating"] },
    runDigests: [{ runId: "run-1", digest: DIGEST_A }],
    ...overrides,
  };
}

/** The on-disk form of a record, for tests that plant hand-edited documents. */
function documentOf(r: ThreadRecord): Record<string, any> {
  return JSON.parse(JSON.stringify(r));
}

function fsError(code: string): Error {
  return Object.assign(new Error(`injected ${code}`), { code });
}

let dir: string;

beforeEach(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), "agui-file-store-"));
});

afterEach(async () => {
  await fsp.rm(dir, { recursive: true, force: true });
});

const threadsDir = () => path.join(dir, "state", "threads");
const newStore = (fs?: Partial<FsLayer>) => new FileThreadStore({ dir: path.join(dir, "state"), ...(fs ? { fs } : {}) });

async function plant(threadId: string, content: string): Promise<void> {
  await fsp.mkdir(threadsDir(), { recursive: true });
  await fsp.writeFile(path.join(threadsDir(), `${threadFileStem(threadId)}.json`), content);
}

async function tempFiles(): Promise<string[]> {
  return (await fsp.readdir(threadsDir())).filter((name) => name.endsWith(".tmp"));
}

describe("FileThreadStore round trip and layout", () => {
  it("loads exactly what was saved, and undefined for an unknown thread", async () => {
    const store = newStore();
    expect(await store.load("thread-1")).toBeUndefined();
    const saved = record();
    await store.save(saved);
    expect(await store.load("thread-1")).toEqual(saved);
    expect(await store.load("thread-2")).toBeUndefined();
    // Stateless: a second store on the same directory sees the write.
    expect(await newStore().load("thread-1")).toEqual(saved);
  });

  it("touches nothing on disk until the first save", async () => {
    const store = newStore();
    await store.load("thread-1");
    await expect(fsp.stat(path.join(dir, "state"))).rejects.toMatchObject({ code: "ENOENT" });
    await store.save(record());
    expect((await fsp.readdir(threadsDir())).sort()).toEqual(["thread-1.json"]);
  });

  it("writes the file 0600 and both directories 0700, tightening looser existing modes", async () => {
    await fsp.mkdir(threadsDir(), { recursive: true, mode: 0o755 });
    await fsp.chmod(path.join(dir, "state"), 0o755);
    await fsp.chmod(threadsDir(), 0o775);
    const previousUmask = process.umask(0o022);
    try {
      await newStore().save(record());
    } finally {
      process.umask(previousUmask);
    }
    expect((await fsp.stat(path.join(dir, "state"))).mode & 0o777).toBe(0o700);
    expect((await fsp.stat(threadsDir())).mode & 0o777).toBe(0o700);
    expect((await fsp.stat(path.join(threadsDir(), "thread-1.json"))).mode & 0o777).toBe(0o600);
  });

  it("makes its directories once, and again when they were removed under it", async () => {
    const calls: string[] = [];
    const store = newStore({
      mkdir: ((p: string, o: Parameters<typeof fsp.mkdir>[1]) => (calls.push("mkdir"), fsp.mkdir(p, o))) as FsLayer["mkdir"],
      chmod: ((p: string, m: number) => (calls.push("chmod"), fsp.chmod(p, m))) as FsLayer["chmod"],
    });
    await store.save(record("thread-1"));
    await store.save(record("thread-2"));
    expect(calls).toEqual(["mkdir", "chmod", "chmod"]);
    await fsp.rm(path.join(dir, "state"), { recursive: true });
    await store.save(record("thread-3"));
    expect(calls).toEqual(["mkdir", "chmod", "chmod", "mkdir", "chmod", "chmod"]);
    expect(await store.load("thread-3")).toEqual(record("thread-3"));
    expect((await fsp.stat(threadsDir())).mode & 0o777).toBe(0o700);
  });

  it("creates fresh directories 0700", async () => {
    await newStore().save(record());
    expect((await fsp.stat(path.join(dir, "state"))).mode & 0o777).toBe(0o700);
    expect((await fsp.stat(threadsDir())).mode & 0o777).toBe(0o700);
  });

  it("writes two-space JSON with keys sorted at every level, lists as given, and a trailing newline", async () => {
    const runDigests = ["b", "10", "9", "a"].map((runId, i) => ({ runId, digest: i % 2 ? DIGEST_B : DIGEST_A }));
    const saved = record("thread-1", { runDigests });
    await newStore().save(saved);
    const text = await fsp.readFile(path.join(threadsDir(), "thread-1.json"), "utf8");
    expect(text.endsWith("}\n")).toBe(true);
    expect(text.endsWith("\n\n")).toBe(false);
    expect(text.startsWith('{\n  "appliedResumeDigests": [\n    {\n      "digest": ')).toBe(true);
    expect(JSON.parse(text)).toEqual(documentOf(saved));
    // runDigests is a list, oldest first (issue 14: it is a bounded window and the order says what leaves it
    // next); integer-like run ids keep their place, which an object keyed by run id would not.
    const runIds = [...text.matchAll(/^ {6}"runId": "([^"]+)"/gm)].map((m) => m[1]);
    expect(runIds).toEqual(["b", "10", "9", "a"]);
    const topKeys = [...text.matchAll(/^ {2}"([^"]+)":/gm)].map((m) => m[1]);
    expect(topKeys).toEqual([...topKeys].sort());
    expect(topKeys).toHaveLength(10);
    const executionKeys = [...text.matchAll(/^ {4}"([^"]+)":/gm)].map((m) => m[1]).filter((k) => k !== undefined && !["digest", "runId"].includes(k));
    expect(executionKeys).toEqual([
      "executionId", "interruptedRunId", "lastTaskId", "parkedSpan", "pending", "pipelineOpenSteps", "pipelineSequence", "rosInvocationId", "taskId",
    ]);
    // Lists keep their order (the open steps are not sorted).
    expect(text.indexOf("step:evaluate_candidates")).toBeLessThan(text.indexOf("candidate:cand-0"));
  });

  it("serializes like JSON.stringify(…, null, 2) when the keys are already in order", () => {
    const r = record();
    const sortedDeep = (v: unknown): unknown =>
      Array.isArray(v) ? v.map(sortedDeep)
      : v && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortedDeep((v as any)[k])]))
      : v;
    expect(serializeThreadRecord(r)).toBe(`${JSON.stringify(sortedDeep(r), null, 2)}\n`);
    // The memory store's form: the same text without whitespace.
    expect(serializeThreadRecordCompact(r)).toBe(JSON.stringify(sortedDeep(r)));
  });

  it("writes any JSON value as the straightforward entries-sort-join serializer does, byte for byte", () => {
    // The serializer builds its text without intermediate arrays; this is the plain version it replaced, as an oracle
    // (keys compared by UTF-16 unit below the surrogates, as the property above checks in full).
    const plain = (value: unknown, indent: string | undefined): string => {
      if (value === null || typeof value !== "object") return JSON.stringify(value);
      const inner = indent === undefined ? undefined : `${indent}  `;
      const [open, separator, close, colon] = inner === undefined ? ["", ",", "", ":"] : [`\n${inner}`, `,\n${inner}`, `\n${indent}`, ": "];
      if (Array.isArray(value)) return value.length === 0 ? "[]" : `[${open}${value.map((item) => plain(item, inner)).join(separator)}${close}]`;
      const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return entries.length === 0 ? "{}" : `{${open}${entries.map(([k, v]) => `${JSON.stringify(k)}${colon}${plain(v, inner)}`).join(separator)}${close}}`;
    };
    const ascii = fc.string({ unit: fc.constantFrom("a", "b", "Z", "0", "9", "_", " ", '"', "\\", "\n") });
    const json = fc.jsonValue({ maxDepth: 4 });
    fc.assert(
      fc.property(fc.oneof(json, fc.dictionary(ascii, json)), (value) => {
        const normal = JSON.parse(JSON.stringify(value)) as unknown;
        expect(serializeThreadRecord(normal as ThreadRecord)).toBe(`${plain(normal, "")}\n`);
        expect(serializeThreadRecordCompact(normal as ThreadRecord)).toBe(plain(normal, undefined));
      }),
      { numRuns: 300 },
    );
  });

  it("sorts keys by code point, surrogate pairs and lone surrogates included", () => {
    const byCodePoints = (a: string, b: string): number => {
      const [left, right] = [Array.from(a), Array.from(b)];
      for (let i = 0; i < Math.min(left.length, right.length); i++) {
        const diff = left[i]!.codePointAt(0)! - right[i]!.codePointAt(0)!;
        if (diff !== 0) return diff;
      }
      return left.length - right.length;
    };
    const unit = fc.constantFrom("a", "b", "Z", "0", "\u00e9", "\ud7ff", "\ud83d", "\ude00", "\ud83d\ude00", "\ue000", "\uffff", "\u{10ffff}");
    // Prefixed: integer-like keys would come first in any object read back.
    const key = fc.array(unit, { maxLength: 4 }).map((units) => `k${units.join("")}`);
    fc.assert(
      fc.property(fc.uniqueArray(key, { minLength: 1, maxLength: 8 }), (keys) => {
        const text = serializeThreadRecordCompact(Object.fromEntries(keys.map((k) => [k, 1])) as unknown as ThreadRecord);
        expect(Object.keys(JSON.parse(text) as object)).toEqual([...keys].sort(byCodePoints));
      }),
    );
  });

  it("keeps non-ASCII text raw", async () => {
    const saved = record("thread-1", { cwd: "/work/projeto-ção-日本" });
    await newStore().save(saved);
    const text = await fsp.readFile(path.join(threadsDir(), "thread-1.json"), "utf8");
    expect(text).toContain("/work/projeto-ção-日本");
    expect((await newStore().load("thread-1"))?.cwd).toBe("/work/projeto-ção-日本");
  });

  it("never writes a string it was not given", async () => {
    const saved = record();
    await newStore().save(saved);
    const text = await fsp.readFile(path.join(threadsDir(), "thread-1.json"), "utf8");
    const given = new Set<string>();
    const collect = (v: unknown): void => {
      if (typeof v === "string") given.add(v);
      else if (Array.isArray(v)) v.forEach(collect);
      else if (v && typeof v === "object") for (const [k, item] of Object.entries(v)) { given.add(k); collect(item); }
    };
    collect(saved);
    const written = [...text.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => JSON.parse(`"${m[1]}"`) as string);
    expect(written.length).toBeGreaterThan(20);
    for (const s of written) expect(given.has(s), s).toBe(true);
    expect(text).not.toMatch(/(^|[^a-z])sk-/im);
    for (const secret of ["llmApiKey", "llmHeaders", "accessKey", "securityToken", "toolInput"]) {
      expect(text).not.toContain(secret);
    }
  });
});

describe("threadFileStem", () => {
  const hex = (s: string) => Buffer.from(s, "utf8").toString("hex");

  it.each([
    ["2f0c6f0e-8d8a-4a57-9c4e-1d1d7f6f8b10", "2f0c6f0e-8d8a-4a57-9c4e-1d1d7f6f8b10"],
    ["thread_1.v2", "thread_1.v2"],
    [".hidden", ".hidden"],
    ["com10", "com10"],
    ["lpt0", "lpt0"],
    ["console", "console"],
  ])("keeps the plain id %j", (id, stem) => {
    expect(threadFileStem(id)).toBe(stem);
  });

  it.each([
    "2F0C6F0E-8D8A-4A57-9C4E-1D1D7F6F8B10",
    "Thread",
    "../etc/passwd",
    "a/b",
    "a\\b",
    "con",
    "nul.txt",
    "com1",
    "lpt9.tar.gz",
    "aux",
    "prn.",
    "x.",
    ".",
    "..",
    "a\u0000b",
    "",
    "a b",
    "日本語",
    "café",
    "emoji-😀",
    "x~y",
  ])("encodes %j as aguiid~ + UTF-8 hex", (id) => {
    expect(threadFileStem(id)).toBe(`aguiid~${hex(id)}`);
  });

  it("hashes ids whose encoding would pass 200 characters", () => {
    const long = "A".repeat(300);
    expect(threadFileStem(long)).toBe(`aguihash~${createHash("sha256").update(long, "utf8").digest("hex")}`);
    const justFits = "Z".repeat(96); // 7 + 192 = 199 characters
    expect(threadFileStem(justFits)).toBe(`aguiid~${hex(justFits)}`);
    expect(threadFileStem("Z".repeat(97))).toMatch(/^aguihash~[0-9a-f]{64}$/);
    // A plain id that long could not be written (name limits), so it is hashed as well.
    expect(threadFileStem("a".repeat(300))).toMatch(/^aguihash~[0-9a-f]{64}$/);
    expect(threadFileStem("a".repeat(200))).toBe("a".repeat(200));
  });

  it("always yields one safe, distinct path component", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 120 }), fc.string({ unit: "binary", maxLength: 120 }), (a, b) => {
        for (const id of [a, b]) {
          const stem = threadFileStem(id);
          expect(stem).toMatch(/^[A-Za-z0-9_.~-]{1,200}$/);
          expect(stem).not.toMatch(/^\.\.?$/);
          expect(stem.endsWith(".")).toBe(false);
          expect(path.basename(stem)).toBe(stem);
          expect(stem).toBe(stem.toLowerCase());
        }
        if (a !== b) expect(threadFileStem(a)).not.toBe(threadFileStem(b));
      }),
      { numRuns: 300 },
    );
  });
});

describe("defaultStateDir", () => {
  it("uses IAC_CODE_CONFIG_DIR or ~/.iac-code", () => {
    expect(defaultStateDir({}, "/home/u")).toBe(path.join("/home/u", ".iac-code", "agui"));
    expect(defaultStateDir({ IAC_CODE_CONFIG_DIR: "" }, "/home/u")).toBe(path.join("/home/u", ".iac-code", "agui"));
    expect(defaultStateDir({ IAC_CODE_CONFIG_DIR: "/etc/iac" }, "/home/u")).toBe(path.join("/etc/iac", "agui"));
    expect(defaultStateDir({ IAC_CODE_CONFIG_DIR: "~/cfg" }, "/home/u")).toBe(path.join("/home/u", "cfg", "agui"));
  });
});

describe("FileThreadStore fails closed on reads", () => {
  async function expectUnavailable(threadId: string, content: string): Promise<void> {
    await plant(threadId, content);
    await expect(newStore().load(threadId)).rejects.toBeInstanceOf(StateUnavailableError);
  }

  const broken: Array<[string, (d: Record<string, any>) => unknown]> = [
    ["wrong schemaVersion", (d) => { d.schemaVersion = 2; }],
    ["schemaVersion as a string", (d) => { d.schemaVersion = "1"; }],
    ["threadId mismatch", (d) => { d.threadId = "other"; }],
    ["uppercase digest", (d) => { d.appliedResumeDigests[0].digest = DIGEST_A.toUpperCase(); }],
    ["short digest", (d) => { d.appliedResumeDigests[0].digest = "abc"; }],
    ["applied digest missing a field", (d) => { delete d.appliedResumeDigests[0].interruptId; }],
    ["pending key mismatch", (d) => { d.execution.pending["input-1"].value.inputId = "input-2"; }],
    ["pending value not an object", (d) => { d.execution.pending["input-1"].value = ["input-1"]; }],
    ["pending sideband not a bool", (d) => { d.execution.pending["input-1"].sideband = "no"; }],
    ["pending expiresAt not ISO", (d) => { d.execution.pending["input-1"].expiresAt = "tomorrow"; }],
    ["pending value with a field outside the allowlist", (d) => { d.execution.pending["input-1"].value.toolInput = {}; }],
    ["non-integer pipelineSequence", (d) => { d.execution.pipelineSequence = 1.5; }],
    ["true as pipelineSequence", (d) => { d.execution.pipelineSequence = true; }],
    ["negative pipelineSequence", (d) => { d.execution.pipelineSequence = -1; }],
    ["empty open step", (d) => { d.execution.pipelineOpenSteps = [""]; }],
    ["empty cwd", (d) => { d.cwd = ""; }],
    ["empty executionId", (d) => { d.execution.executionId = ""; }],
    ["missing rosInvocationId", (d) => { delete d.execution.rosInvocationId; }],
    ["numeric userId", (d) => { d.userId = 7; }],
    ["terminalExecutionIds not a list", (d) => { d.terminalExecutionIds = "exec-0"; }],
    ["unknown top-level key", (d) => { d.llmApiKey = "sk-secret"; }],
    ["unknown execution key", (d) => { d.execution.activeRunId = "run-1"; }],
    ["__proto__ key", (d) => JSON.stringify(d).replace('"cwd":', '"__proto__":{"x":1},"cwd":')],
    ["an array document", (d) => JSON.stringify([d])],
  ];

  it.each(broken)("rejects %s, while a healthy thread in the same dir still loads", async (_name, edit) => {
    const healthy = record("healthy");
    await newStore().save(healthy);
    const document = documentOf(record("broken"));
    const replaced = edit(document);
    await expectUnavailable("broken", typeof replaced === "string" ? replaced : JSON.stringify(document));
    expect(await newStore().load("healthy")).toEqual(healthy);
  });

  it("rejects corrupt JSON, a truncated file, an empty file and invalid UTF-8", async () => {
    const full = serializeThreadRecord(record("t"));
    for (const content of ["{not json", full.slice(0, full.length / 2), ""]) await expectUnavailable("t", content);
    await plant("t", "");
    await fsp.writeFile(path.join(threadsDir(), "t.json"), Buffer.from([0x7b, 0xff, 0x7d]));
    await expect(newStore().load("t")).rejects.toThrow(/UTF-8/);
  });

  it("refuses a symlinked thread file even when its target is valid", async () => {
    const elsewhere = path.join(dir, "elsewhere.json");
    await fsp.writeFile(elsewhere, serializeThreadRecord(record("linked")));
    await fsp.mkdir(threadsDir(), { recursive: true });
    await fsp.symlink(elsewhere, path.join(threadsDir(), "linked.json"));
    await expect(newStore().load("linked")).rejects.toThrow(/symlink/);
    await expect(newStore().load("linked")).rejects.toBeInstanceOf(StateUnavailableError);
  });

  it("refuses a directory in place of the thread file", async () => {
    await fsp.mkdir(path.join(threadsDir(), "dir-thread.json"), { recursive: true });
    await expect(newStore().load("dir-thread")).rejects.toThrow(/not a regular file/);
  });

  it("turns any read error other than ENOENT into StateUnavailableError", async () => {
    await newStore().save(record());
    const eio = newStore({ readFile: (async () => { throw fsError("EIO"); }) as FsLayer["readFile"] });
    await expect(eio.load("thread-1")).rejects.toThrow(/EIO/);
    await expect(eio.load("thread-1")).rejects.toBeInstanceOf(StateUnavailableError);
    const eacces = newStore({ lstat: (async () => { throw fsError("EACCES"); }) as FsLayer["lstat"] });
    await expect(eacces.load("thread-1")).rejects.toBeInstanceOf(StateUnavailableError);
  });

  it("reads run digests written as a runId → digest object (before they were a list) and writes them back as a list", async () => {
    const document = documentOf(record("legacy-object"));
    document.runDigests = { "run-a": DIGEST_A, "7": DIGEST_B };
    await plant("legacy-object", JSON.stringify(document));
    const loaded = await newStore().load("legacy-object");
    expect(loaded?.runDigests).toEqual([{ runId: "7", digest: DIGEST_B }, { runId: "run-a", digest: DIGEST_A }]);
    expect(() => assertStorable(loaded!)).not.toThrow();
  });

  it("drops malformed run digests, restores text digests (in order, once each) and tolerates a missing lastTaskId", async () => {
    const document = documentOf(record("legacy"));
    document.runDigests = { good: DIGEST_A, upper: DIGEST_A.toUpperCase(), short: "abc", number: 5, "": DIGEST_B };
    document.execution.textSnapshotDigests = [DIGEST_B, DIGEST_A, DIGEST_B];
    delete document.execution.lastTaskId;
    await plant("legacy", JSON.stringify(document));
    const loaded = await newStore().load("legacy");
    expect(loaded?.runDigests).toEqual([{ runId: "good", digest: DIGEST_A }]);
    expect(loaded?.execution.lastTaskId).toBeNull();
    // Issue 13 item 6: the resume-text rule needs them after a restart (they used to be dropped).
    expect(loaded?.execution.textSnapshotDigests).toEqual([DIGEST_B, DIGEST_A]);
    // What was restored can be written back unchanged.
    expect(() => assertStorable(loaded!)).not.toThrow();
  });

  it("a text digest that is not 64 lowercase hex makes the thread unavailable, and is never written", async () => {
    const document = documentOf(record("texts"));
    document.execution.textSnapshotDigests = ["first"];
    await plant("texts", JSON.stringify(document));
    await expect(newStore().load("texts")).rejects.toThrow(/textSnapshotDigests/);
    const withText = record("texts");
    withText.execution.textSnapshotDigests = ["the assistant's words"];
    expect(() => assertStorable(withText)).toThrow(/textSnapshotDigests/);
  });

  it("keeps the interrupted run's id (a resume may reuse it once) and refuses an empty one", async () => {
    const parked = record("parked");
    parked.execution.interruptedRunId = "run-1";
    await newStore().save(parked);
    expect((await newStore().load("parked"))?.execution.interruptedRunId).toBe("run-1");
    const document = documentOf(parked);
    document.execution.interruptedRunId = "";
    expect(() => parseThreadRecord(document, "parked")).toThrow(/execution\.interruptedRunId/);
    expect(() => assertStorable({ ...parked, execution: { ...parked.execution, interruptedRunId: "" } })).toThrow(/interruptedRunId/);
  });

  it("parseThreadRecord reports a short reason", () => {
    const document = documentOf(record("t"));
    document.execution.pipelineSequence = true;
    expect(() => parseThreadRecord(document, "t")).toThrow(/execution\.pipelineSequence/);
    expect(() => parseThreadRecord(documentOf(record("t")), "u")).toThrow(/threadId/);
  });
});

describe("FileThreadStore writes atomically", () => {
  async function expectFailedSaveLeavesOldFile(fs: Partial<FsLayer>, code: string): Promise<void> {
    const original = record();
    await newStore().save(original);
    const before = await fsp.readFile(path.join(threadsDir(), "thread-1.json"), "utf8");
    const next = record("thread-1", { terminalExecutionIds: ["exec-0", "exec-1"] });
    await expect(newStore(fs).save(next)).rejects.toMatchObject({ code });
    expect(await fsp.readFile(path.join(threadsDir(), "thread-1.json"), "utf8")).toBe(before);
    expect(await newStore().load("thread-1")).toEqual(original);
    expect(await tempFiles()).toEqual([]);
  }

  it("keeps the old file and no temp file when the write hits ENOSPC", async () => {
    const writeFile = (async (file: Parameters<FsLayer["writeFile"]>[0], data: string) => {
      // Half a document reaches the temp file before the disk fills up.
      await fsp.writeFile(file as fsp.FileHandle, data.slice(0, 40));
      throw fsError("ENOSPC");
    }) as FsLayer["writeFile"];
    await expectFailedSaveLeavesOldFile({ writeFile }, "ENOSPC");
  });

  it("keeps the old file and no temp file when the rename fails", async () => {
    await expectFailedSaveLeavesOldFile({ rename: (async () => { throw fsError("EROFS"); }) as FsLayer["rename"] }, "EROFS");
  });

  it("keeps the old file and no temp file when fsync fails", async () => {
    const open = (async (...args: Parameters<FsLayer["open"]>) => {
      const handle = await fsp.open(...args);
      if (String(args[0]).endsWith(".tmp")) handle.sync = async () => { throw fsError("EIO"); };
      return handle;
    }) as FsLayer["open"];
    await expectFailedSaveLeavesOldFile({ open }, "EIO");
  });

  it("rejects when the directories cannot be created", async () => {
    const store = newStore({ mkdir: (async () => { throw fsError("EACCES"); }) as FsLayer["mkdir"] });
    await expect(store.save(record())).rejects.toMatchObject({ code: "EACCES" });
    expect(await newStore().load("thread-1")).toBeUndefined();
  });

  it("rejects when the directory fsync after the rename fails", async () => {
    const open = (async (...args: Parameters<FsLayer["open"]>) => {
      const handle = await fsp.open(...args);
      if (String(args[0]) === threadsDir()) handle.sync = async () => { throw fsError("EIO"); };
      return handle;
    }) as FsLayer["open"];
    await expect(newStore({ open }).save(record())).rejects.toMatchObject({ code: "EIO" });
    expect(await tempFiles()).toEqual([]);
  });

  it("shares directory syncs between saves, but never one that began before a save's rename", async () => {
    // Each directory sync waits until the test lets it finish; renames are logged against the syncs begun so far.
    const events: string[] = [];
    const releases: (() => void)[] = [];
    let syncs = 0;
    const open = (async (...args: Parameters<FsLayer["open"]>) => {
      const handle = await fsp.open(...args);
      if (String(args[0]) === threadsDir()) {
        const sync = handle.sync.bind(handle);
        handle.sync = async () => {
          const n = ++syncs;
          events.push(`sync ${n} begins`);
          await new Promise<void>((resolve) => releases.push(resolve));
          await sync();
          events.push(`sync ${n} done`);
        };
      }
      return handle;
    }) as FsLayer["open"];
    const rename = (async (from: string, to: string) => {
      await fsp.rename(from, to);
      events.push(`rename ${path.basename(to)}`);
    }) as FsLayer["rename"];
    const store = newStore({ open, rename });
    const settled: string[] = [];
    const first = store.save(record("thread-1")).then(() => settled.push("thread-1"));
    await vi.waitFor(() => expect(syncs).toBe(1));
    // Renamed while sync 1 runs: both wait for sync 2, which begins once sync 1 is done.
    const later = ["thread-2", "thread-3"].map((id) => store.save(record(id)).then(() => settled.push(id)));
    await vi.waitFor(() => expect(events.filter((e) => e.startsWith("rename"))).toHaveLength(3));
    releases.shift()!();
    await first;
    expect(settled).toEqual(["thread-1"]);
    await vi.waitFor(() => expect(syncs).toBe(2));
    releases.shift()!();
    await Promise.all(later);
    expect(syncs).toBe(2);
    expect(events.indexOf("sync 2 begins")).toBeGreaterThan(events.indexOf("rename thread-3.json"));
    expect(events.indexOf("sync 2 begins")).toBeGreaterThan(events.indexOf("rename thread-2.json"));
    expect(await store.load("thread-3")).toEqual(record("thread-3"));
  });

  it("fails every save that waited for a directory sync that failed", async () => {
    // Sync 1 waits for the test; sync 2, which the two saves renamed meanwhile share, fails.
    let syncs = 0;
    let release!: () => void;
    const open = (async (...args: Parameters<FsLayer["open"]>) => {
      const handle = await fsp.open(...args);
      if (String(args[0]) === threadsDir()) {
        const n = ++syncs;
        const sync = handle.sync.bind(handle);
        handle.sync = n === 1 ? async () => { await new Promise<void>((resolve) => (release = resolve)); await sync(); } : n === 2 ? async () => { throw fsError("EIO"); } : sync;
      }
      return handle;
    }) as FsLayer["open"];
    let renames = 0;
    const rename = (async (from: string, to: string) => {
      await fsp.rename(from, to);
      renames++;
    }) as FsLayer["rename"];
    const store = newStore({ open, rename });
    const first = store.save(record("a"));
    await vi.waitFor(() => expect(syncs).toBe(1));
    const later = Promise.allSettled(["b", "c"].map((id) => store.save(record(id))));
    await vi.waitFor(() => expect(renames).toBe(3));
    release();
    await first;
    expect(await later).toEqual([
      { status: "rejected", reason: expect.objectContaining({ code: "EIO" }) },
      { status: "rejected", reason: expect.objectContaining({ code: "EIO" }) },
    ]);
    expect(syncs).toBe(2);
    // The next save syncs again.
    await store.save(record("d"));
    expect(syncs).toBe(3);
    expect(await tempFiles()).toEqual([]);
  });

  it("leaves one complete, valid file after many concurrent saves", async () => {
    const versions = Array.from({ length: 25 }, (_, i) =>
      record("busy", {
        terminalExecutionIds: Array.from({ length: i + 1 }, (_, j) => `exec-${j}`),
        execution: { ...record().execution, pipelineSequence: i, rosInvocationId: `ros-${i}` },
      }),
    );
    const store = newStore();
    await Promise.all(versions.map((v) => store.save(v)));
    const loaded = await store.load("busy");
    const match = versions.find((v) => v.execution.pipelineSequence === loaded?.execution.pipelineSequence);
    expect(loaded).toEqual(match);
    expect(await tempFiles()).toEqual([]);
    expect(await fsp.readdir(threadsDir())).toEqual(["busy.json"]);
  });
});

describe("assertStorable", () => {
  function withPendingValue(extra: Record<string, unknown>): ThreadRecord {
    const r = record();
    r.execution.pending["input-1"]!.value = { ...r.execution.pending["input-1"]!.value, ...extra };
    return r;
  }

  it.each([["toolInput", { command: "rm -rf /" }], ["llmApiKey", "sk-test-secret"]])(
    "refuses a pending value with %s, and nothing reaches the disk",
    async (key, value) => {
      const r = withPendingValue({ [key]: value });
      expect(() => assertStorable(r)).toThrow(new RegExp(key));
      await expect(newStore().save(r)).rejects.toThrow(new RegExp(key));
      await expect(fsp.stat(path.join(dir, "state"))).rejects.toMatchObject({ code: "ENOENT" });
    },
  );

  it("refuses fields outside the schema and values that would not load back", () => {
    const secretTopLevel = { ...record(), llmApiKey: "sk-test" } as unknown as ThreadRecord;
    expect(() => assertStorable(secretTopLevel)).toThrow(/refusing/);
    expect(() => assertStorable(record("t", { runDigests: [{ runId: "r", digest: "not-a-digest" }] }))).toThrow(/runDigests/);
    expect(() => assertStorable(record("t", { schemaVersion: 2 as 1 }))).toThrow(/schemaVersion/);
    const nan = record();
    nan.execution.pipelineSequence = Number.NaN;
    expect(() => assertStorable(nan)).toThrow(/pipelineSequence/);
    expect(() => assertStorable(record())).not.toThrow();
  });
});
