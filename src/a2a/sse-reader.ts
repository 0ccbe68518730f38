// The SSE frame decoder of an A2A streaming body (read by stream-call.ts), and the flow gate that paces it.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { A2AStreamResponse } from "../../operators/types.js";
import { MAX_RECORD_CHARS, parseJson } from "./bodies.js";
import { jsonRpcErrorOf } from "./errors.js";
import { decodeStreamResult, invalidFrame } from "./frames.js";
import { isObject } from "../../operators/lib/json.js";

/**
 * Backpressure hook: the client awaits ready() after pushing the frames of each network chunk, before
 * reading the next one. A slow SSE reader downstream returns a promise here, so the upstream socket is
 * not read while the client is behind.
 */
export interface FlowGate {
  ready(): Promise<void> | void;
}

/**
 * SSE records → StreamResponses. eventsource-parser handles CRLF, comments and records split across
 * chunks; this collects the frames of one chunk and remembers the first bad one, after which the
 * stream is over (frames decoded before it are still delivered, in order).
 */
export class SseFrameDecoder {
  private frames: A2AStreamResponse[] = [];
  failure: Error | undefined;
  private readonly parser = createParser({
    maxBufferSize: MAX_RECORD_CHARS,
    onEvent: (event) => this.accept(event),
    onError: (error) => {
      if (error.type === "max-buffer-size-exceeded") this.failure ??= invalidFrame();
    },
  });

  feed(text: string): void {
    if (this.failure || text === "") return;
    this.parser.feed(text);
  }

  take(): A2AStreamResponse[] {
    const frames = this.frames;
    this.frames = [];
    return frames;
  }

  private accept(event: EventSourceMessage): void {
    if (this.failure) return;
    try {
      const envelope = parseJson(event.data);
      if (event.event === "error") throw jsonRpcErrorOf(envelope);
      if (!isObject(envelope)) throw invalidFrame();
      if (envelope.error !== undefined) throw jsonRpcErrorOf(envelope);
      if (envelope.result === undefined) throw invalidFrame();
      this.frames.push(decodeStreamResult(envelope.result));
    } catch (error) {
      this.failure = error instanceof Error ? error : invalidFrame();
    }
  }
}
