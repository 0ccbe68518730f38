// A fetch for GatewayAgent that misbehaves per connection at exact places in the SSE body (byte offsets chosen by
// looking at what has arrived so far): cut (the body errors as undici's does on a reset), stall (nothing more, ever,
// connection kept), or a proxy's HTML error page instead of the gateway's answer. 
import type { BaseEvent, RunAgentInput } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { GatewayAgent } from "../../src/client/index.js";

/** Given the body text received so far (latin1: one char per byte), the offset to act at, or undefined for not yet. */
export type Chooser = (text: string) => number | undefined;
export type Plan = { cut: Chooser } | { stall: Chooser } | { status: number; html?: string } | { delayMs: number } | { cutErrorBody: true } | undefined;

export interface PlannedFetch {
  fetch: (url: string, init: RequestInit) => Promise<Response>;
  /** Every request: url, Last-Event-ID, and the body bytes the agent saw. */
  requests: { url: string; lastEventId: string | undefined; seen: string }[];
}

/** `plan(n, url)`: what to do with the n-th stream request (POST / or /connect; other requests pass). */
export function plannedFetch(plan: (n: number, url: string) => Plan): PlannedFetch {
  const requests: PlannedFetch["requests"] = [];
  let n = 0;
  const wrapped = async (url: string, init: RequestInit): Promise<Response> => {
    let headers: Headers;
    try {
      headers = new Headers(init.headers);
    } catch {
      return fetch(url, init); // what the real fetch makes of headers it cannot send
    }
    const entry = { url: String(url), lastEventId: headers.get("Last-Event-ID") ?? undefined, seen: "" };
    requests.push(entry);
    const isStream = headers.get("Accept") === "text/event-stream";
    if (!isStream) return fetch(url, init);
    let p = plan(n++, String(url));
    if (p && "delayMs" in p) {
      await new Promise((resolve) => setTimeout(resolve, (p as { delayMs: number }).delayMs));
      p = undefined;
    }
    if (p && "status" in p) {
      return new Response(p.html ?? `<html><body><h1>${p.status} Bad Gateway</h1></body></html>`, { status: p.status, headers: { "Content-Type": "text/html" } });
    }
    const response = await fetch(url, init);
    if (p && "cutErrorBody" in p) {
      // The gateway's refusal, its body cut before a byte of it arrived (the status line and headers did).
      if (response.ok || !response.body) return response;
      void response.body.cancel().catch(() => {});
      const failing = new ReadableStream<Uint8Array>({ pull: (controller) => controller.error(new TypeError("terminated")) });
      return new Response(failing, { status: response.status, headers: response.headers });
    }
    if (!p || !response.body || !response.ok) {
      if (!response.body) return response;
      return new Response(tap(response.body, entry, undefined, false), { status: response.status, headers: response.headers });
    }
    const acting = p as { cut: Chooser } | { stall: Chooser };
    const stall = "stall" in acting;
    return new Response(tap(response.body, entry, "stall" in acting ? acting.stall : acting.cut, stall), { status: response.status, headers: response.headers });
  };
  return { fetch: wrapped, requests };
}

function tap(body: ReadableStream<Uint8Array>, entry: { seen: string }, chooser: Chooser | undefined, stall: boolean): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let text = "";
  let sent = 0;
  let acted = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (acted) return new Promise<void>(() => {}); // stalled: never again
      const chunk = await reader.read().catch((error: unknown) => ({ error }));
      if ("error" in chunk) return controller.error(chunk.error);
      if (chunk.done) return controller.close();
      text += Buffer.from(chunk.value).toString("latin1");
      const at = chooser?.(text);
      if (at === undefined || at > text.length) {
        controller.enqueue(chunk.value);
        sent = text.length;
        entry.seen = text;
        return;
      }
      const upTo = Math.max(at, sent);
      if (upTo > sent) controller.enqueue(Buffer.from(text.slice(sent, upTo), "latin1"));
      entry.seen = text.slice(0, upTo);
      acted = true;
      void reader.cancel().catch(() => {});
      if (!stall) controller.error(new TypeError("terminated"));
    },
    cancel() {
      void reader.cancel().catch(() => {});
    },
  });
}

/** Records of an SSE text so far: start and end offsets (end after the blank line) and the parsed event. */
export function recordsOf(text: string): { start: number; end: number; id?: string; event?: BaseEvent }[] {
  const out: { start: number; end: number; id?: string; event?: BaseEvent }[] = [];
  let start = 0;
  for (let end = text.indexOf("\n\n", start); end >= 0; end = text.indexOf("\n\n", start)) {
    const record = text.slice(start, end);
    const id = /^id: (.*)$/m.exec(record)?.[1];
    const data = /^data: (.*)$/m.exec(record)?.[1];
    out.push({ start, end: end + 2, ...(id !== undefined && { id }), ...(data !== undefined && { event: JSON.parse(Buffer.from(data, "latin1").toString("utf8")) as BaseEvent }) });
    start = end + 2;
  }
  return out;
}

/** The k-th (0-based) record with an event matching `pick`: where to act relative to it. */
export function at(pick: (event: BaseEvent, index: number) => boolean, where: (r: { start: number; end: number }) => number): Chooser {
  return (text) => {
    const found = recordsOf(text).filter((r) => r.event).find((r, i) => pick(r.event!, i));
    return found && where(found);
  };
}

export interface Outcome {
  agent: GatewayAgent;
  events: BaseEvent[];
  error?: unknown;
  requests: ReturnType<typeof plannedFetch>["requests"];
  /** Types of events that EventSchema refused. */
  invalid?: string[];
}

export async function runPlanned(url: string, input: RunAgentInput, plan: (n: number, url: string) => Plan, config: Record<string, unknown> = {}): Promise<Outcome> {
  const planned = plannedFetch(plan);
  const agent = new GatewayAgent({ url, threadId: input.threadId, initialMessages: input.messages, backoffMs: 20, ...config });
  agent.fetch = planned.fetch as never;
  const events: BaseEvent[] = [];
  const out: Outcome = { agent, events, requests: planned.requests };
  try {
    await agent.runAgent({ runId: input.runId, forwardedProps: input.forwardedProps }, { onEvent: ({ event }) => void events.push(event) });
  } catch (error) {
    out.error = error;
  }
  out.invalid = events.filter((event) => !EventSchema.safeParse(event).success).map((e) => e.type);
  return out;
}

