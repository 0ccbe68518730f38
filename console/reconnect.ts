// A fetch for HttpAgent whose run streams outlive a broken connection. The gateway gives every SSE record an id
// (`<runId>:<seq>`) and keeps what it sent for a while: when the stream breaks before the run's terminal event, the
// same request (same body) goes out again with `Last-Event-ID`, and the rest of the run is passed on as if nothing
// had happened. HttpAgent reads one uninterrupted stream; only whole records reach it.
// See docs/reconnect.md.

export interface ResilientFetchOptions {
  /** The waits before each reconnect in a row that brought no new event; once used up, the stream fails. */
  backoffMs?: readonly number[];
  /** Told before each reconnect (the page shows it). */
  onReconnect?: (attempt: number, lastEventId: string) => void;
  /**
   * Told why the stream could not be resumed (a refusal such as 409 REPLAY_EXPIRED, or every try failed); the
   * stream then ends without its terminal event. Without it the stream fails with that error, which @ag-ui/client
   * 1.0 also leaves as an unhandled rejection (it rethrows the failed body's cancel).
   */
  onGiveUp?: (error: Error) => void;
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
  /** Which URLs answer a Last-Event-ID (POST / does; POST /connect does not: a lost connect connects again). */
  resumable?: (url: string) => boolean;
}

export const DEFAULT_BACKOFF_MS: readonly number[] = [250, 500, 1_000, 2_000];

type Fetch = (url: string, init: RequestInit) => Promise<Response>;

/** `fetch` for HttpAgent: run streams (text/event-stream) reconnect with Last-Event-ID; everything else is as fetched. */
export function resilientFetch(options: ResilientFetchOptions = {}): Fetch {
  const backoff = options.backoffMs ?? DEFAULT_BACKOFF_MS;
  const doFetch: Fetch = options.fetch ?? ((url, init) => fetch(url, init));
  return async (url, init) => {
    const first = await doFetch(url, init);
    const type = first.headers.get("content-type") ?? "";
    if (!first.ok || !first.body || !type.startsWith("text/event-stream") || options.resumable?.(url) === false) return first;
    const signal = init.signal ?? undefined;
    const body = new RecordReader(runIdOf(init.body));
    let reader: ReadableStreamDefaultReader<string> | undefined;
    let stopped = false;

    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        let response: Response | undefined = first;
        let failures = 0;
        const giveUp = (error: Error) => {
          if (!options.onGiveUp) return controller.error(error);
          options.onGiveUp(error);
          controller.close();
        };
        for (;;) {
          let progressed = false;
          let failure: unknown;
          if (response) {
            try {
              reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
              for (let read = await reader.read(); !read.done; read = await reader.read()) {
                for (const record of body.push(read.value)) {
                  if (record.id !== undefined) progressed = true;
                  controller.enqueue(record.bytes);
                }
              }
            } catch (error) {
              failure = error;
            }
          }
          if (stopped) return;
          if (body.finished) return controller.close();
          if (signal?.aborted) return controller.error(abortError(failure, signal));
          // A clean end without the terminal event is a break as well: the run is not over.
          failures = progressed ? 1 : failures + 1;
          const wait = backoff[failures - 1];
          if (wait === undefined) return giveUp(new TypeError(`The stream broke and could not be resumed after ${backoff.length} tries.`));
          body.reset();
          await sleep(wait, signal);
          if (stopped) return;
          if (signal?.aborted) return controller.error(abortError(undefined, signal));
          const lastEventId = body.lastEventId();
          options.onReconnect?.(failures, lastEventId);
          try {
            response = await doFetch(url, { ...init, headers: { ...headerRecord(init.headers), "Last-Event-ID": lastEventId } });
          } catch (error) {
            if (signal?.aborted) return controller.error(abortError(error, signal));
            response = undefined;
            continue;
          }
          if (!response.ok || !response.body) {
            // A refusal (409 REPLAY_EXPIRED, RUN_ID_CONFLICT, …) ends the stream the way HttpAgent reports a refused run.
            const text = await response.text().catch(() => "");
            return giveUp(Object.assign(new Error(`HTTP ${response.status}: ${text}`), { status: response.status, payload: tryJson(text) }));
          }
        }
      },
      cancel(reason) {
        stopped = true;
        void reader?.cancel(reason).catch(() => {});
      },
    });
    return new Response(stream, { status: first.status, statusText: first.statusText, headers: first.headers });
  };
}

export interface SseRecord {
  /** The record as received, with its blank line. */
  bytes: Uint8Array;
  id?: string;
  /** The event's type when the record carries one. */
  type?: string;
}

/** Splits SSE text into whole records, noting the last id and whether the run's terminal event went by. */
export class RecordReader {
  private buffer = "";
  private lastId = "";
  finished = false;
  private readonly encoder = new TextEncoder();

  constructor(private readonly runId: string | undefined) {}

  push(text: string): SseRecord[] {
    this.buffer += text;
    const records: SseRecord[] = [];
    for (let end = this.buffer.indexOf("\n\n"); end >= 0; end = this.buffer.indexOf("\n\n")) {
      const raw = this.buffer.slice(0, end + 2);
      this.buffer = this.buffer.slice(end + 2);
      const id = /^id: ?(.*)$/m.exec(raw)?.[1];
      const data = /^data: ?(.*)$/m.exec(raw)?.[1];
      const type = data !== undefined ? typeOf(data) : undefined;
      if (id !== undefined) this.lastId = id;
      if (type === "RUN_FINISHED" || type === "RUN_ERROR") this.finished = true;
      records.push({ bytes: this.encoder.encode(raw), ...(id !== undefined && { id }), ...(type !== undefined && { type }) });
    }
    return records;
  }

  /** Drops a partial record left by a broken connection: the reconnect sends it again whole. */
  reset(): void {
    this.buffer = "";
  }

  /** What to send as Last-Event-ID: the last id received, or `<runId>:0` when none came yet. */
  lastEventId(): string {
    return this.lastId !== "" ? this.lastId : `${this.runId ?? ""}:0`;
  }
}

function typeOf(data: string): string | undefined {
  try {
    const event = JSON.parse(data) as { type?: unknown };
    return typeof event.type === "string" ? event.type : undefined;
  } catch {
    return undefined;
  }
}

function runIdOf(body: RequestInit["body"]): string | undefined {
  if (typeof body !== "string") return undefined;
  const parsed = tryJson(body) as { runId?: unknown } | undefined;
  return typeof parsed?.runId === "string" ? parsed.runId : undefined;
}

function headerRecord(headers: RequestInit["headers"]): Record<string, string> {
  const result: Record<string, string> = {};
  new Headers(headers).forEach((value, name) => {
    result[name] = value;
  });
  return result;
}

function abortError(cause: unknown, signal: AbortSignal): unknown {
  if (cause instanceof Error && cause.name === "AbortError") return cause;
  return signal.reason instanceof Error ? signal.reason : new DOMException("The request was stopped.", "AbortError");
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
