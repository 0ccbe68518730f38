// An event's JSON, byte for byte what JSON.stringify gives. Most of a turn's events are deltas (text, reasoning,
// tool arguments) of one shape, which are written directly: JSON.stringify walks the object generically, and
// encoding was the largest part of a fast stream's time after the collector. Anything else, or a delta with any
// other key, order or prototype, goes to JSON.stringify.

/** The delta types and the name of their id key, in the order the projection writes them. */
const DELTA_ID_KEY: ReadonlyMap<unknown, string> = new Map([
  ["TEXT_MESSAGE_CONTENT", "messageId"],
  ["REASONING_MESSAGE_CONTENT", "messageId"],
  ["TOOL_CALL_ARGS", "toolCallId"],
]);

export function eventJson(event: { readonly type: string }): string {
  return deltaJson(event) ?? JSON.stringify(event);
}

/**
 * `{type, <id>, delta[, timestamp]}` exactly: own keys of a plain object without a toJSON, string values, a finite
 * timestamp. Accessors are read again when the long way is taken; the projection's events have none.
 */
function deltaJson(event: { readonly type: string }): string | undefined {
  if (typeof event !== "object" || event === null) return undefined;
  const type = event.type;
  const idKey = DELTA_ID_KEY.get(type);
  if (idKey === undefined || Object.getPrototypeOf(event) !== Object.prototype) return undefined;
  const fields = event as unknown as Record<string, unknown>;
  // JSON.stringify calls a toJSON wherever it comes from (a non-enumerable own one, or one put on Object.prototype).
  if (typeof fields.toJSON === "function") return undefined;
  let keys = 0;
  for (const key in event) {
    // for-in also lists enumerable keys inherited from Object.prototype, which JSON.stringify does not write.
    if (key !== (keys === 0 ? "type" : keys === 1 ? idKey : keys === 2 ? "delta" : keys === 3 ? "timestamp" : undefined) || !Object.hasOwn(event, key)) return undefined;
    keys++;
  }
  const id = fields[idKey];
  const delta = fields.delta;
  if (keys < 3 || typeof id !== "string" || typeof delta !== "string") return undefined;
  const head = `{"type":"${type}","${idKey}":${JSON.stringify(id)},"delta":${JSON.stringify(delta)}`;
  if (keys === 3) return `${head}}`;
  const timestamp = fields.timestamp;
  // A finite number prints as JSON prints it; NaN, Infinity (null in JSON) or anything else take the long way.
  return typeof timestamp === "number" && Number.isFinite(timestamp) ? `${head},"timestamp":${timestamp}}` : undefined;
}
