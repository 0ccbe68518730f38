// Which AG-UI protocol a request's consumer declared (RunAgentInput.protocolVersion, sent in-band by
// @ag-ui/client 1.0). Undeclared or pre-1.0 consumers get the seeds' run semantics exactly.
const VERSION = /^(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?$/;

/**
 * "1.0", "1.2", "2.0.1" and newer: true; absent or "0.0.58": false. A declaration that cannot be read
 * ("1", "v1.0", "latest") counts as a newer one: the spec's versioning rule (1.1 basic/versioning,
 * "handled like a newer one") — and the field only exists since 1.0, so whoever sends it is not older.
 */
export function declaresAgui1(protocolVersion: string | undefined): boolean {
  if (protocolVersion === undefined) return false;
  const match = VERSION.exec(protocolVersion);
  return match === null || Number(match[1]) >= 1;
}
