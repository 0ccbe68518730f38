/**
 * AG-UI stream verifier: judges a stream of events as the AG-UI 1.1 specification does (1.0 streams satisfy 1.1),
 * and, with `{ strict: true }`, by the gateway's own contract on top.
 *
 * Default mode is for anyone judging a producer: several runs per stream, RUN_ERROR after RUN_FINISHED (the run then
 * counts as failed, the stream is well formed), chunk events expanded as a consumer expands them, subagent attribution
 * and ownership, closed value sets. Strict mode adds what the gateway promises its clients: exactly one run, nothing
 * open before RUN_ERROR either, non-empty deltas, an integer timestamp on every event, one result per tool call and
 * interrupts only inside `RUN_FINISHED.outcome`.
 *
 * It never stops at the first problem: every problem it finds is reported, each naming its rule (`AGUI_RULES`) and
 * the index of the event. Problems that belong to the end of the stream use `index === events.length`.
 *
 * Not an operator: it lives in operators/ so that both the gateway (--validate-events, src/http/self-check.ts) and
 * the conformance harness (marbles/, published as `agui-gateway/marbles`) use it. One file per concern: rules.ts
 * (the rules table and the reported shapes), state.ts, lifecycle.ts, items.ts, chunk-lanes.ts, subagents.ts,
 * families.ts, outcomes.ts; stream.ts reads a stream through them.
 */
import { END_OF_STREAM, type StreamProblem, type VerifyOptions } from "./rules.js";
import { verifyStream } from "./stream.js";

export { AGUI_RULES, END_OF_STREAM, type AguiRule, type StreamProblem, type VerifyOptions } from "./rules.js";
export { aguiRunOutcomes, type AguiRunOutcome, type AguiRunSummary } from "./outcomes.js";

/**
 * Problems of an AG-UI event stream, [] when it is valid. By the AG-UI spec; `{ strict: true }` adds the gateway's
 * contract. Pure; never throws.
 */
export function verifyAguiStream(events: readonly unknown[], options: VerifyOptions = {}): StreamProblem[] {
  try {
    return verifyStream(events, options.strict === true);
  } catch (error) {
    // Only reachable through hostile inputs (throwing getters, proxies); a verifier must still answer.
    return [{ index: -1, type: END_OF_STREAM, rule: "event-shape", problem: `verifier could not read the stream: ${String(error)}` }];
  }
}
