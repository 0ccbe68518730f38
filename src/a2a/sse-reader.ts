// The SSE frame decoder of an A2A streaming body (read by stream-call.ts), and the flow gate that paces it.
import type { A2AStreamResponse } from "../../operators/types.js";
import { MAX_RECORD_CHARS, parseJson } from "./bodies.js";
import { jsonRpcErrorOf } from "./errors.js";
import { FrameTemplates } from "./frame-templates.js";
import { decodeStreamResult, invalidFrame } from "./frames.js";
import { SseRecordReader, type SseRecordTarget } from "./sse-records.js";
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
 * SSE records → StreamResponses. SseRecordReader handles CRLF, comments and records split across chunks;
 * this collects the frames of one chunk and remembers the first bad one, after which the stream is over
 * (frames decoded before it are still delivered, in order).
 */
export class SseFrameDecoder implements SseRecordTarget {
  private frames: A2AStreamResponse[] = [];
  failure: Error | undefined;
  private readonly templates = new FrameTemplates();
  private readonly records = new SseRecordReader(this, MAX_RECORD_CHARS);

  feed(text: string): void {
    if (this.failure || text === "") return;
    this.records.feed(text);
  }

  take(): A2AStreamResponse[] {
    const frames = this.frames;
    this.frames = [];
    return frames;
  }

  oversize(): void {
    this.failure ??= invalidFrame();
  }

  record(data: string, event: string | undefined): void {
    if (this.failure) return;
    try {
      const delta = event === "error" ? undefined : this.templates.decode(data);
      if (delta !== undefined) return void this.frames.push(delta);
      const envelope = parseJson(data);
      if (event === "error") throw jsonRpcErrorOf(envelope);
      if (!isObject(envelope)) throw invalidFrame();
      if (envelope.error !== undefined) throw jsonRpcErrorOf(envelope);
      if (envelope.result === undefined) throw invalidFrame();
      const frame = decodeStreamResult(envelope.result);
      this.frames.push(frame);
      this.templates.learn(data, frame);
    } catch (error) {
      this.failure = error instanceof Error ? error : invalidFrame();
    }
  }
}
