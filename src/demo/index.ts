export {
  startScriptedA2AServer,
  TurnRejectedError,
  type RecordedRequest,
  type ScriptItem,
  type ScriptedA2AServer,
  type ScriptedA2AServerOptions,
  type TurnContext,
  type TurnScript,
} from "./a2a-server.js";
export {
  startRawA2AServer,
  type RawA2AServer,
  type RawA2AServerOptions,
  type RawExchange,
  type RawResponder,
} from "./raw-server.js";
export { createDemoScript, demoScript, demoSessionId, type DemoScriptOptions } from "./scripts.js";
