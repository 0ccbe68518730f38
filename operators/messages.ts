/**
 * The English texts the operators themselves put into RUN_ERROR messages and interrupt fallbacks, by the key
 * the gateway's i18n catalog (src/i18n/catalog.ts) translates them under. `translate` (see Translate) receives
 * these texts; test/i18n.test.ts checks each one is its catalog entry's English, so none goes out untranslated.
 */
export const OPERATOR_TEXTS = {
  "run.cancelled": "The execution was cancelled.",
  "a2a.executionFailed": "The A2A execution failed.",
  "a2a.unavailable": "The local A2A execution service is unavailable.",
  "a2a.invalidFrame": "The A2A stream contained an invalid frame.",
  "a2a.contextChanged": "The A2A context identity changed unexpectedly.",
  "a2a.taskChanged": "The A2A task identity changed unexpectedly.",
  "a2a.sessionChanged": "The iac-code session identity changed unexpectedly.",
  "a2a.interruptOtherTask": "An interrupt belongs to another A2A task.",
  "a2a.interruptOtherContext": "An interrupt belongs to another A2A context.",
  "state.mappingCommitFailed": "The execution mapping could not be committed.",
  "interrupt.inputRequired": "Input required",
  "interrupt.permissionRequired": "Permission required",
} as const;

export type OperatorTextKey = keyof typeof OPERATOR_TEXTS;
