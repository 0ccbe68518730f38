// An @ag-ui/client HttpAgent for this gateway: its runs survive a dropped connection (a network error, a proxy that
// cuts the stream, a gateway restart) by asking for the rest with Last-Event-ID, and its connect() brings a page
// with nothing the thread from POST /connect. The subscriber sees one run: no event twice, none missing.
// Browser and Node 20 (fetch); nothing Node-only is imported.
import * as agui from "@ag-ui/client";
import { HttpAgent, type BaseEvent, type HttpAgentConfig, type RunAgentInput } from "@ag-ui/client";
import { createParser } from "eventsource-parser";
import { Observable, type Subscriber } from "rxjs";
import { digestKey, isOwnKey } from "../event-ids.js";
import { OpenSpans } from "./open-spans.js";
import { cancelExecution, routeUnder, threadStatus, type GatewayCaller } from "./gateway-calls.js";

export interface GatewayAgentConfig extends HttpAgentConfig {
  /** Tries in a row that bring no new event before the run fails (default 8). */
  maxReconnects?: number;
  /** The wait before the first retry, doubled for each further one (default 250 ms). */
  backoffMs?: number;
  /** The longest wait between two tries (default 5,000 ms). */
  maxBackoffMs?: number;
  /** Where POST /connect is (default: `url` with `/connect` appended). */
  connectUrl?: string;
  /**
   * A connection that brings nothing for this long, not even a heartbeat, is taken as broken (default 45,000 ms:
   * three of the gateway's default 15 s heartbeats; 0: never).
   */
  idleTimeoutMs?: number;
}

/** A run (or a connect) that could not be read to its end: the gateway refused it, or every retry failed. */
export class GatewayStreamError extends Error {
  override readonly name = "GatewayStreamError";
  constructor(
    message: string,
    /** The gateway's error code (`REPLAY_EXPIRED`, `THREAD_BUSY`, …), or `UNREACHABLE` when no try got an answer. */
    readonly code: string,
    /** The HTTP status of the last answer, when there was one. */
    readonly status?: number,
  ) {
    super(message);
  }
}

/** What a cancel needs, from the run's `iac-code.session.v1` event. */
interface SessionIds {
  executionId: string;
  threadId: string;
  /** The binding's proof; a caller with the static token or the thread's user cancels without it. */
  rosInvocationId?: string;
}

const TERMINAL = new Set(["RUN_FINISHED", "RUN_ERROR"]);

// @ag-ui/client 1.x checks what it sends; 0.0.x (the copy CopilotKit's runtime pins) has no such step.
const enforceOutgoing: (input: RunAgentInput) => RunAgentInput =
  (agui as { enforceOutgoingInput?: (input: RunAgentInput) => RunAgentInput }).enforceOutgoingInput ?? ((input) => input);

export class GatewayAgent extends HttpAgent {
  readonly maxReconnects: number;
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
  readonly connectUrl: string;
  readonly idleTimeoutMs: number;
  /** The execution the current run streams, once the gateway has named it (abortRun cancels it). */
  private session: SessionIds | undefined;
  /** The current run, until the gateway has named its execution (abortRun then looks it up). */
  private unnamed: { threadId: string; runId: string; rosInvocationId?: string } | undefined;
  /** The cancel of a run stopped before it named its execution: the thread is busy until it lands. */
  private cancelling: Promise<void> | undefined;
  /**
   * Runs stopped before they named their execution (the newest few). A stop while the gateway was still admitting the
   * run finds the thread unknown or idle and cancels nothing; the run, admitted then without its client, holds the
   * thread for its reconnect grace. The next run that meets THREAD_BUSY cancels it if it is one of these.
   */
  private stoppedUnnamed: { threadId: string; runId: string; rosInvocationId?: string }[] = [];

  constructor(config: GatewayAgentConfig) {
    super(config);
    this.maxReconnects = config.maxReconnects ?? 8;
    this.backoffMs = config.backoffMs ?? 250;
    this.maxBackoffMs = config.maxBackoffMs ?? 5_000;
    this.connectUrl = config.connectUrl ?? routeUnder(config.url, "connect");
    this.idleTimeoutMs = config.idleTimeoutMs ?? 45_000;
  }

  override run(input: RunAgentInput): Observable<BaseEvent> {
    return this.stream(input, "run");
  }

  override connect(input: RunAgentInput): Observable<BaseEvent> {
    return this.stream(input, "connect");
  }

  /**
   * @ag-ui/client 0.0.x (the copy CopilotKit's runtime pins) understands AG-UI 1.0 outcomes but does not declare the
   * version, so the gateway would answer it with pre-1.0 terminal events; 1.x declares what its ceiling allows.
   */
  protected override requestInit(input: RunAgentInput): RequestInit {
    const undeclared = (input as { protocolVersion?: string }).protocolVersion === undefined && !("maxProtocolVersion" in this);
    return super.requestInit(undeclared ? ({ ...input, protocolVersion: "1.0" } as RunAgentInput) : input);
  }

  override connectAgent(...args: Parameters<HttpAgent["connectAgent"]>): ReturnType<HttpAgent["connectAgent"]> {
    // As runAgent does for a run: each connect has its own controller, so an earlier abort does not end it.
    this.abortController = new AbortController();
    return super.connectAgent(...args);
  }

  /**
   * Stops the current run: cancelled through the gateway's cancel extension once the run has named its execution
   * (the run then ends with the gateway's cancelled outcome). Before that the connection is dropped, and the run,
   * which the gateway may keep for a reconnect, is looked up by its thread and cancelled all the same.
   */
  override abortRun(): void {
    const session = this.session;
    if (session) {
      void cancelExecution(this.caller, session).then((outcome) => {
        if (outcome === undefined) super.abortRun();
      });
      return;
    }
    const unnamed = this.unnamed;
    super.abortRun();
    if (!unnamed) return;
    this.stoppedUnnamed = [...this.stoppedUnnamed.slice(-3), unnamed];
    const cancelling = this.cancelUnnamed(unnamed).catch(() => undefined);
    this.cancelling = cancelling;
    void cancelling.then(() => {
      if (this.cancelling === cancelling) this.cancelling = undefined;
    });
  }

  override clone(): GatewayAgent {
    const copy = super.clone() as GatewayAgent;
    const { maxReconnects, backoffMs, maxBackoffMs, connectUrl, idleTimeoutMs } = this;
    Object.assign(copy, { maxReconnects, backoffMs, maxBackoffMs, connectUrl, idleTimeoutMs });
    copy.session = undefined;
    copy.unnamed = undefined;
    copy.cancelling = undefined;
    copy.stoppedUnnamed = [];
    return copy;
  }

  /** Where the gateway's other routes are, and who asks. */
  private get caller(): GatewayCaller {
    return { url: this.url, headers: this.headers, fetch: this.fetch };
  }

  /** The thread's status names the execution of a run that had not named it yet; nothing is done for another run. */
  private async cancelUnnamed(run: { threadId: string; runId: string; rosInvocationId?: string }): Promise<void> {
    const status = await threadStatus(this.caller, run.threadId);
    // Otherwise the gateway ends the run, which nobody reads now, when its reconnect grace is over.
    if (status?.runId === run.runId && status.executionId !== undefined) await cancelExecution(this.caller, { ...run, executionId: status.executionId });
  }

  /**
   * The thread was busy with a run this agent stopped before it named its execution: that run is cancelled once it has
   * named one (or it has ended meanwhile). True when sending again may find the thread free.
   */
  private async cancelStopped(threadId: string): Promise<boolean> {
    const status = await threadStatus(this.caller, threadId);
    if (status?.status === "idle") return true;
    const stopped = this.stoppedUnnamed.find((run) => run.threadId === threadId && run.runId === status?.runId);
    if (!stopped) return false;
    if (status?.executionId !== undefined) await cancelExecution(this.caller, { ...stopped, executionId: status.executionId });
    return true;
  }

  private stream(input: RunAgentInput, kind: "run" | "connect"): Observable<BaseEvent> {
    return new Observable<BaseEvent>((subscriber) => {
      this.session = undefined;
      const proof = (input.forwardedProps as { iacCode?: { rosInvocationId?: unknown } } | undefined)?.iacCode?.rosInvocationId;
      this.unnamed = kind === "run" ? { threadId: input.threadId, runId: input.runId, ...(typeof proof === "string" && { rosInvocationId: proof }) } : undefined;
      const transport: Transport = {
        url: this.url,
        connectUrl: this.connectUrl,
        headers: this.headers,
        fetch: this.fetch,
        signal: this.abortController.signal,
        body: (request) => String(this.requestInit(request).body),
        sessionSeen: (session) => {
          this.session = session;
          this.unnamed = undefined;
        },
        retry: { maxReconnects: this.maxReconnects, backoffMs: this.backoffMs, maxBackoffMs: this.maxBackoffMs },
        idleTimeoutMs: this.idleTimeoutMs,
        cancelStopped: () => this.cancelStopped(input.threadId),
      };
      const outgoing = enforceOutgoing(input);
      let reader: ResumableRead | undefined;
      let unsubscribed = false;
      const begin = () => {
        if (unsubscribed) return;
        reader = new ResumableRead(transport, outgoing, kind, subscriber);
        void reader.read().then(
          () => subscriber.complete(),
          (error: unknown) => subscriber.error(error),
        );
      };
      // The next message right after a stop: sent once the stopped run's cancel has landed, or the thread is still its.
      const cancelling = this.cancelling;
      if (cancelling) void cancelling.then(begin);
      else begin();
      return () => {
        unsubscribed = true;
        reader?.stop();
      };
    });
  }
}

/** What a read needs of its agent: where to send, with what, and how often to try. */
interface Transport {
  url: string;
  connectUrl: string;
  headers: Record<string, string>;
  fetch: GatewayAgent["fetch"];
  /** The agent's abort (abortRun without a cancel). */
  signal: AbortSignal;
  /** The request body, byte for byte what HttpAgent would send. */
  body(input: RunAgentInput): string;
  sessionSeen(session: SessionIds): void;
  retry: { maxReconnects: number; backoffMs: number; maxBackoffMs: number };
  idleTimeoutMs: number;
  /** The thread was busy with a run the agent stopped before it named its execution: true when a new try may find it free. */
  cancelStopped(): Promise<boolean>;
}


/**
 * One run (or connect) read to its terminal event across broken connections. A run reconnects with the id of its
 * last event; when the gateway no longer keeps what came after it, or for a connect, it connects again and splices
 * that answer in (its conversation snapshot and the rest of the live run, nothing the subscriber already has).
 */
class ResumableRead {
  private readonly spans = new OpenSpans();
  /** The id of the last event passed on (a run's own stream), and how many events followed the run's start. */
  private lastId = "";
  private afterStart = 0;
  private startedRunId: string | undefined;
  /** Whether the first event after the start was a connect's snapshot (a connect's live part follows it). */
  private snapshotPassed = false;
  private stopped = false;
  private done = false;
  private readonly local = new AbortController();

  constructor(
    private readonly transport: Transport,
    private readonly input: RunAgentInput,
    readonly kind: "run" | "connect",
    private readonly subscriber: Subscriber<BaseEvent>,
  ) {}

  stop(): void {
    this.stopped = true;
    this.local.abort();
  }

  async read(): Promise<void> {
    const runBody = this.transport.body(this.input);
    // A run keeps its own stream while the gateway keeps its events; after that (and for a connect) it connects.
    let mode: "run" | "connect" = this.kind;
    let failures = 0;
    let busyCancels = 0;
    let lastError: GatewayStreamError | undefined;
    for (let attempt = 0; !this.done; attempt++) {
      if (this.stopped) return;
      if (failures > this.transport.retry.maxReconnects) {
        throw lastError ?? new GatewayStreamError("the run's stream broke and could not be resumed", "UNREACHABLE");
      }
      if (failures > 0) await this.wait(Math.min(this.transport.retry.backoffMs * 2 ** (failures - 1), this.transport.retry.maxBackoffMs));
      if (this.stopped) return;
      const before = this.afterStart + (this.startedRunId === undefined ? 0 : 1);
      const idle = new IdleWatch(this.transport.idleTimeoutMs);
      try {
        const response =
          mode === "run"
            ? await this.post(this.transport.url, runBody, idle, attempt > 0 ? this.lastId || `${await eventIdKey(this.input.runId)}:0` : undefined)
            : await this.post(this.transport.connectUrl, this.connectBody(), idle);
        if (!response.ok) {
          const refusal = await refusalOf(response);
          // The events after our last one are gone (or the run stopped when we left): the thread as it is now.
          if (mode === "run" && refusal.code === "REPLAY_EXPIRED") {
            mode = "connect";
            failures = 0;
            continue;
          }
          // The thread is held by a run this agent stopped while the gateway was admitting it: cancelled, then sent again.
          if (mode === "run" && refusal.code === "THREAD_BUSY" && this.lastId === "" && busyCancels < 5 && (await this.transport.cancelStopped())) {
            // A run that has not named its execution yet is cancelled on a later try.
            await this.wait(Math.min(this.transport.retry.backoffMs * 2 ** busyCancels++, this.transport.retry.maxBackoffMs));
            attempt = -1;
            continue;
          }
          // Nothing to connect to (a page's new thread, as far as this caller may know): nothing to bring.
          if (mode === "connect" && this.kind === "connect" && refusal.code === "THREAD_NOT_FOUND" && this.startedRunId === undefined) return;
          // A first request that never arrived: the gateway does not know the run, so it is sent again as new.
          if (mode === "run" && refusal.code === "INVALID_LAST_EVENT_ID" && this.lastId === "" && attempt > 0) {
            attempt = -1;
            failures++;
            continue;
          }
          // A 5xx (a proxy's page, a gateway that is busy or restarting) is a broken try; the next asks by id.
          if (response.status < 500) throw refusal;
          lastError = refusal;
          failures++;
          continue;
        }
        await this.consume(response, mode === "connect" ? new ConnectSplice(this) : undefined, idle);
      } catch (error) {
        if (error instanceof GatewayStreamError) throw error;
        if (this.stopped) return;
        // Our own abort (abortRun without a cancel): the run ends as HttpAgent's does.
        if (this.transport.signal.aborted) throw error;
        lastError = new GatewayStreamError(`the stream broke: ${error instanceof Error ? error.message : String(error)}`, "UNREACHABLE");
      } finally {
        idle.stop();
      }
      if (this.done) return;
      // A try that brought something new starts the count again (and the next one at once).
      failures = this.afterStart + (this.startedRunId === undefined ? 0 : 1) > before ? 0 : failures + 1;
    }
  }

  /** A fresh connect body: the run's input under a new run id (the connect's own, never passed on). */
  private connectBody(): string {
    return this.transport.body({ ...this.input, runId: `${this.input.runId}.connect.${randomSuffix()}` });
  }

  private post(url: string, body: string, idle: IdleWatch, lastEventId?: string): Promise<Response> {
    const headers: Record<string, string> = { ...this.transport.headers, "Content-Type": "application/json", Accept: "text/event-stream" };
    if (lastEventId !== undefined) headers["Last-Event-ID"] = lastEventId;
    const signal = AbortSignal.any([this.transport.signal, this.local.signal, idle.signal]);
    return this.transport.fetch(url, { method: "POST", headers, body, signal });
  }

  private async consume(response: Response, splice: ConnectSplice | undefined, idle: IdleWatch): Promise<void> {
    if (!response.body) throw new Error("the answer has no body");
    let failure: unknown;
    const parser = createParser({
      onEvent: (record) => {
        if (this.done || failure !== undefined) return;
        try {
          const event = JSON.parse(record.data) as BaseEvent;
          if (splice) splice.next(event);
          else this.own(event, record.id);
        } catch (error) {
          failure = error;
        }
      },
    });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    // A body that does not end with its request's signal (a fetch of the app's own) is let go here all the same.
    const release = () => void reader.cancel().catch(() => {});
    idle.signal.addEventListener("abort", release, { once: true });
    try {
      for (let chunk = await reader.read(); !chunk.done && !this.done; chunk = await reader.read()) {
        idle.touch();
        parser.feed(chunk.value);
        if (failure !== undefined) throw new GatewayStreamError(`the gateway sent an event that is not JSON: ${String(failure)}`, "INVALID_EVENT");
      }
    } finally {
      idle.signal.removeEventListener("abort", release);
      release();
    }
  }

  /** An event of the run's own stream (first or resumed). */
  private own(event: BaseEvent, id: string | undefined): void {
    if (id !== undefined) {
      if (this.lastId !== "" && !isAfter(id, this.lastId)) return; // a replay never repeats, but a proxy might
      this.lastId = id;
    }
    this.pass(event);
  }

  /** @internal passes an event on, keeping what a later splice needs. */
  pass(event: BaseEvent): void {
    if (event.type === "RUN_STARTED") this.startedRunId = (event as { runId?: string }).runId;
    else if (this.afterStart++ === 0 && event.type === "MESSAGES_SNAPSHOT") this.snapshotPassed = true;
    this.spans.see(event);
    this.noteSession(event);
    this.subscriber.next(event);
    if (TERMINAL.has(event.type)) this.done = true;
  }

  /** @internal for a splice. */
  get state() {
    return { afterStart: this.afterStart, startedRunId: this.startedRunId, snapshotPassed: this.snapshotPassed, spans: this.spans, threadId: this.input.threadId };
  }

  private noteSession(event: BaseEvent): void {
    const custom = event as { type: string; name?: string; value?: Partial<SessionIds> };
    if (custom.type !== "CUSTOM" || custom.name !== "iac-code.session.v1" || typeof custom.value !== "object" || custom.value === null) return;
    const { executionId, rosInvocationId } = custom.value;
    if (typeof executionId === "string" && typeof rosInvocationId === "string") {
      this.transport.sessionSeen({ executionId, rosInvocationId, threadId: this.input.threadId });
    }
  }

  /** Waits `ms`, or less when the read is stopped or the agent aborted. */
  private wait(ms: number): Promise<void> {
    const signals = [this.local.signal, this.transport.signal];
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        for (const signal of signals) signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      for (const signal of signals) signal.addEventListener("abort", done, { once: true });
    });
  }
}

/**
 * A connect's answer spliced into what the subscriber already has. The answer is RUN_STARTED, MESSAGES_SNAPSHOT, then
 * the live run from its first event, or a terminal event. Into a run (or connect) already under way it brings only
 * what is new: the live events after those already passed on, under the run id the subscriber's run started with; or,
 * when the run ended while we were away, its open spans closed, the conversation as it is now and the terminal event.
 */
class ConnectSplice {
  private index = 0;
  /** Events of the answer's live part that the subscriber already has. */
  private skip: number;
  private snapshot: BaseEvent | undefined;
  private readonly resumed: boolean;
  /** Whether the subscriber's conversation is already the one this answer's snapshot shows (nothing passed since). */
  private readonly current: boolean;

  constructor(private readonly read: ResumableRead) {
    const { afterStart, startedRunId, snapshotPassed } = read.state;
    this.resumed = startedRunId !== undefined;
    this.skip = afterStart - (snapshotPassed ? 1 : 0);
    this.current = snapshotPassed && this.skip === 0;
  }

  next(event: BaseEvent): void {
    const index = this.index++;
    if (!this.resumed) return this.read.pass(event);
    const { startedRunId, spans, threadId, snapshotPassed } = this.read.state;
    if (index === 0 && event.type === "RUN_STARTED") return;
    if (index === 1 && event.type === "MESSAGES_SNAPSHOT") {
      // A connect cut before its snapshot arrived still owes it to the subscriber.
      if (this.read.kind === "connect" && !snapshotPassed) this.read.pass(event);
      else this.snapshot = event;
      return;
    }
    const relabelled = relabel(event, startedRunId!, threadId);
    // The run ended while we were away (its conversation with it, or without when the gateway could not have it).
    if ((index === 1 || index === 2) && TERMINAL.has(event.type)) {
      for (const closing of spans.closing()) this.read.pass(closing);
      if (this.snapshot && !this.current) this.read.pass(this.snapshot);
      return this.read.pass(relabelled);
    }
    if (this.skip > 0) {
      this.skip--;
      return;
    }
    this.read.pass(relabelled);
  }
}

function relabel(event: BaseEvent, runId: string, threadId: string): BaseEvent {
  const labelled = event as BaseEvent & { runId?: string; threadId?: string };
  if (labelled.runId === undefined) return event;
  return { ...labelled, runId, ...(labelled.threadId !== undefined && { threadId }) } as BaseEvent;
}

/** Event ids are `<run>:<seq>`: whether `id` comes after `last` in the same run. */
function isAfter(id: string, last: string): boolean {
  const cut = id.lastIndexOf(":");
  const lastCut = last.lastIndexOf(":");
  if (id.slice(0, cut) !== last.slice(0, lastCut)) return true;
  return Number(id.slice(cut + 1)) > Number(last.slice(lastCut + 1));
}

/** A 4xx or 5xx answer as an error; its body cut in transit throws instead (a broken try, not an answer). */
async function refusalOf(response: Response): Promise<GatewayStreamError> {
  const text = await response.text();
  let code = `HTTP_${response.status}`;
  let message = text.slice(0, 500) || response.statusText;
  try {
    const envelope = JSON.parse(text) as { error?: { code?: unknown; message?: unknown }; code?: unknown; message?: unknown };
    const error = envelope.error ?? envelope;
    if (typeof error.code === "string") code = error.code;
    if (typeof error.message === "string") message = error.message;
  } catch {
    // not the gateway's JSON envelope (a proxy's page): the status and the text say it
  }
  return new GatewayStreamError(`HTTP ${response.status}: ${message}`, code, response.status);
}

/**
 * A try that brings no byte for `ms` (not even a heartbeat) is aborted: a connection that a NAT or a proxy dropped
 * without a word would otherwise hold the run forever.
 */
class IdleWatch {
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly ms: number) {
    this.touch();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  touch(): void {
    if (this.ms <= 0) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.controller.abort(new Error(`nothing arrived for ${this.ms} ms`)), this.ms);
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}

/** The run part of the gateway's event ids (src/event-ids.ts), as the gateway writes them. */
async function eventIdKey(runId: string): Promise<string> {
  if (isOwnKey(runId)) return runId;
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(runId)));
  return digestKey(Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join(""));
}

function randomSuffix(): string {
  return globalThis.crypto.randomUUID().slice(0, 8);
}
