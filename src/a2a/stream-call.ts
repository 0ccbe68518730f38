// One streaming JSON-RPC call as undici's dispatch handler: the response's SSE body decoded straight into the
// run's subscriber, with backpressure (a closed flow gate pauses the request) and the idle timer kept in step.
// A handler object rather than `request()`: an idle stream then holds this one object, not a body Readable with
// its state and listeners, an AbortController, a request handler and a pending promise chain with its closures.
import { StringDecoder } from "node:string_decoder";
import type { Subscriber, Unsubscribable } from "rxjs";
import { errors, util, type Dispatcher } from "undici";
import type { A2AStreamResponse } from "../../operators/types.js";
import { MAX_RECORD_CHARS, isEventStream, isSuccess, parseJson } from "./bodies.js";
import { A2AJsonRpcError, a2aUnavailable, classify, jsonRpcErrorOf } from "./errors.js";
import { invalidFrame } from "./frames.js";
import { IdleWatch } from "./idle-watch.js";
import { SseFrameDecoder, type FlowGate } from "./sse-reader.js";
import { errorCodeOf, type TraceSpan } from "../ops/trace.js";

/** The kernel's JSON-RPC error code is kept beside the failure's own code (A2AJsonRpcError, A2A_UNAVAILABLE, …). */
export function failCall(span: TraceSpan, error: unknown): void {
  if (error instanceof A2AJsonRpcError) span.set({ "rpc.jsonrpc.error_code": error.code });
  span.fail(errorCodeOf(error));
}

/**
 * The reason a run's request is ended with, made once: built per request, with its stack, it cost about a tenth of
 * a millisecond of main-thread time per run (0d16110); only a handler that has already stopped listening sees it.
 */
const REQUEST_ENDED = new errors.RequestAbortedError();

/**
 * How the call's answer is read: not yet begun, an SSE stream, a plain JSON error body, the rest of an SSE body read
 * unseen after its consumer left (drain), or over.
 */
type Phase = "waiting" | "sse" | "json" | "draining" | "done";

/**
 * The call's subscription and its undici handler (the legacy callback form: the newer controller form wraps each
 * handler in two more objects). Unsubscribing (the run stopped reading) aborts the request; a run that stops is
 * no failure of the call. Every early exit (bad frame, consumer gone, idle) ends the request so the connection
 * is not left half-read.
 */
export class StreamCall implements Dispatcher.DispatchHandler, Unsubscribable {
  private phase: Phase = "waiting";
  private abortRequest: ((error?: Error) => void) | undefined;
  private resumeBody: (() => void) | undefined;
  private readonly idle: IdleWatch | undefined;
  private frames: SseFrameDecoder | undefined;
  private decoder: StringDecoder | undefined;
  /** The SSE decoding rules drop one leading byte-order mark (the record reader leaves it to us). */
  private first = true;
  /** A plain JSON reply (the kernel refused before the first event), bounded like a record. */
  private json: Buffer[] | undefined;
  private jsonSize = 0;
  private completed = false;
  /** Held by the flow gate: undici's parser waits for resumeBody. */
  private paused = false;
  private readonly started = performance.now();

  constructor(
    private readonly subscriber: Subscriber<A2AStreamResponse>,
    private readonly flow: FlowGate | undefined,
    idleTimeoutMs: number,
    private readonly span: TraceSpan,
    private readonly method: string,
    /**
     * Told the call's method and the seconds from sending the request until its response began (status and headers
     * in). Given apart from the method, not as a closure made where the call is: that closure would keep the
     * request's params (the whole user message) alive for as long as the stream is open.
     */
    private readonly observe?: (method: string, seconds: number) => void,
  ) {
    // Silence on a stream is normal (a permission wait can last minutes): only a configured limit times it.
    if (idleTimeoutMs > 0) this.idle = new IdleWatch(idleTimeoutMs, () => this.fail(a2aUnavailable()));
  }

  unsubscribe(): void {
    if (this.phase === "done") return;
    if (this.phase === "sse" && this.paused) return this.drain();
    this.close();
  }

  onConnect(abort: (error?: Error) => void): void {
    // Unsubscribed while the request waited for its connection.
    if (this.phase === "done") abort(REQUEST_ENDED);
    else this.abortRequest = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    this.observe?.(this.method, (performance.now() - this.started) / 1000);
    if (this.phase === "done") return false;
    if (!isSuccess(statusCode)) {
      this.fail(a2aUnavailable());
      return false;
    }
    if (!isEventStream(util.parseHeaders(rawHeaders)["content-type"])) {
      this.phase = "json";
      this.json = [];
      return true;
    }
    this.phase = "sse";
    this.resumeBody = resume;
    this.frames = new SseFrameDecoder();
    this.decoder = new StringDecoder("utf8");
    this.idle?.start();
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.phase === "json") {
      this.jsonSize += chunk.byteLength;
      if (this.jsonSize > MAX_RECORD_CHARS) {
        this.fail(invalidFrame());
        return false;
      }
      this.json!.push(chunk);
      return true;
    }
    if (this.phase === "draining") return true;
    if (this.phase !== "sse") return false;
    // llhttp hands over an empty span when it resumes at a chunk's edge: no data, so no pause (a paused stream
    // would otherwise resume into another empty span, on and on).
    if (chunk.byteLength === 0) return true;
    this.idle?.touch();
    try {
      if (!this.deliver(this.decoder!.write(chunk))) {
        this.close();
        return false;
      }
    } catch (error) {
      this.fail(error);
      return false;
    }
    const ready = this.flow?.ready();
    if (!ready) return true;
    this.idle?.pause();
    this.paused = true;
    const reopen = () => this.reopen();
    void ready.then(reopen, reopen);
    return false;
  }

  onComplete(): void {
    this.completed = true;
    if (this.phase === "json") {
      try {
        throw jsonRpcErrorOf(parseJson(Buffer.concat(this.json!, this.jsonSize).toString("utf8")));
      } catch (error) {
        this.fail(error);
      }
      return;
    }
    if (this.phase !== "sse") return;
    try {
      if (this.deliver(this.decoder!.end())) this.subscriber.complete();
      this.close();
    } catch (error) {
      this.fail(error);
    }
  }

  onError(error: Error): void {
    this.fail(error);
  }

  /** The flow gate opened again: read on, unless the consumer went away meanwhile. */
  private reopen(): void {
    if (this.phase !== "sse") return;
    if (this.subscriber.closed) return this.close();
    this.paused = false;
    this.idle?.resume();
    this.resumeBody!();
  }

  /**
   * The consumer left while the flow gate held the body back: the rest of it (often only its end, after a run's
   * terminal frame) may be in already. That much is read, unseen, and the request is ended only if it was not the
   * body's end, so the connection goes back to the pool as it did when request()'s body stream had buffered it.
   * After the current callback: undici's parser must not be resumed from inside a parser's callback.
   */
  private drain(): void {
    this.phase = "draining";
    this.idle?.stop();
    this.frames = undefined;
    this.decoder = undefined;
    queueMicrotask(() => {
      if (this.phase !== "draining") return;
      try {
        // Over HTTP/1.1 this parses what the socket holds at once; over HTTP/2 data comes later, and the stream is reset.
        this.resumeBody!();
      } catch {
        // The connection is gone already: nothing to read.
      }
      if (this.phase === "draining") this.close();
    });
  }

  /** Decodes a chunk's text and delivers its frames; false when the stream must stop (consumer gone). */
  private deliver(text: string): boolean {
    if (this.first && text !== "") {
      this.first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const frames = this.frames!;
    frames.feed(text);
    for (const frame of frames.take()) {
      if (this.subscriber.closed) return false;
      this.subscriber.next(frame);
    }
    if (frames.failure) throw frames.failure;
    return !this.subscriber.closed;
  }

  /** The call failed: told to the subscriber if it still listens (an idle stream's abort is the transport's). */
  private fail(error: unknown): void {
    if (this.phase === "done") return;
    const failure = this.idle?.fired ? a2aUnavailable() : classify(error);
    this.phase = "done";
    if (!this.subscriber.closed) {
      failCall(this.span, failure);
      this.subscriber.error(failure);
    }
    this.end();
  }

  private close(): void {
    this.phase = "done";
    this.end();
  }

  private end(): void {
    this.span.end();
    this.idle?.stop();
    this.frames = undefined;
    this.decoder = undefined;
    this.json = undefined;
    if (!this.completed) this.abortRequest?.(REQUEST_ENDED);
  }
}
