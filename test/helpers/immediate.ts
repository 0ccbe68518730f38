// Interrupt → answer with nothing in between: the answer is POSTed the moment the interrupting
// RUN_FINISHED is parsed, before the first response has even been read to its end. Free of vitest so
// `npm run soak` runs the same round trips at a larger count.
import type { RunAgentInput } from "@ag-ui/client";
import { runInput } from "./run-input.js";
import { SseSplitter, isTerminal, type WireEvent } from "./sse.js";

export type { WireEvent } from "./sse.js";

/** POSTs `body` and resolves with the events up to the first terminal one (the rest is not awaited). */
export async function eventsUntilTerminal(url: string, body: unknown): Promise<{ status: number; events: WireEvent[]; text?: string }> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(body),
  });
  if (response.status !== 200 || !response.body) return { status: response.status, events: [], text: await response.text() };
  const reader = response.body.getReader();
  const splitter = new SseSplitter();
  const events: WireEvent[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return { status: 200, events };
    for (const event of splitter.push(value)) {
      events.push(event);
      if (isTerminal(event)) {
        void reader.cancel().catch(() => undefined);
        return { status: 200, events };
      }
    }
  }
}

export interface RoundTrip {
  first: WireEvent[];
  answer: WireEvent[];
  /** Why the round trip is not a success, or undefined. */
  problem?: string;
}

/** Runs `input` to its interrupt and answers that interrupt with `payload` the instant it arrives. */
export async function answerAtOnce(gatewayUrl: string, input: RunAgentInput, payload: unknown): Promise<RoundTrip> {
  const first = await eventsUntilTerminal(gatewayUrl, input);
  const outcome = first.events.at(-1)?.outcome as { type?: string; interrupts?: { id: string }[] } | undefined;
  const interruptId = outcome?.type === "interrupt" ? outcome.interrupts?.[0]?.id : undefined;
  if (interruptId === undefined) {
    return { first: first.events, answer: [], problem: `no interrupt: HTTP ${first.status} ${JSON.stringify(first.events.at(-1) ?? first.text)}` };
  }
  const answer = await eventsUntilTerminal(gatewayUrl, {
    ...input,
    runId: `${input.runId}-answer`,
    resume: [{ interruptId, status: "resolved", payload }],
  });
  const end = answer.events.at(-1);
  const ok = end?.type === "RUN_FINISHED" && (end.outcome as { type?: string } | undefined)?.type === "success";
  return ok
    ? { first: first.events, answer: answer.events }
    : { first: first.events, answer: answer.events, problem: `answer: HTTP ${answer.status} ${JSON.stringify(end ?? answer.text)}` };
}

export type DemoRoundTripKind = "deploy" | "pipeline";

/** The demo kernel's deploy (permission) or pipeline (candidate selection) turn, answered at once. */
export function demoRoundTrip(gatewayUrl: string, workspace: string, kind: DemoRoundTripKind): Promise<RoundTrip> {
  return kind === "pipeline"
    ? answerAtOnce(
        gatewayUrl,
        runInput(workspace, { prompt: "Create a vswitch in an existing VPC", iacCode: { runMode: "pipeline", pipelineName: "selling" } }),
        { selectedId: "1" },
      )
    : answerAtOnce(gatewayUrl, runInput(workspace, { prompt: "Deploy a VPC" }), { decision: "allow_once" });
}
