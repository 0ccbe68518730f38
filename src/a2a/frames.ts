// Shape checks for what the kernel streams. Hot path: one check per frame, and the checked object is
// returned as is (zod's copy is discarded) so unknown fields reach the projection untouched.
// Only the discriminating key and the types of the fields the gateway reads are checked; every field
// stays optional because protobuf JSON omits defaults (a2a-upstream §1.8).
import { z } from "zod";
import { RunError, type A2AStreamResponse, type A2ATask } from "../../operators/types.js";
import { assertIdLimits, assertInputLimits } from "./limits.js";
import { messageText } from "../i18n/index.js";
import { hasOnlyKey, isObject } from "../../operators/lib/json.js";

const jsonObject = z.looseObject({});
const optionalString = z.string().optional();

const part = z.looseObject({
  text: optionalString,
  raw: optionalString,
  url: optionalString,
  mediaType: optionalString,
  filename: optionalString,
  metadata: jsonObject.optional(),
});

const message = z.looseObject({
  messageId: optionalString,
  contextId: optionalString,
  taskId: optionalString,
  role: optionalString,
  parts: z.array(part).optional(),
  metadata: jsonObject.optional(),
});

const taskStatus = z.looseObject({
  state: optionalString,
  message: message.optional(),
  timestamp: optionalString,
});

const artifact = z.looseObject({
  artifactId: optionalString,
  name: optionalString,
  description: optionalString,
  parts: z.array(part).optional(),
  metadata: jsonObject.optional(),
  extensions: z.array(z.string()).optional(),
});

const task = z.looseObject({
  id: optionalString,
  contextId: optionalString,
  status: taskStatus.optional(),
  history: z.array(message).optional(),
  artifacts: z.array(artifact).optional(),
  metadata: jsonObject.optional(),
});

const statusUpdate = z.looseObject({
  taskId: optionalString,
  contextId: optionalString,
  status: taskStatus.optional(),
  metadata: jsonObject.optional(),
});

const artifactUpdate = z.looseObject({
  taskId: optionalString,
  contextId: optionalString,
  artifact: artifact.optional(),
  append: z.boolean().optional(),
  lastChunk: z.boolean().optional(),
  metadata: jsonObject.optional(),
});

const streamPayloads = { task, statusUpdate, artifactUpdate, message } as const;
type StreamKey = keyof typeof streamPayloads;
const STREAM_KEYS = Object.keys(streamPayloads) as StreamKey[];

export function invalidFrame(): RunError {
  return new RunError("A2A_PROTOCOL_ERROR", messageText("a2a.invalidFrame"));
}

/**
 * A StreamResponse is a protobuf oneof: exactly one of the four payload keys, never zero or two. The frame
 * returned holds that key only: other keys (`{"odd": null, "statusUpdate": …}`) never reach the projection.
 */
export function decodeStreamResult(result: unknown): A2AStreamResponse {
  if (!isObject(result)) throw invalidFrame();
  let found: StreamKey | undefined;
  for (const key of STREAM_KEYS) {
    if (result[key] === undefined) continue;
    if (found !== undefined) throw invalidFrame();
    found = key;
  }
  if (found === undefined) throw invalidFrame();
  // The hand-written guards are the fast path; the zod schemas stay the definition, and decide whenever a
  // guard says no (test/frames-guard.test.ts checks that a guard never accepts what its schema refuses).
  const payload = result[found];
  if (!FAST_GUARDS[found](payload) && !streamPayloads[found].safeParse(payload).success) throw invalidFrame();
  assertInputLimits(payload);
  assertIdLimits(found, payload);
  return (hasOnlyKey(result, found) ? result : { [found]: payload }) as A2AStreamResponse;
}

const isString = (x: unknown) => x === undefined || typeof x === "string";
const isOptObj = (x: unknown) => x === undefined || isObject(x);
const isOptBool = (x: unknown) => x === undefined || typeof x === "boolean";
const isOptArray = (x: unknown, item: (y: unknown) => boolean) => x === undefined || (Array.isArray(x) && x.every(item));

const guardPart = (x: unknown): boolean =>
  isObject(x) && isString(x.text) && isString(x.raw) && isString(x.url) && isString(x.mediaType) && isString(x.filename) && isOptObj(x.metadata);
const guardMessage = (x: unknown): boolean =>
  isObject(x) &&
  isString(x.messageId) &&
  isString(x.contextId) &&
  isString(x.taskId) &&
  isString(x.role) &&
  isOptArray(x.parts, guardPart) &&
  isOptObj(x.metadata);
const guardStatus = (x: unknown): boolean =>
  isObject(x) && isString(x.state) && (x.message === undefined || guardMessage(x.message)) && isString(x.timestamp);
const guardArtifact = (x: unknown): boolean =>
  isObject(x) &&
  isString(x.artifactId) &&
  isString(x.name) &&
  isString(x.description) &&
  isOptArray(x.parts, guardPart) &&
  isOptObj(x.metadata) &&
  isOptArray(x.extensions, (e) => typeof e === "string");

export const FAST_GUARDS: Record<StreamKey, (x: unknown) => boolean> = {
  task: (x) =>
    isObject(x) &&
    isString(x.id) &&
    isString(x.contextId) &&
    (x.status === undefined || guardStatus(x.status)) &&
    isOptArray(x.history, guardMessage) &&
    isOptArray(x.artifacts, guardArtifact) &&
    isOptObj(x.metadata),
  statusUpdate: (x) =>
    isObject(x) && isString(x.taskId) && isString(x.contextId) && (x.status === undefined || guardStatus(x.status)) && isOptObj(x.metadata),
  artifactUpdate: (x) =>
    isObject(x) &&
    isString(x.taskId) &&
    isString(x.contextId) &&
    (x.artifact === undefined || guardArtifact(x.artifact)) &&
    isOptBool(x.append) &&
    isOptBool(x.lastChunk) &&
    isOptObj(x.metadata),
  message: guardMessage,
};

export const STREAM_SCHEMAS = streamPayloads;

/** GetTask and CancelTask return the Task itself, without a wrapper key. */
export function decodeTask(x: unknown): A2ATask {
  if (!task.safeParse(x).success) throw invalidFrame();
  assertInputLimits(x);
  assertIdLimits("task", x);
  return x as A2ATask;
}


/** ListTasks' result: `{tasks: [Task…], nextPageToken}` (an empty token, as protobuf JSON may send, is the last page). */
export function decodeTaskPage(x: unknown): { tasks: A2ATask[]; nextPageToken?: string } {
  if (!isObject(x) || !Array.isArray(x.tasks)) throw invalidFrame();
  const token = x.nextPageToken;
  if (token !== undefined && typeof token !== "string") throw invalidFrame();
  const tasks = x.tasks.map(decodeTask);
  return token ? { tasks, nextPageToken: token } : { tasks };
}
