// The records of an SSE body, read line by line as the WHATWG event-stream rules say: LF, CRLF and CR line ends
// (a CRLF may be cut between two chunks), comments, `event`, and `data` over several lines; an empty line ends a
// record, which is given on only when it had data. `id` and `retry` mean nothing to a gateway that does not
// reconnect to its kernel by them, and unknown fields are ignored, as the rules say. A class rather than a
// parser of closures: a stream keeps its reader for as long as it is open (minutes, for a parked run).

const LF = 10;
const CR = 13;
const SPACE = 32;
const COLON = 58;

/** Where a reader's records go. */
export interface SseRecordTarget {
  /** One record: its data lines joined by LF, and its `event` field when it had a non-empty one. */
  record(data: string, event: string | undefined): void;
  /** A line or a record outgrew the reader's bound: nothing more is read. */
  oversize(): void;
}

export class SseRecordReader {
  /** The start of a line the last chunk ended inside. */
  private partial = "";
  private data = "";
  private dataLines = 0;
  private event: string | undefined;
  /** The last chunk ended with CR: an LF at the start of the next one belongs to it. */
  private afterCR = false;
  private stopped = false;

  constructor(
    private readonly target: SseRecordTarget,
    /** Characters one record may hold (its data, plus the line not yet ended). */
    private readonly maxChars: number,
  ) {}

  feed(chunk: string): void {
    if (this.stopped || chunk === "") return;
    let at = 0;
    if (this.afterCR) {
      this.afterCR = false;
      if (chunk.charCodeAt(0) === LF) at = 1;
    }
    // Where the next LF and the next CR are, each searched again only once passed: a body whose lines end with
    // one kind has few or none of the other, and a search per line for it would read the chunk over and over.
    let lf = chunk.indexOf("\n", at);
    let cr = chunk.indexOf("\r", at);
    while (at < chunk.length) {
      if (lf !== -1 && lf < at) lf = chunk.indexOf("\n", at);
      if (cr !== -1 && cr < at) cr = chunk.indexOf("\r", at);
      let end = lf;
      let next = end + 1;
      if (cr !== -1 && (end === -1 || cr < end)) {
        end = cr;
        next = chunk.charCodeAt(cr + 1) === LF ? cr + 2 : cr + 1;
        if (cr === chunk.length - 1) this.afterCR = true;
      }
      if (end === -1) break;
      if (this.partial === "") {
        this.line(chunk, at, end);
      } else {
        const line = this.partial + chunk.slice(at, end);
        this.partial = "";
        this.line(line, 0, line.length);
      }
      at = next;
    }
    if (at < chunk.length) this.partial += chunk.slice(at);
    if (this.partial.length + this.data.length > this.maxChars) {
      this.stopped = true;
      this.partial = this.data = "";
      this.target.oversize();
    }
  }

  /** The line `text[start, end)`. */
  private line(text: string, start: number, end: number): void {
    if (start === end) return this.dispatch();
    if (text.charCodeAt(start) === COLON) return;
    // The field name ends at the line's first colon (a line without one is a field name alone).
    let fieldEnd = start;
    while (fieldEnd < end && text.charCodeAt(fieldEnd) !== COLON) fieldEnd++;
    let valueStart = fieldEnd < end ? fieldEnd + 1 : end;
    if (valueStart < end && text.charCodeAt(valueStart) === SPACE) valueStart++;
    const nameLength = fieldEnd - start;
    if (nameLength === 4 && text.startsWith("data", start)) {
      const value = text.slice(valueStart, end);
      this.data = this.dataLines === 0 ? value : `${this.data}\n${value}`;
      this.dataLines++;
    } else if (nameLength === 5 && text.startsWith("event", start)) {
      this.event = valueStart < end ? text.slice(valueStart, end) : undefined;
    }
  }

  private dispatch(): void {
    const { data, dataLines, event } = this;
    this.data = "";
    this.dataLines = 0;
    this.event = undefined;
    if (dataLines > 0) this.target.record(data, event);
  }
}
