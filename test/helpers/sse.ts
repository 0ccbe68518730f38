// The one reader of the gateway's SSE bytes for every test, the soak and the flood bench: the framing contract
// (LF only, each record the exact heartbeat comment or one `data: ` line of JSON, after an `id: <runId>:<seq>`
// line whose seq counts up by one within the run, ending on a record boundary) as a list of problems, and an
// incremental splitter for streams read while they run. Nothing here imports vitest.

/** One AG-UI event as it crossed the wire. */
export type WireEvent = { type: string; [key: string]: unknown };

export type SseRecord = { kind: "heartbeat" } | { kind: "event"; event: WireEvent; id?: string };

const ID_LINE = /^id: (.+):(0|[1-9][0-9]*)\n/;

export const HEARTBEAT = ": heartbeat";

/**
 * SSE bytes → records and events, with a problem for every break of the framing contract. `compact` also
 * requires each record's JSON to be compact (exactly what JSON.stringify writes).
 */
export function parseSse(text: string, options: { compact?: boolean } = {}): { events: WireEvent[]; records: SseRecord[]; problems: string[] } {
  const problems: string[] = [];
  const records: SseRecord[] = [];
  if (text.includes("\r")) problems.push("CR in the SSE bytes");
  let lastId: { key: string; seq: number } | undefined;
  const pieces = text.split("\n\n");
  if (pieces.pop() !== "") problems.push("the stream does not end on a record boundary");
  for (const piece of pieces) {
    if (piece === HEARTBEAT) {
      records.push({ kind: "heartbeat" });
      continue;
    }
    const idLine = ID_LINE.exec(piece);
    const data = idLine ? piece.slice(idLine[0].length) : piece;
    if (!data.startsWith("data: ") || data.includes("\n")) {
      problems.push(`bad record ${JSON.stringify(piece.slice(0, 60))}`);
      continue;
    }
    if (idLine) {
      const [, key, seq] = idLine;
      // Within a run the seq counts up by one; another run's ids (a second response in the same text) start anew.
      if (lastId && key === lastId.key && Number(seq) !== lastId.seq + 1) problems.push(`event id ${key}:${seq} does not follow ${lastId.key}:${lastId.seq}`);
      lastId = { key: key!, seq: Number(seq) };
    } else if (lastId) problems.push(`a record without an id after ${lastId.key}:${lastId.seq}`);
    const json = data.slice("data: ".length);
    let event: WireEvent;
    try {
      event = JSON.parse(json) as WireEvent;
    } catch {
      problems.push(`record is not JSON ${JSON.stringify(piece.slice(0, 60))}`);
      continue;
    }
    if (options.compact && JSON.stringify(event) !== json) problems.push(`record is not compact JSON ${JSON.stringify(piece.slice(0, 60))}`);
    records.push({ kind: "event", event, ...(idLine && { id: `${idLine[1]}:${idLine[2]}` }) });
  }
  return { events: records.flatMap((r) => (r.kind === "event" ? [r.event] : [])), records, problems };
}

/** Splits SSE text that arrives in chunks into the events of its complete `data:` records (comments skipped). */
export class SseSplitter {
  private readonly decoder = new TextDecoder();
  private buffer = "";

  /** The events whose records `chunk` completes. */
  push(chunk: Uint8Array): WireEvent[] {
    return this.pushRecords(chunk).map((r) => r.event);
  }

  /** The events whose records `chunk` completes, each with its record's text and id (if any). */
  pushRecords(chunk: Uint8Array): { event: WireEvent; id: string | undefined; text: string }[] {
    this.buffer += this.decoder.decode(chunk, { stream: true });
    const records: { event: WireEvent; id: string | undefined; text: string }[] = [];
    for (let cut = this.buffer.indexOf("\n\n"); cut >= 0; cut = this.buffer.indexOf("\n\n")) {
      const text = this.buffer.slice(0, cut + 2);
      this.buffer = this.buffer.slice(cut + 2);
      const idLine = ID_LINE.exec(text);
      const data = idLine ? text.slice(idLine[0].length) : text;
      if (data.startsWith("data: ")) records.push({ event: JSON.parse(data.slice(6)) as WireEvent, id: idLine ? `${idLine[1]}:${idLine[2]}` : undefined, text });
    }
    return records;
  }
}

export function isTerminal(event: { type: string } | undefined): boolean {
  return event?.type === "RUN_FINISHED" || event?.type === "RUN_ERROR";
}
