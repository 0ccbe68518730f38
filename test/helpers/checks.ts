// Run checking for every test, the soak and the CopilotKit suites: the AG-UI schema of each event (strict, no key
// lost), the strict stream verifier, and what the gateway promises of a whole run. Problems are strings, so a
// caller outside vitest (npm run soak) runs the same checks; test code asserts the list is empty.
import { isDeepStrictEqual } from "node:util";
import { EventSchema } from "@ag-ui/core/schemas";
import { verifyAguiStream } from "../../operators/verify/index.js";
import type { WireEvent } from "./sse.js";

/** Every RUN_ERROR code (operators/types.ts RunErrorCode). */
export const RUN_ERROR_CODES: ReadonlySet<string> = new Set([
  "INVALID_INPUT",
  "EXECUTION_LOST",
  "EXECUTION_EXPIRED",
  "RESUME_ALREADY_APPLIED",
  "UNKNOWN_INTERRUPT",
  "INCOMPLETE_RESUME",
  "RESUME_PAYLOAD_INVALID",
  "A2A_PROTOCOL_ERROR",
  "STATE_PERSISTENCE_FAILED",
  "A2A_UNAVAILABLE",
  "A2A_EXECUTION_FAILED",
  "CANCELLED",
  "SESSION_BACKUP_NOT_READY",
]);

/** Every event parses with the AG-UI EventSchema without losing a key. */
export function schemaProblems(events: readonly WireEvent[]): string[] {
  const problems: string[] = [];
  for (const event of events) {
    const parsed = EventSchema.safeParse(event);
    if (!parsed.success) problems.push(`${event.type} fails EventSchema`);
    else if (!isDeepStrictEqual(parsed.data, event)) problems.push(`${event.type} loses keys under EventSchema`);
  }
  return problems;
}

/** schemaProblems plus the strict verifier: a well-formed run. */
export function runProblems(events: readonly WireEvent[]): string[] {
  return [...schemaProblems(events), ...verifyAguiStream(events, { strict: true }).map((p) => `verify: ${p.problem}`)];
}

/** Schema of every event (strict: no key lost), verifyAguiStream, one terminal event with a known code. */
export function streamProblems(events: readonly WireEvent[], tolerateToolCallIds: readonly string[] = []): string[] {
  const problems = schemaProblems(events);
  const tolerated = new Set(tolerateToolCallIds.map((id) => `TOOL_CALL_RESULT for unknown tool call ${id}`));
  for (const p of verifyAguiStream(events, { strict: true })) if (!tolerated.has(p.problem)) problems.push(`verify: ${p.problem}`);
  const last = events.at(-1);
  if (events[0]?.type !== "RUN_STARTED") problems.push(`starts with ${events[0]?.type}`);
  if (last?.type !== "RUN_FINISHED" && last?.type !== "RUN_ERROR") problems.push(`ends with ${last?.type}`);
  if (last?.type === "RUN_ERROR" && !RUN_ERROR_CODES.has(String(last["code"]))) problems.push(`unknown RUN_ERROR code ${String(last["code"])}`);
  return problems;
}


/** What @ag-ui/client's own verifyEvents (the one HttpAgent runs) says of the events, replayed in order. */
export async function clientVerifierProblems(events: readonly WireEvent[]): Promise<string[]> {
  const { verifyEvents } = await import("@ag-ui/client");
  const { from, lastValueFrom, toArray } = await import("rxjs");
  try {
    await lastValueFrom(from(events as never[]).pipe(verifyEvents(), toArray()));
    return [];
  } catch (error) {
    return [`@ag-ui/client verifyEvents: ${(error as Error).message}`];
  }
}
