// JSON helpers shared by the projection and the state layer.

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Compact JSON with object keys sorted, the form digests and tool arguments are built from
 * (Python's `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)` for the same data).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeysDeep(value)) ?? "null";
}

function sortKeysDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeysDeep);
  if (!isObject(value)) return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const item = value[key];
    if (item !== undefined) sorted[key] = sortKeysDeep(item);
  }
  return sorted;
}

/** Counts from protobuf Struct arrive as floats (812.0); accept integral numbers, never booleans. */
export function toCount(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && Number.isInteger(value) && value >= 0 ? value : undefined;
}
