// The SSE frame decoder of an A2A streaming body (read by stream-call.ts), and the flow gate that paces it.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { A2AStreamResponse } from "../../operators/types.js";
import { MAX_RECORD_CHARS, parseJson } from "./bodies.js";
import { jsonRpcErrorOf } from "./errors.js";
import { FrameTemplates } from "./frame-templates.js";
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
  private readonly templates = new FrameTemplates();
  private readonly parser = createParser({
    maxBufferSize: MAX_RECORD_CHARS,
    onEvent: (event) => this.accept(event),
    onError: (error) => {
      if (error.type === "max-buffer-size-exceeded") this.failure ??= invalidFrame();
    },
  });

  feed(text: string): void {
    if (this.failure || text === "") return;
    // A chunk rarely ends on a record's end. eventsource-parser joins the partial line it holds with the whole
    // next chunk (a copy of every chunk, a fifth of what the gateway allocated); fed up to the first line end
    // first, it joins that line only and reads the rest of the chunk in place. Its output does not depend on
    // where its input is cut.
    const lineEnd = text.indexOf("\n");
    if (lineEnd >= 0 && lineEnd < text.length - 1) {
      this.parser.feed(text.slice(0, lineEnd + 1));
      if (this.failure) return;
      this.parser.feed(text.slice(lineEnd + 1));
      return;
    }
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
      const delta = event.event === "error" ? undefined : this.templates.decode(event.data);
      if (delta !== undefined) return void this.frames.push(delta);
      const envelope = parseJson(event.data);
      if (event.event === "error") throw jsonRpcErrorOf(envelope);
      if (!isObject(envelope)) throw invalidFrame();
      if (envelope.error !== undefined) throw jsonRpcErrorOf(envelope);
      if (envelope.result === undefined) throw invalidFrame();
      const frame = decodeStreamResult(envelope.result);
      this.frames.push(frame);
      this.templates.learn(event.data, frame);
    } catch (error) {
      this.failure = error instanceof Error ? error : invalidFrame();
    }
  }
}
