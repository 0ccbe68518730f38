// A client that loses its stream on purpose: it reads a run's records (`id: <runId>:<seq>\ndata: …\n\n`), cuts the
// connection after a random number of them, and sends the same body again with `Last-Event-ID: <runId>:<seq>` of
// the last complete record it has, timing each reconnect from the request to the first record of the answer. It
// checks what the gateway promises: the answer starts right after the cursor and has no gap and no repeat.
import { Agent, request } from "undici";

export interface ReconnectSample {
  /** Reconnect request sent → first complete record of the answer. */
  firstRecordMs: number;
  /** Reconnect request sent → response headers. */
  headersMs: number;
  /** The cursor sent. */
  afterSeq: number;
}

export interface FollowResult {
  samples: ReconnectSample[];
  /** Answers other than 200 (409 REPLAY_EXPIRED: the cursor fell out of what is kept). */
  refused: { status: number; code: string; afterSeq: number }[];
  /** Connections whose first record was not `afterSeq + 1`, or whose records skipped or repeated a seq. */
  violations: string[];
  /** The seq of the last record read. */
  lastSeq: number;
  finished: boolean;
  connections: number;
}

export interface FollowOptions {
  /** Where the run starts. */
  url: string;
  /** Where each reconnect goes (another replica, or the same gateway). */
  reconnectUrl: string;
  body: string;
  agent: Agent;
  /** Records to read on a connection before cutting it. */
  cutAfter: () => number;
  /** Bound on connections for the run (first one included). */
  maxConnections: number;
}

const SEP = "\n\n";

/** The seq of an `id: <runId>:<seq>` record starting at `at`, or undefined (a heartbeat). */
function seqAt(text: string, at: number): number | undefined {
  if (!text.startsWith("id: ", at)) return undefined;
  const eol = text.indexOf("\n", at);
  return Number(text.slice(text.lastIndexOf(":", eol) + 1, eol));
}

/** Records with ids in `text`, which starts at a record and ends with a blank line: count, first seq, last seq. */
function scan(text: string): { count: number; first: number | undefined; last: number | undefined } {
  let count = 0;
  let first: number | undefined;
  let last: number | undefined;
  for (let at = 0; at < text.length; ) {
    const seq = seqAt(text, at);
    if (seq !== undefined) {
      count++;
      first ??= seq;
      last = seq;
    }
    const end = text.indexOf(SEP, at);
    if (end < 0) break;
    at = end + 2;
  }
  return { count, first, last };
}

export async function followWithCuts(options: FollowOptions): Promise<FollowResult> {
  const result: FollowResult = { samples: [], refused: [], violations: [], lastSeq: 0, finished: false, connections: 0 };
  let runKey: string | undefined;
  while (!result.finished && result.connections < options.maxConnections) {
    const reconnect = result.connections > 0;
    const cursor = result.lastSeq;
    const headers: Record<string, string> = { "Content-Type": "application/json", Accept: "text/event-stream" };
    if (reconnect) headers["Last-Event-ID"] = `${runKey}:${cursor}`;
    result.connections++;
    const started = performance.now();
    const res = await request(reconnect ? options.reconnectUrl : options.url, {
      dispatcher: options.agent,
      method: "POST",
      headers,
      body: options.body,
      bodyTimeout: 60_000,
      headersTimeout: 60_000,
    });
    const headersMs = performance.now() - started;
    if (res.statusCode !== 200) {
      const text = await res.body.text();
      const code = /"code"\s*:\s*"([A-Z_]+)"/.exec(text)?.[1] ?? text.slice(0, 80);
      result.refused.push({ status: res.statusCode, code, afterSeq: cursor });
      break;
    }
    const cutAt = options.cutAfter();
    const decoder = new TextDecoder();
    let carry = "";
    let read = 0;
    let sampled = !reconnect;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      const text = carry + decoder.decode(chunk, { stream: true });
      const end = text.lastIndexOf(SEP);
      if (end < 0) {
        carry = text;
        continue;
      }
      const complete = text.slice(0, end + 2);
      carry = text.slice(end + 2);
      const { count, first, last } = scan(complete);
      if (first === undefined || last === undefined) continue;
      if (!sampled) {
        sampled = true;
        result.samples.push({ firstRecordMs: performance.now() - started, headersMs, afterSeq: cursor });
      }
      if (read === 0 && first !== cursor + 1) result.violations.push(`cursor ${cursor}: answer starts at ${first}`);
      if (runKey === undefined) {
        const line = complete.slice(4, complete.indexOf("\n"));
        runKey = line.slice(0, line.lastIndexOf(":"));
      }
      read += count;
      if (last !== cursor + read) result.violations.push(`cursor ${cursor}: ${read} records end at ${last}`);
      result.lastSeq = last;
      if (complete.includes('"type":"RUN_FINISHED"') || complete.includes('"type":"RUN_ERROR"')) {
        result.finished = true;
        break;
      }
      // The cut: leaving the loop destroys the body, and with it the connection (a stream is not reusable half-read).
      if (read >= cutAt) break;
    }
  }
  return result;
}
