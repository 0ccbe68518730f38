// A hostile kernel: frames built to break the gateway rather than to be read (issue 14). Deep nesting in
// every place metadata is copied, amplified interrupts, odd result keys, huge numbers, on SSE and on
// protobuf framing. Each one ends its own run with a balanced, schema-valid terminal event; the process
// is still this one, /health answers, the next run works, and nothing reached rxjs's last-resort hook.
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { of } from "rxjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RawA2AServer } from "../src/demo/index.js";
import { startStack, type Stack } from "./helpers/e2e.js";
import { httpCall, postJson, sseEvents, streamProblems, type Event } from "./helpers/faults.js";
import { HOSTILE_CASES, TASK, hostileHandler, protoEvents } from "./helpers/hostile.js";

const PID = process.pid;
let stack: Stack<RawA2AServer>;
let stateDir: string;

beforeAll(async () => {
  stateDir = await mkdtemp(path.join(tmpdir(), "agui-hostile-state-"));
  stack = await startStack({ raw: hostileHandler(HOSTILE_CASES), gateway: { interruptTtlSeconds: 0, stateDir } });
});

afterAll(async () => {
  await stack?.close();
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

/** The largest thread file: what a hostile frame could push into the state. */
async function largestStateFile(): Promise<number> {
  const dir = path.join(stateDir, "threads");
  // A write's temporary file may be renamed between readdir and stat (under load): it has no size left to check.
  const sizeOf = (name: string) =>
    stat(path.join(dir, name)).then(
      (s) => s.size,
      (error: NodeJS.ErrnoException) => (error.code === "ENOENT" && name.endsWith(".tmp") ? 0 : Promise.reject(error)),
    );
  const sizes = await Promise.all((await readdir(dir)).map(sizeOf));
  return Math.max(0, ...sizes);
}

async function unhandled(): Promise<number> {
  return (await stack.gateway.metrics.unhandledErrors.get()).values.reduce((n, v) => n + v.value, 0);
}

/** CancelTask calls the kernel received for the hostile turns' task. */
function cancels(): number {
  return stack.upstream.requests.filter((r) => r.method === "CancelTask" && r.params?.id === TASK).length;
}

async function writeFailures(): Promise<number> {
  return (await stack.gateway.metrics.streamWriteFailures.get()).values.reduce((n, v) => n + v.value, 0);
}

async function expectAlive(): Promise<void> {
  expect(process.pid).toBe(PID);
  const health = await httpCall(new URL("/health", stack.gateway.url).href, { method: "GET", timeoutMs: 5_000 });
  expect(health.status).toBe(200);
  const next = await postJson(stack.gateway.url, stack.input({ prompt: "ordinary" }));
  const { events } = sseEvents(next.text);
  expect(events.at(-1)?.type).toBe("RUN_FINISHED");
}

describe("hostile upstream frames end one run, never the process", () => {
  for (const [name] of Object.entries(HOSTILE_CASES)) {
    for (const framing of ["sse", "proto"] as const) {
      it(`${name} (${framing})`, async () => {
        const cancelsBefore = cancels();
        const accept = framing === "proto" ? "application/vnd.ag-ui.event+proto" : "text/event-stream";
        const reply = await postJson(stack.gateway.url, stack.input({ prompt: name }), { Accept: accept });
        expect(reply.status).toBe(200);
        let events: Event[];
        if (framing === "sse") {
          const parsed = sseEvents(reply.text);
          expect(parsed.problems).toEqual([]);
          events = parsed.events;
        } else {
          events = protoEvents(reply.body);
        }
        if (framing === "sse") expect(streamProblems(events)).toEqual([]);
        const last = events.at(-1);
        expect(["RUN_FINISHED", "RUN_ERROR"]).toContain(last?.type);
        if (last?.type === "RUN_ERROR") {
          expect(last["code"]).toBe("A2A_PROTOCOL_ERROR");
          // The task the bad frame belonged to is cancelled (unless its id never got through).
          if (name !== "huge task id") await expect.poll(cancels, { timeout: 2_000 }).toBe(cancelsBefore + 1);
        }
        // Nothing oversized leaves the gateway, or reaches its state.
        expect(reply.body.length).toBeLessThan(1_000_000);
        expect(await largestStateFile()).toBeLessThan(64 * 1024);
        await expectAlive();
        // Caught where frames are decoded: neither last resort (the writer's guard, rxjs's hook) was needed.
        expect(await unhandled()).toBe(0);
        expect(await writeFailures()).toBe(0);
      });
    }
  }
});

describe("ids the run keeps until it ends", () => {
  const names = ["huge pipeline event id", "huge tool use id", "huge pipeline tool use id", "huge message id", "huge pipeline scope"];
  it("longer than 256 code points end the run as A2A_PROTOCOL_ERROR where the frame is decoded", async () => {
    for (const name of names) {
      const { events } = sseEvents((await postJson(stack.gateway.url, stack.input({ prompt: name }))).text);
      expect(streamProblems(events)).toEqual([]);
      expect([name, events.at(-1)?.type, events.at(-1)?.["code"]]).toEqual([name, "RUN_ERROR", "A2A_PROTOCOL_ERROR"]);
    }
    await expectAlive();
  });
});

describe("other streams", () => {
  it("a stream that is open while hostile frames end other runs finishes normally", async () => {
    const slow = postJson(stack.gateway.url, stack.input({ prompt: "slow" }));
    const hostile = ["deep artifact metadata", "200k interrupt options", "usage 2^63", "null first result key"];
    await Promise.all(hostile.map((name) => postJson(stack.gateway.url, stack.input({ prompt: name }), { Accept: "application/vnd.ag-ui.event+proto" })));
    const { events, problems } = sseEvents((await slow).text);
    expect(problems).toEqual([]);
    expect(streamProblems(events)).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    await expectAlive();
  });
});

describe("the last-resort hook", () => {
  it("logs and counts an error that escapes a subscriber instead of ending the process", async () => {
    const before = await unhandled();
    // A consumer's own next throwing: rxjs has nowhere to send it but its unhandled-error hook.
    of(1).subscribe({
      next: () => {
        throw new Error("escaped on purpose");
      },
    });
    await expect.poll(unhandled, { timeout: 2_000 }).toBe(before + 1);
    await expectAlive();
  });
});
