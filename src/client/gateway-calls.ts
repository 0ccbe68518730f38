// The gateway's routes beside its AG-UI endpoint that GatewayAgent and the CopilotKit runner call: a thread's status
// and the cancel extension. Neither throws: what could not be had is undefined.

export type Fetch = (url: string, init: RequestInit) => Promise<Response>;

/** Where the gateway is and who asks. */
export interface GatewayCaller {
  /** The AG-UI endpoint (with or without its trailing slash). */
  url: string;
  headers: Record<string, string>;
  fetch: Fetch;
}

/** GET /threads/{threadId}, as much of it as a stop needs. */
export interface ThreadStatus {
  status: "idle" | "running" | "waiting_for_input";
  executionId?: string;
  runId?: string;
}

/** `path` under the AG-UI endpoint `url`. */
export function routeUnder(url: string, path: string): string {
  return `${url.replace(/\/+$/, "")}/${path}`;
}

/** The thread's status; undefined when the gateway does not know it, will not say, or cannot be reached. */
export async function threadStatus(caller: GatewayCaller, threadId: string): Promise<ThreadStatus | undefined> {
  return answerOf(caller.fetch(routeUnder(caller.url, `threads/${encodeURIComponent(threadId)}`), { headers: { ...caller.headers, Accept: "application/json" } }));
}

/** The cancel extension's outcome (`cancelled`, `already_terminal`); undefined when it could not be had. */
export async function cancelExecution(
  caller: GatewayCaller,
  execution: { executionId: string; threadId: string; rosInvocationId?: string | undefined },
): Promise<string | undefined> {
  const { executionId, threadId, rosInvocationId } = execution;
  const answer = await answerOf<{ status?: string }>(
    caller.fetch(routeUnder(caller.url, `extensions/iac-code/v1/executions/${encodeURIComponent(executionId)}/cancel`), {
      method: "POST",
      headers: { ...caller.headers, "Content-Type": "application/json" },
      body: JSON.stringify({ threadId, ...(rosInvocationId !== undefined && { rosInvocationId }) }),
    }),
  );
  return answer?.status;
}


async function answerOf<T>(request: Promise<Response>): Promise<T | undefined> {
  try {
    const response = await request;
    if (response.ok) return (await response.json()) as T;
    await response.body?.cancel();
  } catch {
    // not reached, or not JSON: nothing to go by
  }
  return undefined;
}
