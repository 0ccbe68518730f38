export {
  A2AClient,
  A2AJsonRpcError,
  a2aUnavailable,
  assertLoopbackA2AUrl,
  type A2AClientOptions,
  type FlowGate,
  type ListTasksQuery,
  type TaskPage,
  type PacedUpstream,
  type StreamOptions,
} from "./client.js";
export { decodeStreamResult, decodeTask, decodeTaskPage, invalidFrame } from "./frames.js";
export {
  SECRET_METADATA_KEYS,
  buildIacCodeMetadata,
  buildUserMessage,
  contextIdForThread,
  type RequestMetadataInput,
} from "./metadata.js";
