// Observable<AguiOutput> → `data: <json>\n\n` records on the HTTP response (LF only: CRLF breaks
// @ag-ui/client's parser), `: heartbeat\n\n` for heartbeats. When the socket buffer is full the flow gate
// closes and the A2A client stops reading upstream until 'drain', so a slow reader never grows a buffer.
import type { ServerResponse } from "node:http";
import { AGUI_MEDIA_TYPE, EventEncoder } from "@ag-ui/encoder";
import type { Observable } from "rxjs";
import type { FlowGate } from "../a2a/index.js";
import { RunError, type AguiEvent, type AguiOutput } from "../../operators/index.js";
import { runErrorEvent } from "../../operators/lib/run-error-event.js";
import { SpanLedger } from "../../operators/lib/span-ledger.js";
import { localize, messageText, type Language } from "../i18n/index.js";

export const SSE_HEADERS = {
  "Content-Type": "text/event-stream",
  "Cache-Control": "no-cache",
  "X-Accel-Buffering": "no",
  Connection: "keep-alive",
} as const;

// One shared buffer: an idle stream's heartbeat costs no string encoding.
const HEARTBEAT_RECORD = Buffer.from(": heartbeat\n\n");

export class DrainGate implements FlowGate {
  private waiting: Promise<void> | undefined;
  private release: (() => void) | undefined;

  constructor(private readonly res: ServerResponse) {
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

export interface SseOptions {
  /** Sees every event before it is written (self-check, metrics). */
  onEvent?: (event: AguiOutput) => void;
  /** Length-prefixed protobuf frames (`application/vnd.ag-ui.event+proto`) instead of SSE; no heartbeats. */
  proto?: boolean;
  /**
   * An event could not be encoded (or a hook threw): the run is unsubscribed, then called; the balanced RUN_ERROR
   * that ends the stream waits for the promise it returns (the run's end, made durable first).
   */
  onFailure?: (error: unknown) => void | Promise<void>;
  /** The run's language, for that last-resort RUN_ERROR. */
  language?: Language;
}

/** The client asked for protobuf framing (HttpAgent's proto path sends exactly this media type). */
export function acceptsProto(accept: string | undefined): boolean {
  return accept !== undefined && accept.toLowerCase().includes(AGUI_MEDIA_TYPE);
}

const protoEncoder = new EventEncoder({ accept: AGUI_MEDIA_TYPE });

/** Streams until the observable completes or the client goes away; resolves with which of the two happened. */
export function writeSse(
  res: ServerResponse,
  events: (gate: FlowGate) => Observable<AguiOutput>,
  options: SseOptions = {},
): Promise<"completed" | "disconnected"> {
  return new Promise((resolve) => {
    res.writeHead(200, options.proto ? { ...SSE_HEADERS, "Content-Type": AGUI_MEDIA_TYPE } : SSE_HEADERS);
    res.flushHeaders();
    const gate = new DrainGate(res);
    let done = false;
    // The events one upstream chunk produces leave in one socket write, not one write each: SSE records are
    // joined into one string until the end of the tick (or until it reaches the socket's high-water mark, so
    // the flow gate still closes in time), bytes (heartbeats, protobuf) go out corked behind them.
    let corked = false;
    let text = "";
    const flushText = () => {
      if (text === "") return;
      const chunk = text;
      text = "";
      if (!res.write(chunk)) gate.block();
    };
    const uncork = () => {
      corked = false;
      flushText();
      res.uncork();
    };
    const end = () => {
      if (done) return;
      done = true;
      if (!res.writableEnded) {
        flushText();
        res.end();
      }
      resolve("completed");
    };
    const encode = (event: AguiOutput): string | Uint8Array | undefined => {
      if (options.proto) return event.type === "HEARTBEAT" ? undefined : protoEncoder.encodeProtobuf(event);
      return event.type === "HEARTBEAT" ? HEARTBEAT_RECORD : `data: ${JSON.stringify(event)}\n\n`;
    };
    const write = (record: string | Uint8Array | undefined) => {
      if (record === undefined) return;
      if (!corked) {
        corked = true;
        res.cork();
        process.nextTick(uncork);
      }
      if (typeof record === "string") {
        text += record;
        if (text.length >= res.writableHighWaterMark) flushText();
        return;
      }
      flushText();
      if (!res.write(record)) gate.block();
    };
    // What was written, so a stream cut short by an event we cannot encode still ends balanced.
    const spans = new SpanLedger();
    let terminalWritten = false;
    let subscription: { unsubscribe(): void } | undefined;
    let failed = false;
    const closeWithError = () => {
      if (!terminalWritten && !done) {
        const timestamp = Date.now();
        const closing: AguiEvent[] = [
          ...spans.close(timestamp),
          runErrorEvent(new RunError("A2A_PROTOCOL_ERROR", messageText("a2a.invalidFrame")), {
            timestamp,
            ...(options.language !== undefined && { translate: (english) => localize(options.language!, english) }),
          }),
        ];
        for (const event of closing) {
          try {
            write(encode(event));
          } catch {
            break;
          }
        }
      }
      end();
    };
    const fail = (error: unknown) => {
      if (failed || done) return;
      failed = true;
      subscription?.unsubscribe();
      let settling: void | Promise<void>;
      try {
        settling = options.onFailure?.(error);
      } catch {
        settling = undefined;
      }
      if (settling) void settling.then(closeWithError, closeWithError);
      else closeWithError();
    };
    subscription = events(gate).subscribe({
      next: (event) => {
        if (failed) return;
        try {
          options.onEvent?.(event);
          write(encode(event));
        } catch (error) {
          return fail(error);
        }
        if (event.type !== "HEARTBEAT" && spans.track(event)) terminalWritten = true;
      },
      error: end,
      complete: end,
    });
    if (failed) subscription.unsubscribe();
    res.on("close", () => {
      if (!done) {
        done = true;
        subscription.unsubscribe();
        resolve("disconnected");
      }
    });
  });
}
