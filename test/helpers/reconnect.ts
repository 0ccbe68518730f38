// A client that does what the docs tell one to do when a stream breaks: send the same request again with the id of
// the last event it has (`<runId>:0` when it has none yet), until the run's terminal event. Nothing here imports vitest.
import { SseSplitter, isTerminal, type WireEvent } from "./sse.js";

export interface DeliveredRecord {
  id: string | undefined;
  /** The record's bytes as received. */
  text: string;
  event: WireEvent;
}

export interface Delivered {
  records: DeliveredRecord[];
  /** Requests made, the first included. */
  requests: number;
  /** Why the client stopped without a terminal event: a refusal's status and code, or "gave up". */
  stopped?: { status: number; code: string | undefined } | "gave up";
}

export interface ReconnectOptions {
  /** The cursor's run part when nothing was received yet. */
  runId: string;
  headers?: Record<string, string>;
  maxRequests?: number;
  /** A Last-Event-ID to start from (a client that comes back after a reload). */
  lastEventId?: string;
}

/** POSTs `body` to `url` and reads the run to its end across broken connections. */
export async function readWithReconnects(url: string, body: unknown, options: ReconnectOptions): Promise<Delivered> {
  const records: DeliveredRecord[] = [];
  let lastId = options.lastEventId;
  const maxRequests = options.maxRequests ?? 200;
  for (let requests = 1; requests <= maxRequests; requests++) {
    const cursor = lastId ?? (requests > 1 ? `${options.runId}:0` : undefined);
    let response: Response;
    try {
      response = await fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream", ...options.headers, ...(cursor && { "Last-Event-ID": cursor }) },
        body: JSON.stringify(body),
      });
    } catch {
      continue;
    }
    if (response.status !== 200) {
      const json = (await response.json().catch(() => undefined)) as { error?: { code?: string } } | undefined;
      return { records, requests, stopped: { status: response.status, code: json?.error?.code } };
    }
    const splitter = new SseSplitter();
    try {
      for await (const chunk of response.body!) {
        for (const record of splitter.pushRecords(chunk as Uint8Array)) {
          records.push(record);
          if (record.id !== undefined) lastId = record.id;
          if (isTerminal(record.event)) return { records, requests };
        }
      }
    } catch {
      // The connection broke: ask again from the last id.
    }
  }
  return { records, requests: maxRequests, stopped: "gave up" };
}

/** The whole of a run as kept for a reconnect (`Last-Event-ID: <runId>:0`), heartbeats left out. */
export async function wholeRun(url: string, body: { runId: string }): Promise<string> {
  const reply = await fetch(new URL("/", url), {
    method: "POST",
    headers: { "Content-Type": "application/json", "Last-Event-ID": `${body.runId}:0` },
    body: JSON.stringify(body),
  });
  if (reply.status !== 200) throw new Error(`the whole run was refused: ${reply.status} ${await reply.text()}`);
  return (await reply.text()).split(": heartbeat\n\n").join("");
}
