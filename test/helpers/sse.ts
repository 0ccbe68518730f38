// The one reader of the gateway's SSE bytes for every test, the soak and the flood bench: the framing contract
// (LF only, each record the exact heartbeat comment or one `data: ` line of JSON, ending on a record boundary)
// as a list of problems, and an incremental splitter for streams read while they run. Nothing here imports vitest.

/** One AG-UI event as it crossed the wire. */
export type WireEvent = { type: string; [key: string]: unknown };

export type SseRecord = { kind: "heartbeat" } | { kind: "event"; event: WireEvent };

export const HEARTBEAT = ": heartbeat";

/**
 * SSE bytes → records and events, with a problem for every break of the framing contract. `compact` also
 * requires each record's JSON to be compact (exactly what JSON.stringify writes).
 */
export function parseSse(text: string, options: { compact?: boolean } = {}): { events: WireEvent[]; records: SseRecord[]; problems: string[] } {
  const problems: string[] = [];
  const records: SseRecord[] = [];
  if (text.includes("\r")) problems.push("CR in the SSE bytes");
  const pieces = text.split("\n\n");
  if (pieces.pop() !== "") problems.push("the stream does not end on a record boundary");
  for (const piece of pieces) {
    if (piece === HEARTBEAT) {
      records.push({ kind: "heartbeat" });
      continue;
    }
    if (!piece.startsWith("data: ") || piece.includes("\n")) {
      problems.push(`bad record ${JSON.stringify(piece.slice(0, 60))}`);
      continue;
    }
    const json = piece.slice("data: ".length);
    let event: WireEvent;
    try {
      event = JSON.parse(json) as WireEvent;
    } catch {
      problems.push(`record is not JSON ${JSON.stringify(piece.slice(0, 60))}`);
      continue;
    }
    if (options.compact && JSON.stringify(event) !== json) problems.push(`record is not compact JSON ${JSON.stringify(piece.slice(0, 60))}`);
    records.push({ kind: "event", event });
  }
  return { events: records.flatMap((r) => (r.kind === "event" ? [r.event] : [])), records, problems };
}

/** Splits SSE text that arrives in chunks into the events of its complete `data:` records (comments skipped). */
export class SseSplitter {
  private readonly decoder = new TextDecoder();
  private buffer = "";

  /** The events whose records `chunk` completes. */
  push(chunk: Uint8Array): WireEvent[] {
    this.buffer += this.decoder.decode(chunk, { stream: true });
    const events: WireEvent[] = [];
    for (let cut = this.buffer.indexOf("\n\n"); cut >= 0; cut = this.buffer.indexOf("\n\n")) {
      const record = this.buffer.slice(0, cut);
      this.buffer = this.buffer.slice(cut + 2);
      if (record.startsWith("data: ")) events.push(JSON.parse(record.slice(6)) as WireEvent);
    }
    return events;
  }
}

export function isTerminal(event: { type: string } | undefined): boolean {
  return event?.type === "RUN_FINISHED" || event?.type === "RUN_ERROR";
}
