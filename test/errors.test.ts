// The one error model: every thrown value becomes a GatewayError with the status it is refused with, the
// envelope shows only what may be shown, and RUN_ERROR comes from one builder.
import { EventSchema } from "@ag-ui/core/schemas";
import { describe, expect, it } from "vitest";
import { RunError } from "../operators/index.js";
import { runErrorEvent } from "../operators/lib/run-error-event.js";
import { GatewayError, errorEnvelope, gatewayErrorOf, runErrorOf } from "../src/errors.js";
import { localize } from "../src/i18n/index.js";
import { INPUT_ERROR_BASES, InputError } from "../src/input-error.js";
import { admission } from "../src/runs/errors.js";

describe("gatewayErrorOf", () => {
  it("keeps a GatewayError as it is", () => {
    const refusal = admission.threadBusy();
    expect(gatewayErrorOf(refusal)).toBe(refusal);
    expect(refusal.status).toBe(409);
  });

  it("maps a run failure before the stream to 503 when the gateway's state failed, 502 otherwise", () => {
    expect(gatewayErrorOf(new RunError("STATE_PERSISTENCE_FAILED", "x"))).toMatchObject({ status: 503, code: "STATE_PERSISTENCE_FAILED" });
    expect(gatewayErrorOf(new RunError("A2A_UNAVAILABLE", "y"))).toMatchObject({ status: 502, code: "A2A_UNAVAILABLE", english: "y" });
  });

  it("turns a validation failure into 400 INVALID_INPUT naming the field", () => {
    const error = gatewayErrorOf(new InputError(INPUT_ERROR_BASES.noUserMessage, "messages"));
    expect(error).toMatchObject({ status: 400, code: "INVALID_INPUT" });
    expect(errorEnvelope(error, "en").error.message).toBe(`${INPUT_ERROR_BASES.noUserMessage} messages`);
  });

  it("hides what an unknown failure says: internal exposure, generic text", () => {
    const error = gatewayErrorOf(new Error("secret path /etc/shadow"));
    expect(error).toMatchObject({ status: 500, code: "INTERNAL_ERROR", exposure: "internal" });
    const envelope = JSON.stringify(errorEnvelope(error, "en"));
    expect(envelope).not.toContain("shadow");
    expect(errorEnvelope(new GatewayError(500, "X", "do not show", undefined, undefined, "internal"), "en").error.message).not.toContain(
      "do not show",
    );
  });

  it("carries machine-readable fields into the envelope (RESUME_REQUIRED's interrupts)", () => {
    const envelope = errorEnvelope(admission.resumeRequired([{ id: "i1", reason: "tool_call" } as never]), "zh");
    expect(envelope.error.code).toBe("RESUME_REQUIRED");
    expect(envelope.error.message).toBe(localize("zh", "The AG-UI thread is waiting for interrupt responses."));
    expect((envelope.error as { interrupts?: unknown[] }).interrupts).toHaveLength(1);
  });
});

describe("runErrorEvent", () => {
  it("keeps a RunError's code and text, localized; a valid AG-UI event", () => {
    const event = runErrorOf(new RunError("EXECUTION_LOST", "The A2A task to resume is unavailable."), "de", 5);
    expect(event).toMatchObject({ type: "RUN_ERROR", code: "EXECUTION_LOST", timestamp: 5 });
    expect((event as { message: string }).message).toBe(localize("de", "The A2A task to resume is unavailable."));
    expect(EventSchema.safeParse(event).success).toBe(true);
  });

  it("ends anything else with the fallback, A2A_UNAVAILABLE by default, and carries the usage", () => {
    expect(runErrorEvent(new Error("boom"), { timestamp: 1 })).toMatchObject({ code: "A2A_UNAVAILABLE", message: "The local A2A execution service is unavailable." });
    const event = runErrorEvent("?", {
      timestamp: 2,
      fallback: { code: "STATE_PERSISTENCE_FAILED", english: "The execution mapping could not be committed." },
      usage: [{ inputTokens: 1 } as never],
    });
    expect(event).toMatchObject({ code: "STATE_PERSISTENCE_FAILED", usage: [{ inputTokens: 1 }] });
  });
});
