// A CopilotKit runtime runner (v2 `AgentRunner`) backed by the gateway instead of the runtime's memory: a page's
// connect gets the thread's conversation, its pending interrupts or its live run from the gateway (POST /connect),
// so threads outlive a runtime restart and are the same on every runtime replica; stop cancels through the
// gateway's cancel extension, whichever runtime started the run; isRunning asks the gateway.
import {
  AgentRunner,
  createRunEventFinalizer,
  type AgentRunnerConnectRequest,
  type AgentRunnerIsRunningRequest,
  type AgentRunnerRunRequest,
  type AgentRunnerStopRequest,
} from "@copilotkit/runtime/v2";
import { Observable, ReplaySubject, map } from "rxjs";
import { GatewayAgent, GatewayStreamError } from "../client/gateway-agent.js";
import { cancelExecution, threadStatus, type Fetch, type GatewayCaller } from "../client/gateway-calls.js";

export interface GatewayRunnerOptions {
  /** The gateway's AG-UI endpoint, as given to the agents (`http://127.0.0.1:41243/`). */
  url: string;
  /**
   * Sent with what the runner asks the gateway itself: connects, a thread's status, a cancel for a run another runtime
   * started. With the gateway's static token the runner is its trusted caller, which needs no proof of a thread's binding.
   * A connect sends the headers the runtime gives it (the agent's own, and those it forwards from the page, such as
   * a user's token) over these, so it asks as the runs were made; a stop of this runtime's run, the run's agent's.
   */
  headers?: Record<string, string>;
  /**
   * The `forwardedProps` of a connect, for a gateway without auth: `{ iacCode: { rosInvocationId } }`, the binding's
   * proof (a stop of a run another runtime started uses it too), and `preferredLanguage` if wanted.
   */
  forwardedProps?: (thread: { threadId: string; agentId?: string }) => Record<string, unknown>;
  /** Retries of a connect whose stream broke (see GatewayAgent). */
  maxReconnects?: number;
  backoffMs?: number;
  maxBackoffMs?: number;
  fetch?: Fetch;
}

type RunnerEvent = ReturnType<AgentRunner["run"]> extends Observable<infer E> ? E : never;
type RunnerAgent = AgentRunnerRunRequest["agent"];

/** A run this runtime started, until it ends. */
interface LocalRun {
  runId: string;
  agent: RunnerAgent;
  /** What a cancel needs, from the run's `iac-code.session.v1` event. */
  session?: { executionId: string; rosInvocationId: string };
  stopRequested: boolean;
}

export class GatewayRunner extends AgentRunner {
  private readonly local = new Map<string, LocalRun>();
  private readonly fetch: Fetch;

  constructor(private readonly options: GatewayRunnerOptions) {
    super();
    this.fetch = options.fetch ?? ((url, init) => fetch(url, init));
  }

  /** Runs the runtime's agent (its middleware included) and passes its events on, as CopilotKit's own runners do. */
  run(request: AgentRunnerRunRequest): Observable<RunnerEvent> {
    const { threadId, agent, input } = request;
    const events = new ReplaySubject<RunnerEvent>();
    const run: LocalRun = { runId: input.runId, agent, stopRequested: false };
    // A second run on a busy thread is the gateway's to refuse (THREAD_BUSY), wherever the first one runs.
    const tracked = !this.local.has(threadId);
    if (tracked) this.local.set(threadId, run);
    const finalizer = createRunEventFinalizer();
    const end = () => {
      if (tracked && this.local.get(threadId) === run) this.local.delete(threadId);
      events.complete();
    };
    agent
      .runAgent(input, {
        onEvent: ({ event }) => {
          finalizer.observe(event);
          noteSession(run, event);
          events.next(asStopped(event));
        },
      })
      .then(
        () => {
          for (const event of finalizer.finalize({ stopRequested: run.stopRequested })) events.next(event);
          end();
        },
        (error: unknown) => {
          const message = error instanceof Error ? error.message : String(error);
          for (const event of finalizer.finalize({ stopRequested: run.stopRequested, interruptionMessage: message })) {
            events.next(error instanceof GatewayStreamError && event.type === "RUN_ERROR" ? ({ ...event, code: error.code } as RunnerEvent) : event);
          }
          end();
        },
      );
    return events.asObservable();
  }

  /** The thread as the gateway has it: one run of RUN_STARTED, the conversation, then its live run or what waits. */
  connect(request: AgentRunnerConnectRequest): Observable<RunnerEvent> {
    const { threadId, agentId } = request;
    const agent = new GatewayAgent({
      url: this.options.url,
      threadId,
      headers: mergeHeaders(this.options.headers ?? {}, request.headers ?? {}),
      fetch: this.fetch,
      ...(this.options.maxReconnects !== undefined && { maxReconnects: this.options.maxReconnects }),
      ...(this.options.backoffMs !== undefined && { backoffMs: this.options.backoffMs }),
      ...(this.options.maxBackoffMs !== undefined && { maxBackoffMs: this.options.maxBackoffMs }),
    });
    const input = {
      threadId,
      runId: globalThis.crypto.randomUUID(),
      messages: [],
      tools: [],
      context: [],
      state: {},
      forwardedProps: this.forwardedProps(threadId, agentId),
    };
    // A thread the gateway does not know (a page's new thread) brings nothing.
    return agent.connect(input).pipe(map((event) => asStopped(event as unknown as RunnerEvent)));
  }

  async isRunning(request: AgentRunnerIsRunningRequest): Promise<boolean> {
    if (this.local.has(request.threadId)) return true;
    return (await threadStatus(this.caller(), request.threadId))?.status === "running";
  }

  /**
   * Cancels the thread's run through the gateway: this runtime's own run with the ids its stream named, another's with
   * those the gateway gives. False when nothing runs (or `runId` names another run).
   */
  async stop(request: AgentRunnerStopRequest): Promise<boolean> {
    const { threadId, runId } = request;
    const run = this.local.get(threadId);
    if (run) {
      if ((runId !== undefined && runId !== run.runId) || run.stopRequested) return false;
      run.stopRequested = true;
      const headers = mergeHeaders(this.options.headers ?? {}, (run.agent as { headers?: Record<string, string> }).headers ?? {});
      if (run.session && (await cancelExecution(this.caller(headers), { threadId, ...run.session })) === "cancelled") return true;
      // Not named yet, or the gateway could not be reached: the run's own connection is dropped.
      run.agent.abortRun();
      return true;
    }
    const status = await threadStatus(this.caller(), threadId);
    if (status?.status !== "running" || status.executionId === undefined || (runId !== undefined && status.runId !== runId)) return false;
    const proof = (this.forwardedProps(threadId).iacCode as { rosInvocationId?: unknown } | undefined)?.rosInvocationId;
    const outcome = await cancelExecution(this.caller(), { threadId, executionId: status.executionId, ...(typeof proof === "string" && { rosInvocationId: proof }) });
    return outcome === "cancelled";
  }

  /** The gateway as the runner asks it: with its own headers, or those given. */
  private caller(headers: Record<string, string> = this.options.headers ?? {}): GatewayCaller {
    return { url: this.options.url, headers, fetch: this.fetch };
  }

  private forwardedProps(threadId: string, agentId?: string): Record<string, unknown> {
    return this.options.forwardedProps?.({ threadId, ...(agentId !== undefined && { agentId }) }) ?? {};
  }
}

/**
 * A run the gateway ended as cancelled ends as CopilotKit's own runners end a stopped run, with a plain RUN_FINISHED:
 * the AG-UI its runtime and pages use (0.0.x) has no cancelled outcome, and drops an event that carries one.
 */
function asStopped(event: RunnerEvent): RunnerEvent {
  const finished = event as RunnerEvent & { outcome?: { type?: string } };
  if (finished.type !== "RUN_FINISHED" || finished.outcome?.type !== "cancelled") return event;
  const { outcome: _cancelled, ...plain } = finished;
  return plain as RunnerEvent;
}

function noteSession(run: LocalRun, event: { type: string }): void {
  const custom = event as { type: string; name?: string; value?: { executionId?: unknown; rosInvocationId?: unknown } };
  if (custom.type !== "CUSTOM" || custom.name !== "iac-code.session.v1") return;
  const { executionId, rosInvocationId } = custom.value ?? {};
  if (typeof executionId === "string" && typeof rosInvocationId === "string") run.session = { executionId, rosInvocationId };
}

/** `base` with `winning` over it, header names compared without case. */
function mergeHeaders(base: Record<string, string>, winning: Record<string, string>): Record<string, string> {
  const overridden = new Set(Object.keys(winning).map((name) => name.toLowerCase()));
  return { ...Object.fromEntries(Object.entries(base).filter(([name]) => !overridden.has(name.toLowerCase()))), ...winning };
}
