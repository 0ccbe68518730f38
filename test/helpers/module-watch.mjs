// Test-only (test/tracing.test.ts), loaded into a real CLI with NODE_OPTIONS=--import: writes one stderr line
// "module-watch: <specifier>" for every bare @opentelemetry/* import the process resolves, so a test can tell
// whether the OpenTelemetry SDK was loaded at all.
import { register } from "node:module";

const hook = `
import { writeSync } from "node:fs";
export async function resolve(specifier, context, next) {
  if (specifier.startsWith("@opentelemetry/")) writeSync(2, "module-watch: " + specifier + "\\n");
  return next(specifier, context);
}
`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);
