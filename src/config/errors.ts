/** A configuration mistake; `message` is one line, meant to be printed as-is before exit 1. */
export class ConfigError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ConfigError";
  }
}
