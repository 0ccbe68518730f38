// The run part of a stream's event ids (`<key>:<seq>`), one rule for the gateway, which writes the ids, and for its
// clients, which send them back with Last-Event-ID: the run id itself when a header can carry it as it is (printable
// ASCII, no edge spaces: fetch refuses other header values, and CR/LF would break the record), else `~` and a digest.
// A run id that begins with `~` is digested too, so it can never pass for another run's digest. Nothing Node-only.

/** Whether the run id is its own key. */
export function isOwnKey(runId: string): boolean {
  return /^[\x21-\x7d](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(runId);
}

/** The key of a run id that is not its own, from the hex SHA-256 of its UTF-8 bytes. */
export function digestKey(sha256Hex: string): string {
  return `~${sha256Hex.slice(0, 32)}`;
}
