// --validate-events: every outgoing event is parsed with @ag-ui/core's EventSchema as it is written, and
// the whole run is checked with verifyAguiStream when it ends. Violations are logged with the event and
// counted; the event is still sent, so a client sees exactly what the gateway produced.
import { EventSchema } from "@ag-ui/core/schemas";
import type { Logger } from "pino";
import { verifyAguiStream } from "../../operators/verify/index.js";
import type { AguiOutput } from "../../operators/index.js";

export interface SelfCheckCounter {
  violation(kind: "schema" | "order"): void;
}

export interface StreamSelfCheck {
  onEvent(event: AguiOutput): void;
  end(): void;
}

export function createSelfCheck(logger: Logger, counter?: SelfCheckCounter): () => StreamSelfCheck {
  return () => {
    const events: { type: string; [key: string]: unknown }[] = [];
    return {
      onEvent(event) {
        if (event.type === "HEARTBEAT") return;
        events.push(event as { type: string });
        const parsed = EventSchema.safeParse(event);
        if (!parsed.success) {
          counter?.violation("schema");
          logger.error({ event, issues: parsed.error.issues }, "outgoing event violates the AG-UI schema");
        }
      },
      end() {
        if (events.length === 0) return;
        const problems = verifyAguiStream(events, { strict: true });
        if (problems.length > 0) {
          counter?.violation("order");
          logger.error({ problems, events: problems.map((p) => events[p.index]) }, "outgoing run violates AG-UI ordering");
        }
      },
    };
  };
}
