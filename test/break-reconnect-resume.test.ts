// break-reconnect: runs that end at interrupts and their resumes. A resume may reuse the interrupted run's id
// (docs/protocol.md; CopilotKit's useInterrupt does), so two streams of one thread share one run id and one
// event-id key. A reconnect must get the stream it lost, never the other one; the replay budget must stay right.
import { afterEach, describe, expect, it } from "vitest";
import { streamProblems } from "./helpers/checks.js";
import { allowOnce, interruptsOf, resumeInput } from "./helpers/durable.js";
import { postRaw, readSse, startStack, type Stack } from "./helpers/e2e.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";

async function reconnect(url: string, body: unknown, lastEventId: string): Promise<{ status: number; text: string; code?: string }> {
  const reply = await fetch(url + "/", { method: "POST", headers: { "Content-Type": "application/json", "Last-Event-ID": lastEventId }, body: JSON.stringify(body) });
  const text = await reply.text();
  return reply.status === 200 ? { status: 200, text } : { status: reply.status, text, code: JSON.parse(text).error?.code };
}

let stack: Stack<ScriptedA2AServer> | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

describe("reconnects around an interrupt and its resume", () => {
  it("reconnects to the parked run's stream while its resume (a new run id) streams all get the parked stream whole", async () => {
    stack = await startStack();
    const s = stack;
    const parkedBody = s.input({ prompt: "deploy the stack" });
    const parked = await postRaw(s.gateway.url, parkedBody);
    const parkedEvents = readSse(parked.text).events;
    expect(streamProblems(parkedEvents)).toEqual([]);
    const interrupts = interruptsOf(parkedEvents);
    const resumeBody = resumeInput(parkedBody, [allowOnce(interrupts[0]!.id)]);
    const [resumed, ...again] = await Promise.all([
      postRaw(s.gateway.url, resumeBody),
      ...Array.from({ length: 20 }, (_, i) => reconnect(s.gateway.url, parkedBody, `${parkedBody.runId}:${i}`)),
    ]);
    expect(streamProblems(readSse(resumed!.text).events)).toEqual([]);
    const pieces = parked.text.split(/(?<=\n\n)/);
    again.forEach((reply, i) => expect(reply).toEqual({ status: 200, text: pieces.slice(i).join("") }));
  });

  it("a resume that reuses the run id: a reconnect with the interrupted run's body gets the interrupted run's stream, not the resume's", async () => {
    stack = await startStack();
    const s = stack;
    const parkedBody = s.input({ prompt: "deploy the stack" });
    const parked = await postRaw(s.gateway.url, parkedBody);
    const interrupts = interruptsOf(readSse(parked.text).events);
    const resumeBody = resumeInput(parkedBody, [allowOnce(interrupts[0]!.id)], { runId: parkedBody.runId });
    const resumed = await postRaw(s.gateway.url, resumeBody);
    expect(resumed.status).toBe(200);
    expect(streamProblems(readSse(resumed.text).events)).toEqual([]);
    // The parked run's client lost its stream and comes back with its body and its cursor.
    const parkedAgain = await reconnect(s.gateway.url, parkedBody, `${parkedBody.runId}:0`);
    if (parkedAgain.status === 200) expect(parkedAgain.text, "the interrupted run's reconnect got the resume's bytes").toBe(parked.text);
    else expect(parkedAgain.code).toBe("REPLAY_EXPIRED");
  });

  it("a resume that reuses the run id: the resume's own client can reconnect to it", async () => {
    stack = await startStack();
    const s = stack;
    const parkedBody = s.input({ prompt: "deploy the stack" });
    const parked = await postRaw(s.gateway.url, parkedBody);
    const interrupts = interruptsOf(readSse(parked.text).events);
    const resumeBody = resumeInput(parkedBody, [allowOnce(interrupts[0]!.id)], { runId: parkedBody.runId });
    const resumed = await postRaw(s.gateway.url, resumeBody);
    const pieces = resumed.text.split(/(?<=\n\n)/);
    const again = await reconnect(s.gateway.url, resumeBody, `${parkedBody.runId}:2`);
    expect({ status: again.status, code: again.code }).toEqual({ status: 200, code: undefined });
    expect(again.text).toBe(pieces.slice(2).join(""));
  });

  it("resumes that reuse the run id do not eat the ended-runs budget: a run that just ended can still be replayed", async () => {
    // Budget 10 KB of ended runs (a run here is ~6.5 KB, a resume ~2.4 KB), kept 1 s.
    stack = await startStack({ gateway: { replay: { retentionSeconds: 1, budgetMib: 0.01 } } });
    const s = stack;
    const control = s.input();
    const controlRun = await postRaw(s.gateway.url, control);
    expect((await reconnect(s.gateway.url, control, `${control.runId}:0`)).status).toBe(200);
    for (let i = 0; i < 12; i++) {
      const parkedBody = s.input({ prompt: "deploy the stack" });
      const parked = await postRaw(s.gateway.url, parkedBody);
      const interrupts = interruptsOf(readSse(parked.text).events);
      const resumed = await postRaw(s.gateway.url, resumeInput(parkedBody, [allowOnce(interrupts[0]!.id)], { runId: parkedBody.runId }));
      expect(resumed.status).toBe(200);
    }
    // Everything above is past its retention now; nothing ended is kept.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const fresh = s.input();
    const freshRun = await postRaw(s.gateway.url, fresh);
    expect(freshRun.text.length).toBeLessThan(20_000);
    expect(controlRun.text.length).toBeLessThan(20_000);
    const replay = await reconnect(s.gateway.url, fresh, `${fresh.runId}:0`);
    expect({ status: replay.status, code: replay.code }, "a run that ended a moment ago, well within budget and retention").toEqual({ status: 200, code: undefined });
  });
});

describe("the ended-runs budget when one feed key is used twice (what a resume reusing the run id does)", () => {
  it("after the retention of such pairs, nothing is counted that is not kept, and a fresh run within budget is kept", async () => {
    const { RunFeeds } = await import("../src/http/run-feed.js");
    const feeds = new RunFeeds({ maxEvents: 100, maxBytes: 1_000_000, retentionMs: 100, endedBudgetBytes: 15_000 });
    for (let i = 0; i < 5; i++) {
      // The interrupted run ends (its records kept), then the resume under the same key streams and ends.
      const parked = feeds.open("thread", `run-${i}`, { executionId: "execution", digest: `parked-${i}` });
      parked.log.append("x".repeat(5_000));
      parked.log.end(true);
      const resume = feeds.open("thread", `run-${i}`, { executionId: "execution", digest: `resume-${i}` });
      resume.log.append("y".repeat(2_400));
      resume.log.end(true);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(feeds.size).toBe(0);
    const fresh = feeds.open("thread", "fresh", { executionId: "execution", digest: "fresh" });
    fresh.log.append("z".repeat(6_500));
    fresh.log.end(true);
    // 6.5 KB of a 15 KB budget, nothing else kept: it must be there for a reconnect.
    expect(feeds.get("thread", "fresh"), "a fresh ended run within budget was dropped at once").toBeDefined();
  });
});
