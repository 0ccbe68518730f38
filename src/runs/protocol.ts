// Which AG-UI protocol a request's consumer declared (RunAgentInput.protocolVersion, sent in-band by
// @ag-ui/client 1.0). Undeclared or pre-1.0 consumers get the seeds' run semantics exactly.
const VERSION = /^(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?$/;

/** "1.0", "1.2", "2.0.1" and newer: true; absent, "0.0.58" or anything unparseable: false. */
export function declaresAgui1(protocolVersion: string | undefined): boolean {
  if (protocolVersion === undefined) return false;
  const match = VERSION.exec(protocolVersion);
  return match !== null && Number(match[1]) >= 1;
}
