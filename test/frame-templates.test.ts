// FrameTemplates decodes a text delta from the record it shares its prefix and suffix with. Whatever it
// answers must be what parsing the whole record answers: the same frame, keys in the same order, and never a
// frame for a record that does not parse.
import { describe, expect, it } from "vitest";
import { FrameTemplates } from "../src/a2a/frame-templates.js";
import { parseJson } from "../src/a2a/bodies.js";
import { decodeStreamResult } from "../src/a2a/frames.js";

const SESSION = "8d2c7e1a-3b4f-4c5d-9e6f-0a1b2c3d4e5f";

function answer(text: unknown, over: Record<string, unknown> = {}): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id: "r1",
    result: {
      statusUpdate: {
        taskId: "task-a1",
        contextId: "ctx-a1",
        status: { state: "TASK_STATE_WORKING", message: { messageId: "task-a1-message", contextId: "ctx-a1", taskId: "task-a1", role: "ROLE_AGENT", parts: [{ text }] } },
        metadata: { iac_code: { iacCodeSessionId: SESSION } },
        ...over,
      },
    },
  });
}

function thinking(text: unknown): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id: "r1",
    result: { statusUpdate: { taskId: "task-a1", contextId: "ctx-a1", status: { state: "TASK_STATE_WORKING" }, metadata: { iac_code: { thinking: { type: "raw_thinking", text }, iacCodeSessionId: SESSION } } } },
  });
}

/** The full decode, as the SSE reader does it without templates: the frame's JSON, or "refused". */
function plain(data: string): string {
  try {
    const envelope = parseJson(data) as { result?: unknown };
    return JSON.stringify(decodeStreamResult(envelope.result));
  } catch {
    return "refused";
  }
}

/** The SSE reader's loop: a template's answer when there is one, else the full decode, then learn. */
function throughTemplates(records: readonly string[]): { decoded: string[]; hits: number } {
  const templates = new FrameTemplates();
  const decoded: string[] = [];
  let hits = 0;
  for (const data of records) {
    const fast = templates.decode(data);
    if (fast !== undefined) {
      hits++;
      decoded.push(JSON.stringify(fast));
      continue;
    }
    const full = plain(data);
    decoded.push(full);
    if (full !== "refused") templates.learn(data, JSON.parse(full));
  }
  return { decoded, hits };
}

function expectSameAsPlain(records: readonly string[]): number {
  const { decoded, hits } = throughTemplates(records);
  expect(decoded).toEqual(records.map(plain));
  return hits;
}

describe("FrameTemplates", () => {
  it("decodes the deltas after the first two from their text alone, as the full parse does", () => {
    const texts = ["I will ", "create ", "the VPC", " now.", "Done", ": ok"];
    const hits = expectSameAsPlain([...texts.map((t) => thinking(t)), ...texts.map((t) => answer(t))]);
    expect(hits).toBe(8);
  });

  it("reads escaped texts exactly (newlines, quotes, backslashes, \\u escapes, astral characters)", () => {
    const texts = ["a", "line\nbreak", 'say "hi"', "back\\slash\\", "tab\tand\r", "é ü 中文", "😀 🚀", "\u2028\u2029", "", "\\", '"', "</script>"];
    expect(expectSameAsPlain(texts.map((t) => answer(t)))).toBe(texts.length - 2);
    // Python's json.dumps escapes every non-ASCII character: the literal is found by its escaped form or not at all.
    const asciiOnly = (t: string) => answer(t).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
    expectSameAsPlain(["é1", "é2", "ü3", "plain", "中文"].map(asciiOnly));
  });

  it("never answers for a record that is not the template with another text", () => {
    const base = [answer("one "), answer("two ")];
    const prefix = answer("\u0000").split("\\u0000")[0]!;
    const suffix = answer("\u0000").split("\\u0000")[1]!;
    const hostile = [
      // A middle that closes the string and adds keys: the same prefix and suffix, another document.
      `${prefix}x","role":"ROLE_USER${suffix}`,
      `${prefix}x"}],"parts":[{"text":"y${suffix}`,
      // A middle ending in a lone backslash escapes the suffix's quote.
      `${prefix}tail\\${suffix}`,
      // Raw control characters and bad escapes are not JSON.
      `${prefix}bell\u0007${suffix}`,
      `${prefix}bad \\x escape${suffix}`,
      `${prefix}half \\u12${suffix}`,
      // Prefix or suffix cut short or changed.
      prefix.slice(0, -1) + suffix,
      `${prefix}ok${suffix.slice(1)}`,
      `${prefix}ok${suffix}}`,
      `${prefix}ok${suffix}`.replace("task-a1-message", "task-a1-messagf"),
      `${prefix}${suffix}`,
    ];
    for (const record of hostile) expectSameAsPlain([...base, record, answer("three")]);
  });

  it("does not learn a literal that is not the value at the delta's path", () => {
    // The text also appears earlier (as the message id), as a key, and under a repeated key that overrides it.
    const sameAsId = (t: string) => answer(t, { status: { state: "TASK_STATE_WORKING", message: { messageId: t, role: "ROLE_AGENT", parts: [{ text: t }] } } });
    expectSameAsPlain([sameAsId("task-a1-message"), sameAsId("task-a1-message"), sameAsId("other"), sameAsId("other"), sameAsId("x")]);
    const repeated = (t: string) => answer(t).replace(`"parts":[{"text":${JSON.stringify(t)}}]`, `"parts":[{"text":${JSON.stringify(t)},"text":"winner"}]`);
    expectSameAsPlain(["a", "b", "c", "d"].map(repeated));
    // The text's literal found last is another value (a note after the parts): the probe refuses it.
    const noted = (t: string, note: string) => answer(t).replace('"iac_code":{', `"iac_code":{"note":${JSON.stringify(note)},`);
    expectSameAsPlain([noted("same", "same"), noted("same", "same"), noted("other", "same"), noted("third", "same")]);
    // The text's literal found last is a key.
    const keyed = (key: string) => answer("text").replace('"metadata":{', `"metadata":{${JSON.stringify(key)}:1,`);
    expectSameAsPlain([keyed("text"), keyed("text"), keyed("other"), keyed("text")]);
    const probe = "agui-gateway-template-probe-5b1c";
    expectSameAsPlain([answer(probe), answer(probe), answer("after")]);
  });

  it("decodes a text of another type, or another shape, in full", () => {
    const records = [answer("a"), answer("b"), answer(7), answer(null), answer({ t: 1 }), answer("c"), answer("d", { taskId: 9 })];
    expectSameAsPlain(records);
  });

  it("matches the full parse on random texts and on records with random bytes changed", () => {
    // A seeded generator: the same cases every run.
    let seed = 0x2f6e2b1;
    const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const alphabet = ['a', 'b', ' ', '"', "\\", "\n", "\u0000", "é", "😀", "{", "}", "[", "]", ":", ",", "u", "0"];
    const randomText = () => Array.from({ length: Math.floor(random() * 12) }, () => alphabet[Math.floor(random() * alphabet.length)]).join("");
    const records: string[] = [];
    for (let i = 0; i < 4_000; i++) {
      let record = random() < 0.5 ? answer(randomText()) : thinking(randomText());
      if (random() < 0.3) {
        // Change one character somewhere, escapes and structure included.
        const at = Math.floor(random() * record.length);
        record = record.slice(0, at) + alphabet[Math.floor(random() * alphabet.length)] + record.slice(at + 1);
      }
      records.push(record);
    }
    expect(expectSameAsPlain(records)).toBeGreaterThan(1_000);
  });

  it("parses long records in full every time", () => {
    const long = "x".repeat(9_000);
    expect(expectSameAsPlain([answer(long + "1"), answer(long + "2"), answer(long + "3")])).toBe(0);
  });
});
