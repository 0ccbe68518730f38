// A run's log lines, each carrying the run's ids (requestId, threadId, runId, the caller's userId, the trace's ids).
import type { Logger } from "pino";

/**
 * The ids are written into each line rather than bound in a pino child: a child keeps its serialized bindings (about
 * 0.8 KB) for as long as the run streams, and a run writes two lines, at its admission and at its end. The lines are
 * the same: the ids come first, then the line's own fields.
 */
export class RunLog {
  constructor(
    private readonly logger: Logger,
    private readonly ids: Readonly<Record<string, string>>,
  ) {}

  info(fields: Record<string, unknown>, message: string): void {
    this.logger.info({ ...this.ids, ...fields }, message);
  }

  warn(fields: Record<string, unknown>, message: string): void {
    this.logger.warn({ ...this.ids, ...fields }, message);
  }

  error(fields: Record<string, unknown>, message: string): void {
    this.logger.error({ ...this.ids, ...fields }, message);
  }
}
