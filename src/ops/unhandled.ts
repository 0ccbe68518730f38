// rxjs's last resort: an error thrown where no subscriber can take it (a consumer's own `next`) is, by
// default, re-thrown on a timer, which ends the process and every stream in it. The pipeline is built so
// that no input gets here (test/hostile-upstream.test.ts checks the counter stays 0); if a bug still lets
// one through, it is logged and counted, never swallowed silently and never fatal.
import { config } from "rxjs";
import type { Logger } from "pino";

export interface UnhandledErrorSink {
  logger: Logger;
  count: () => void;
}

// Gateways in one process (tests, embedding) share rxjs's one global hook: each gets every report.
const sinks = new Set<UnhandledErrorSink>();

function report(error: unknown): void {
  for (const sink of sinks) {
    sink.count();
    sink.logger.error({ err: error }, "unhandled error in a stream (contained; please report)");
  }
}

/** Installs the hook while at least one sink is registered; the returned function unregisters. */
export function captureUnhandledErrors(sink: UnhandledErrorSink): () => void {
  sinks.add(sink);
  config.onUnhandledError = report;
  return () => {
    sinks.delete(sink);
    if (sinks.size === 0 && config.onUnhandledError === report) config.onUnhandledError = null;
  };
}
