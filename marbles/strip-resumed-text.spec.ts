// The resume-text rule (reference-adapter §5.4), one run per marble line; every event of a run arrives at once.
// Alphabet (in and out): a RUN_STARTED · s TEXT_MESSAGE_START · t TEXT_MESSAGE_CONTENT (out: `t:<delta>`) ·
// n TEXT_MESSAGE_END · T TOOL_CALL_START · A TOOL_CALL_ARGS · E TOOL_CALL_END · f RUN_FINISHED · e RUN_ERROR ·
// d out only: a TextSegmentDigest (`d:<text whose digest it is>`).
import { createHash } from "node:crypto";
import { lastValueFrom, map, from, toArray } from "rxjs";
import { describe, expect, it } from "vitest";
import { createAguiPipeline } from "../operators/index.js";
import { stripResumedText } from "../operators/strip-resumed-text.js";
import { a2aFrames, collectInVirtualTime, letterOf, runMarbles, trace } from "./harness.js";
import { verifyAguiStream } from "../operators/verify/index.js";

const eq = (a: unknown, b: unknown) => expect(a).toEqual(b);
const sha = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

// Texts a test may see digested, so a `d` reads as the text it stands for.
const TEXTS = ["first", "second", "firstsecond", "firstsecondthird", "unrelated", "ab", "cd", "hello", "hellox", "x", "😀", "😀rest", "plan", "p"];
const TEXT_OF = new Map(TEXTS.map((t) => [sha(t), t]));

type Item = { type: string; messageId?: string; delta?: string; digest?: string; toolCallId?: string; parentMessageId?: string };
const label = (e: Item) =>
  e.type === "TEXT_MESSAGE_CONTENT"
    ? `t:${e.delta}`
    : e.type === "IAC_CODE_TEXT_SEGMENT"
      ? `d:${TEXT_OF.get(e.digest!) ?? e.digest}`
      : e.type === "TOOL_CALL_START" && e.parentMessageId !== undefined
        ? `T^${e.parentMessageId}`
        : letterOf(e);

const ev = {
  a: { type: "RUN_STARTED", threadId: "th", runId: "r" },
  f: { type: "RUN_FINISHED", threadId: "th", runId: "r" },
  e: { type: "RUN_ERROR", code: "A2A_UNAVAILABLE", message: "x" },
  s: (messageId = "m1") => ({ type: "TEXT_MESSAGE_START", messageId, role: "assistant" }),
  t: (delta: string, messageId = "m1") => ({ type: "TEXT_MESSAGE_CONTENT", messageId, delta }),
  n: (messageId = "m1") => ({ type: "TEXT_MESSAGE_END", messageId }),
  T: (parentMessageId?: string) => ({ type: "TOOL_CALL_START", toolCallId: "c1", toolCallName: "bash", ...(parentMessageId && { parentMessageId }) }),
  A: { type: "TOOL_CALL_ARGS", toolCallId: "c1", delta: "{}" },
  E: { type: "TOOL_CALL_END", toolCallId: "c1" },
};

/** Runs one stream of events through the operator and returns the marble values it produced, for `toBe`. */
function expectRun(known: string[], input: string, events: Record<string, unknown>, expected: string, values: Record<string, string>): void {
  runMarbles(eq, ({ cold, expectObservable }) => {
    const out = cold(input, events as Record<string, Item>).pipe(stripResumedText({ knownDigests: known.map(sha) }), map(label));
    expectObservable(out).toBe(expected, values);
  });
}

const letters = { a: "a", s: "s", n: "n", f: "f", e: "e", T: "T", A: "A", E: "E" };

describe("stripResumedText", () => {
  it('"first" shown, then a resume sending "firstsecond" shows "second"; its digest covers the whole text', () => {
    expectRun(["first"], "(astnf|)", { ...ev, s: ev.s(), t: ev.t("firstsecond"), n: ev.n() }, "(astdnf|)", { ...letters, t: "t:second", d: "d:firstsecond" });
  });

  it('a third run sending "firstsecondthird" shows "third"', () => {
    expectRun(["first", "firstsecond"], "(astf|)", { ...ev, s: ev.s(), t: ev.t("firstsecondthird") }, "(astdf|)", {
      ...letters,
      t: "t:third",
      d: "d:firstsecondthird",
    });
  });

  it("the three runs chained: each run's digests are what the next one knows", async () => {
    const run = async (known: string[], text: string) => {
      const out = (await lastValueFrom(
        from([ev.a, ev.s(), ev.t(text), ev.f]).pipe(stripResumedText({ knownDigests: known }), toArray()),
      )) as Item[];
      return {
        shown: out.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join(""),
        learned: out.filter((e) => e.type === "IAC_CODE_TEXT_SEGMENT").map((e) => e.digest!),
      };
    };
    const one = await run([], "first");
    const two = await run(one.learned, "firstsecond");
    const three = await run([...one.learned, ...two.learned], "firstsecondthird");
    expect([one.shown, two.shown, three.shown]).toEqual(["first", "second", "third"]);
  });

  it("unrelated text is shown in full", () => {
    expectRun(["first"], "(astnf|)", { ...ev, s: ev.s(), t: ev.t("unrelated"), n: ev.n() }, "(astdnf|)", { ...letters, t: "t:unrelated", d: "d:unrelated" });
  });

  it("a text that is all replay shows nothing: no START, no CONTENT, no END, and no new digest", () => {
    expectRun(["first"], "(astnf|)", { ...ev, s: ev.s(), t: ev.t("first"), n: ev.n() }, "(af|)", letters);
  });

  it("a message whose replay showed nothing opens when it says something new, without a second START", () => {
    expectRun(["first"], "(astuf|)", { ...ev, s: ev.s(), t: ev.t("first"), u: ev.t("second") }, "(astdf|)", {
      ...letters,
      t: "t:second",
      d: "d:firstsecond",
    });
  });

  it("only the first text of a message in a run is checked", () => {
    expectRun(["x"], "(astuf|)", { ...ev, s: ev.s(), t: ev.t("hello"), u: ev.t("x") }, "(astudf|)", { ...letters, t: "t:hello", u: "t:x", d: "d:hellox" });
  });

  it("a tool start and a completed tool input each end the current message's segment", () => {
    expectRun(
      [],
      "(astTAEuvnf|)",
      { ...ev, s: ev.s(), t: ev.t("ab"), T: ev.T("m1"), u: ev.t("c"), v: ev.t("d"), n: ev.n() },
      "(astdPAEuvxnf|)",
      { ...letters, t: "t:ab", d: "d:ab", P: "T^m1", u: "t:c", v: "t:d", x: "d:cd" },
    );
  });

  it("every open message's segment ends at the terminal event (the interrupt commit, or an error)", () => {
    expectRun(
      [],
      "(astSue|)",
      { ...ev, s: ev.s(), t: ev.t("ab"), S: ev.s("m2"), u: ev.t("cd", "m2") },
      "(astSuxye|)",
      { ...letters, t: "t:ab", S: "s", u: "t:cd", x: "d:ab", y: "d:cd" },
    );
  });

  it("a tool whose parent message was never opened for the client names no parent", () => {
    expectRun(["first"], "(astTf|)", { ...ev, s: ev.s(), t: ev.t("first"), T: ev.T("m1") }, "(aTf|)", letters);
  });

  it("pipeline text (deltas with event ids) is never stripped, but its segments are learned", () => {
    const id = "pipeline-message:p:step:plan";
    expectRun(["p"], "(astnf|)", { ...ev, s: ev.s(id), t: ev.t("plan", id), n: ev.n(id) }, "(astdnf|)", { ...letters, t: "t:plan", d: "d:plan" });
  });

  it("the prefix is made of whole code points", () => {
    expectRun(["😀"], "(astf|)", { ...ev, s: ev.s(), t: ev.t("😀rest") }, "(astdf|)", { ...letters, t: "t:rest", d: "d:😀rest" });
  });

  it("with nothing known, everything passes in order and each segment is learned once", () => {
    expectRun([], "(astnSunf|)", { ...ev, s: ev.s(), t: ev.t("x"), n: ev.n(), S: ev.s(), u: ev.t("x") }, "(astdnSunf|)", {
      ...letters,
      t: "t:x",
      d: "d:x",
      S: "s",
      u: "t:x",
    });
  });

  it("a throw while an item is read is the subscription's error, not an unhandled one", () => {
    const hostile = { type: "TEXT_MESSAGE_CONTENT", get messageId(): string { throw new Error("hostile getter"); } };
    const seen: unknown[] = [];
    from([ev.a, hostile] as Item[]).pipe(stripResumedText()).subscribe({ next: () => undefined, error: (e: unknown) => seen.push(e) });
    expect(seen).toHaveLength(1);
    expect((seen[0] as Error).message).toBe("hostile getter");
  });

  it("a long segment of many deltas, a surrogate pair split across them, digests as the whole text", async () => {
    // Deltas are hashed in batches: the digest must still be the whole text's, whatever the batch edges.
    const deltas = ["a".repeat(16_383), "\ud83d", "\ude00", ...Array.from({ length: 3_000 }, (_, i) => `delta ${i} `), ..."tail"];
    const whole = deltas.join("");
    const items = [ev.a, ev.s(), ...deltas.map((d) => ev.t(d)), ev.n(), ev.f] as Item[];
    const out = await lastValueFrom(from(items).pipe(stripResumedText(), toArray()));
    expect(out.filter((e) => e.type === "IAC_CODE_TEXT_SEGMENT")).toEqual([{ type: "IAC_CODE_TEXT_SEGMENT", digest: sha(whole) }]);
  });
});

describe("createAguiPipeline with textSnapshotDigests", () => {
  const f = a2aFrames();
  it("strips a replay, ends the segment before the interrupt's RUN_FINISHED, hands digests to commit and never emits them", () => {
    const committed: string[] = [];
    const events = collectInVirtualTime(
      [f.text("firstsecond"), f.permission("permission-1", "call_1")],
      (scheduler) =>
        createAguiPipeline({
          threadId: "t1",
          runId: "r2",
          contextId: "ctx-a1",
          heartbeat: false,
          scheduler,
          textSnapshotDigests: [sha("first")],
          commit: (item) => {
            committed.push(item.type === "IAC_CODE_TEXT_SEGMENT" ? `d:${TEXT_OF.get(item.digest)}` : item.type);
            return undefined;
          },
        }),
    ) as Item[];
    expect(verifyAguiStream(events as never)).toEqual([]);
    expect(trace(events as never)).toBe("a st nf");
    expect(events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta)).toEqual(["second"]);
    expect(committed.slice(-2)).toEqual(["d:firstsecond", "RUN_FINISHED"]);
  });
});
