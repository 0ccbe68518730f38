// operate/operatorObserver (operators/lib/operate.ts): a throw inside a stage's next becomes that
// subscription's error — the run ends with a balanced RUN_ERROR, nothing reaches rxjs's unhandled hook.
// Alphabet: a RUN_STARTED · s/t/n TEXT_MESSAGE_START/CONTENT/END · u CUSTOM · e RUN_ERROR · f RUN_FINISHED.
import { Subscriber, Subscription, config } from "rxjs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createAguiPipeline } from "../operators/index.js";
import { operate, operatorObserver } from "../operators/lib/operate.js";
import { atItsSize } from "../operators/lib/short-list.js";
import type { A2AStreamResponse, AguiEvent } from "../operators/types.js";
import { a2aFrames, collectInVirtualTime, runMarbles, spell } from "./harness.js";
import { verifyAguiStream } from "../operators/verify/index.js";

const f = a2aFrames();
let escaped: unknown[] = [];
beforeEach(() => {
  escaped = [];
  config.onUnhandledError = (error) => escaped.push(error);
});
afterEach(() => {
  config.onUnhandledError = null;
});

const explodeOn = (value: string) =>
  operate<string, string>((source, subscriber) =>
    source.subscribe(
      operatorObserver(subscriber, {
        next: (x) => {
          if (x === value) throw new Error("boom");
          subscriber.next(x);
        },
      }, (thrown) => `wrapped ${(thrown as Error).message}`),
    ),
  );

describe("operate", () => {
  it("a throw in next is the subscription's error (wrapped), and the source is unsubscribed", () => {
    runMarbles((a, b) => expect(a).toEqual(b), ({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold("a-b-c|");
      expectObservable(source.pipe(explodeOn("b"))).toBe("a-#", undefined, "wrapped boom");
      expectSubscriptions(source.subscriptions).toBe("^-!");
    });
    expect(escaped).toEqual([]);
  });

  it("a frame with an odd first key (null) before its payload: pipeline events kept, nothing escapes", () => {
    const batch = f.pipelineBatch([{ eventType: "pipeline_started", eventId: "e1" }, { eventType: "pipeline_started", eventId: "e1" }]);
    // Outside the decoder (which keeps only the payload key) the operators still read the right key.
    const odd = { odd: null, ...batch } as unknown as A2AStreamResponse;
    const events = collectInVirtualTime([f.text("hello"), odd, f.turnEnd()], (scheduler) =>
      createAguiPipeline({ threadId: "t1", runId: "r1", contextId: "ctx-a1", heartbeat: false, newId: () => "x", scheduler }),
    ) as AguiEvent[];
    expect(spell(events)).toBe("astunf");
    expect(verifyAguiStream(events as never)).toEqual([]);
    expect(escaped).toEqual([]);
  });

  it("a deployment confirmation with malformed options is A2A_PROTOCOL_ERROR, not a crash", () => {
    const bad = f.status("INPUT_REQUIRED", { input: { required: true, inputId: "d1", kind: "deployment_confirmation", options: [{ id: "" }] } });
    const events = collectInVirtualTime([f.text("plan"), bad], (scheduler) =>
      createAguiPipeline({ threadId: "t1", runId: "r1", contextId: "ctx-a1", heartbeat: false, newId: () => "x", scheduler }),
    ) as AguiEvent[];
    expect(spell(events)).toBe("astne");
    expect((events.at(-1) as { code?: string }).code).toBe("A2A_PROTOCOL_ERROR");
    expect(escaped).toEqual([]);
  });
});

describe("the operator subscriber's finalizers (kept at their size as they are added)", () => {
  it("every teardown added runs once when the subscription ends, however many there are", () => {
    for (const count of [1, 2, 4, 5, 9]) {
      const ran: number[] = [];
      const holder = new Subscription();
      const observer = operatorObserver(new Subscriber<unknown>(), { next: () => undefined });
      holder.add(observer);
      for (let i = 0; i < count; i++) observer.add(() => ran.push(i));
      const removed = () => ran.push(-1);
      observer.add(removed);
      observer.remove(removed);
      holder.unsubscribe();
      expect(ran).toEqual(Array.from({ length: count }, (_, i) => i));
    }
  });

  it("atItsSize copies a list of up to four and leaves a longer one as it is", () => {
    for (const length of [0, 1, 4]) {
      const list = Array.from({ length }, (_, i) => i);
      const sized = atItsSize(list);
      expect(sized).toEqual(list);
      expect(sized).not.toBe(list);
    }
    const long = [1, 2, 3, 4, 5];
    expect(atItsSize(long)).toBe(long);
  });
});
