// Observable<AguiOutput> → `id: <runId>:<seq>\ndata: <json>\n\n` records (LF only: CRLF breaks @ag-ui/client's
// parser), `: heartbeat\n\n` for heartbeats, or length-prefixed protobuf frames. Two halves: the encoder turns a
// run's events into records for a sink (a run's replay log, or the response itself), and SseResponse writes
// records on the socket. When the socket buffer is full the flow gate closes and the A2A client stops reading
// upstream until 'drain', so a slow reader never grows a buffer.
import { createHash } from "node:crypto";
import { digestKey, isOwnKey } from "../event-ids.js";
import type { ServerResponse } from "node:http";
import { AGUI_MEDIA_TYPE, EventEncoder } from "@ag-ui/encoder";
import type { Observable } from "rxjs";
import type { FlowGate } from "../a2a/index.js";
import { RunError, type AguiEvent, type AguiOutput } from "../../operators/index.js";
import { runErrorEvent } from "../../operators/lib/run-error-event.js";
import { SpanLedger } from "../../operators/lib/span-ledger.js";
import { localize, messageText, type Language } from "../i18n/index.js";
import { eventJson } from "./event-json.js";

// No Connection header: Node answers keep-alive by itself, and `close` when the client asked for it.
export const SSE_HEADERS = {
  "Content-Type": "text/event-stream",
  "Cache-Control": "no-cache",
  "X-Accel-Buffering": "no",
} as const;

// One shared buffer: an idle stream's heartbeat costs no string encoding.
const HEARTBEAT_RECORD = Buffer.from(": heartbeat\n\n");

export class DrainGate implements FlowGate {
  private waiting: Promise<void> | undefined;
  private release: (() => void) | undefined;

  constructor(res: ServerResponse) {
    res.on("drain", () => this.open());
    res.on("close", () => this.open());
  }

  block(): void {
    if (this.waiting) return;
    this.waiting = new Promise((resolve) => (this.release = resolve));
  }

  ready(): Promise<void> | void {
    return this.waiting;
  }

  private open(): void {
    const release = this.release;
    this.waiting = undefined;
    this.release = undefined;
    release?.();
  }
}

/** The client asked for protobuf framing (HttpAgent's proto path sends exactly this media type). */
export function acceptsProto(accept: string | undefined): boolean {
  return accept !== undefined && accept.toLowerCase().includes(AGUI_MEDIA_TYPE);
}

/** The run part of the stream's event ids (src/event-ids.ts). */
export function eventIdKey(runId: string): string {
  return isOwnKey(runId) ? runId : digestKey(createHash("sha256").update(runId, "utf8").digest("hex"));
}

/** Where a reader of a run's records writes them: a response, or something that passes them on to one. */
export interface RecordTarget {
  readonly res: ServerResponse;
  readonly gate: FlowGate;
  /** Bytes written but not yet taken by the socket. */
  readonly backlog: number;
  write(record: string | Uint8Array): void;
  heartbeat(): void;
  end(): void;
}

/** A stream's response: headers, the records of one tick joined into one socket write, and the flow gate. */
export class SseResponse implements RecordTarget {
  readonly gate: DrainGate;
  private corked = false;
  private text = "";
  private finished = false;
  private readonly uncork = () => {
    this.corked = false;
    this.flushText();
    this.res.uncork();
  };

  constructor(
    readonly res: ServerResponse,
    readonly proto: boolean,
  ) {
    res.writeHead(200, proto ? { ...SSE_HEADERS, "Content-Type": AGUI_MEDIA_TYPE } : SSE_HEADERS);
    res.flushHeaders();
    this.gate = new DrainGate(res);
  }

  /** The client is gone, or the stream was ended. */
  get closed(): boolean {
    return this.finished || this.res.destroyed || this.res.writableEnded;
  }

  /** Bytes written but not yet taken by the socket. */
  get backlog(): number {
    return this.res.writableLength + this.text.length;
  }

  // The events one upstream chunk produces leave in one socket write, not one write each: SSE records are joined
  // into one string until the end of the tick (or until it reaches the socket's high-water mark, so the flow gate
  // still closes in time), bytes (heartbeats, protobuf) go out corked behind them.
  write(record: string | Uint8Array): void {
    if (this.closed) return;
    if (!this.corked) {
      this.corked = true;
      this.res.cork();
      process.nextTick(this.uncork);
    }
    if (typeof record === "string") {
      this.text += record;
      if (this.text.length >= this.res.writableHighWaterMark) this.flushText();
      return;
    }
    this.flushText();
    if (!this.res.write(record)) this.gate.block();
  }

  heartbeat(): void {
    if (!this.proto) this.write(HEARTBEAT_RECORD);
  }

  end(): void {
    if (this.finished) return;
    this.finished = true;
    if (!this.res.writableEnded) {
      this.flushText();
      this.res.end();
    }
  }

  private flushText(): void {
    if (this.text === "") return;
    const chunk = this.text;
    this.text = "";
    if (!this.res.write(chunk)) this.gate.block();
  }
}

/** Where encoded records go: a run's replay log, or a response directly. */
export interface RecordSink {
  record(record: string | Uint8Array): void;
  heartbeat(): void;
  /** `complete`: the terminal event was written. */
  end(complete: boolean): void;
}

export interface EncodeOptions {
  /** Sees every event before it is encoded (self-check, metrics). */
  onEvent?: (event: AguiOutput) => void;
  /** Length-prefixed protobuf frames (`application/vnd.ag-ui.event+proto`) instead of SSE: no ids, no heartbeats. */
  proto?: boolean;
  /** SSE records carry `id: <idKey>:<seq>`, seq from 1. */
  idKey?: string;
  /**
   * An event could not be encoded (or a hook threw): the run is unsubscribed, then called; the balanced RUN_ERROR
   * that ends the stream waits for the promise it returns (the run's end, made durable first).
   */
  onFailure?: (error: unknown) => void | Promise<void>;
  /** The run's language, for that last-resort RUN_ERROR. */
  language?: Language;
}

const protoEncoder = new EventEncoder({ accept: AGUI_MEDIA_TYPE });

/**
 * Encodes the events into the sink until they end; unsubscribing the result stops them (a client that went away).
 * `idKey`: the ids' key, when `options` (perhaps a class instance, not to be spread) does not say it.
 */
export function encodeInto(events: Observable<AguiOutput>, sink: RecordSink, options: EncodeOptions = {}, idKey = options.idKey): { unsubscribe(): void } {
  const encoder = new RunEncoder(sink, options, idKey);
  encoder.subscription = events.subscribe(encoder);
  if (encoder.failed) encoder.subscription.unsubscribe();
  return encoder;
}

/**
 * One run's encoding: the observer of its events and the handle that stops them. A class rather than closures
 * over the run's state: an idle stream holds it for as long as it is open, its methods on the prototype.
 */
class RunEncoder {
  private seq = 0;
  private done = false;
  failed = false;
  // What was written, so a stream cut short by an event we cannot encode still ends balanced.
  private readonly spans = new SpanLedger();
  private terminalWritten = false;
  subscription: { unsubscribe(): void } | undefined;

  constructor(
    private readonly sink: RecordSink,
    private readonly options: EncodeOptions,
    private readonly idKey: string | undefined,
  ) {}

  next(event: AguiOutput): void {
    if (this.failed) return;
    let record: string | Uint8Array | undefined;
    try {
      this.options.onEvent?.(event);
      if (event.type !== "HEARTBEAT") record = this.encode(event);
    } catch (error) {
      return this.fail(error);
    }
    if (record === undefined) return this.sink.heartbeat();
    this.sink.record(record);
    if (this.spans.track(event)) this.terminalWritten = true;
  }

  error(): void {
    this.end();
  }

  complete(): void {
    this.end();
  }

  unsubscribe(): void {
    this.done = true;
    this.subscription!.unsubscribe();
  }

  private encode(event: AguiEvent): string | Uint8Array {
    if (this.options.proto) return protoEncoder.encodeProtobuf(event);
    const data = `data: ${eventJson(event)}\n\n`;
    const idKey = this.idKey;
    return idKey === undefined ? data : `id: ${idKey}:${++this.seq}\n${data}`;
  }

  private end(): void {
    if (this.done) return;
    this.done = true;
    this.sink.end(this.terminalWritten);
  }

  private closeWithError(): void {
    if (!this.terminalWritten && !this.done) {
      const timestamp = Date.now();
      const language = this.options.language;
      const closing: AguiEvent[] = [
        ...this.spans.close(timestamp),
        runErrorEvent(new RunError("A2A_PROTOCOL_ERROR", messageText("a2a.invalidFrame")), {
          timestamp,
          ...(language !== undefined && { translate: (english) => localize(language, english) }),
        }),
      ];
      for (const event of closing) {
        try {
          this.sink.record(this.encode(event));
        } catch {
          break;
        }
        if (this.spans.track(event)) this.terminalWritten = true;
      }
    }
    this.end();
  }

  private fail(error: unknown): void {
    if (this.failed || this.done) return;
    this.failed = true;
    this.subscription?.unsubscribe();
    let settling: void | Promise<void>;
    try {
      settling = this.options.onFailure?.(error);
    } catch {
      settling = undefined;
    }
    const close = () => this.closeWithError();
    if (settling) void settling.then(close, close);
    else this.closeWithError();
  }
}

/**
 * Streams on the response alone, without a replay log (protobuf clients), until the observable completes or the
 * client goes away; resolves with which of the two happened.
 */
export function writeSse(
  response: SseResponse,
  events: (gate: FlowGate) => Observable<AguiOutput>,
  options: EncodeOptions = {},
): Promise<"completed" | "disconnected"> {
  return new Promise((resolve) => {
    let ended = false;
    const sink: RecordSink = {
      record: (record) => response.write(record),
      heartbeat: () => response.heartbeat(),
      end: () => {
        ended = true;
        response.end();
        resolve("completed");
      },
    };
    const subscription = encodeInto(events(response.gate), sink, options);
    response.res.on("close", () => {
      if (ended) return;
      subscription.unsubscribe();
      resolve("disconnected");
    });
  });
}
