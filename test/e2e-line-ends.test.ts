// A kernel may end its SSE lines with LF, CRLF (iac-code does) or a lone CR, and its writes may cut a record, a
// line or a CRLF anywhere. Through the gateway, every way gives the client the same AG-UI events: the kernel's
// stream is read by the gateway's own SSE record reader, so this is that reader in place, not on its own.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RawA2AServer, RawExchange, RawResponder } from "../src/demo/index.js";
import { startStack, type Stack, type WireEvent } from "./helpers/e2e.js";
import { comparableEvents, readRun } from "./helpers/faults.js";

const LINE_ENDS = { lf: "\n", crlf: "\r\n", cr: "\r" } as const;

/** The turn's records, lines ended by `eol`, with comments and an `event` line of no meaning between them. */
function turnBody(ex: RawExchange, eol: string): string {
  const contextId = String(ex.params?.message?.contextId ?? "");
  const working = (text: string) => ({
    statusUpdate: {
      taskId: "t1",
      contextId,
      status: { state: "TASK_STATE_WORKING", message: { messageId: "m1", contextId, taskId: "t1", role: "ROLE_AGENT", parts: [{ text }] } },
    },
  });
  const results = [
    working("Hello "),
    working("wörld 😀 "),
    working("line\nbreak\r\nin the text"),
    { statusUpdate: { taskId: "t1", contextId, status: { state: "TASK_STATE_COMPLETED" } } },
  ];
  // Each record's JSON over two data lines (joined by LF, which JSON reads as white space between its tokens).
  const records = results.map((result) => {
    const json = JSON.stringify({ jsonrpc: "2.0", id: ex.id, result });
    const comma = json.indexOf(",") + 1;
    return `data: ${json.slice(0, comma)}${eol}data:${json.slice(comma)}${eol}${eol}`;
  });
  return `: kernel says hello${eol}${records[0]}event: message${eol}${records[1]}${records[2]}: keep-alive${eol}${records[3]}`;
}

/** Prompt `<eol>:<cut>`: the body written in pieces of `cut` characters (0: one write). */
function handle(ex: RawExchange, res: RawResponder): void {
  if (ex.method !== "SendStreamingMessage") {
    res.json(200, { jsonrpc: "2.0", id: ex.id, result: { id: "t1", contextId: "c1", status: { state: "TASK_STATE_CANCELED" } } });
    return;
  }
  const prompt = ((ex.params?.message?.parts ?? []) as { text?: string }[]).map((p) => p.text ?? "").join("");
  const [eol, cut] = prompt.split(":") as [keyof typeof LINE_ENDS, string];
  // Cut between characters, not inside one: the raw server writes text (a cut inside a UTF-8 sequence is the
  // decoder's test, test/sse-reader-chunking).
  const body = [...turnBody(ex, LINE_ENDS[eol])];
  res.sseStart();
  const size = Number(cut) || body.length;
  for (let at = 0; at < body.length; at += size) res.sseRaw(body.slice(at, at + size).join(""));
  res.end();
}

let stack: Stack<RawA2AServer> | undefined;

describe("a kernel's line ends and cuts, through the gateway", () => {
  beforeAll(async () => {
    stack = await startStack({ raw: handle });
  });
  afterAll(async () => {
    await stack?.close();
  });

  /** A 200 stream of schema-valid events, a well-formed run (readRun's problems). */
  async function run(prompt: string): Promise<WireEvent[]> {
    const { status, events, problems } = await readRun(stack!.gateway.url, stack!.input({ prompt }));
    expect(status).toBe(200);
    expect(problems).toEqual([]);
    return events;
  }

  it("LF, CRLF and a lone CR, in one write or cut every 1, 2, 3 or 7 characters, give the same events", async () => {
    const reference = await run("lf:0");
    expect(reference.at(-1)?.type).toBe("RUN_FINISHED");
    const text = reference.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => (e as unknown as { delta: string }).delta).join("");
    expect(text).toBe("Hello wörld 😀 line\nbreak\r\nin the text");
    for (const eol of Object.keys(LINE_ENDS)) {
      for (const cut of [0, 1, 2, 3, 7]) {
        expect(comparableEvents(await run(`${eol}:${cut}`)), `${eol} cut ${cut}`).toEqual(comparableEvents(reference));
      }
    }
  });
});
