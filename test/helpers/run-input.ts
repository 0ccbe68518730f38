// A valid RunAgentInput for tests, free of vitest so the soak script can use it too.
import { randomUUID } from "node:crypto";
import type { RunAgentInput } from "@ag-ui/client";
import type { JsonObject } from "../../operators/types.js";

export interface InputOverrides extends Partial<Omit<RunAgentInput, "forwardedProps">> {
  /** Merged over the default forwardedProps.iacCode. */
  iacCode?: JsonObject;
  /** Replaces forwardedProps entirely (for invalid-props tests). */
  forwardedProps?: unknown;
  /** Shorthand for one user message with this text. */
  prompt?: string;
}

/** The seed's minimal RunAgentInput with fresh ids and cwd = `cwd`. */
export function runInput(cwd: string, overrides: InputOverrides = {}): RunAgentInput {
  const { iacCode, forwardedProps, prompt, ...rest } = overrides;
  return {
    threadId: randomUUID(),
    runId: randomUUID(),
    state: {},
    messages: [{ id: `message-${randomUUID()}`, role: "user", content: prompt ?? "Create a VPC template" }],
    tools: [],
    context: [],
    forwardedProps: forwardedProps ?? {
      iacCode: { schemaVersion: 1, rosInvocationId: "invocation-1", cwd, runMode: "normal", ...iacCode },
    },
    ...rest,
  };
}
