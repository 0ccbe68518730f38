// JSON helpers shared by the projection and the state layer.

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * No enumerable key but `only` (absent or not). One pass over the keys, no array: per frame, this is cheaper than
 * `Object.keys(…).length` or than reading each key a caller knows on objects of every shape.
 */
export function hasOnlyKey(value: object, only: string): boolean {
  for (const key in value) if (key !== only) return false;
  return true;
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
  // Without a prototype, `sorted["__proto__"] = …` writes the key (which JSON.parse kept as data) instead of
  // setting the copy's prototype; the copy is only ever stringified.
  const sorted = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(value).sort()) {
    const item = value[key];
    if (item !== undefined) sorted[key] = sortKeysDeep(item);
  }
  return sorted;
}

/**
 * Counts from protobuf Struct arrive as floats (812.0); accept integral numbers, never booleans. Larger than
 * 2^53 - 1 is clamped there: such a count is not exact anyway, and it must stay a valid int64 on the protobuf
 * wire and an integer in the state file.
 */
export function toCount(value: unknown): number | undefined {
  if (typeof value !== "number" || !Number.isFinite(value) || !Number.isInteger(value) || value < 0) return undefined;
  return value > Number.MAX_SAFE_INTEGER ? Number.MAX_SAFE_INTEGER : value;
}

/** A sum of counts that saturates at 2^53 - 1 instead of growing past what int64 and JSON carry exactly. */
export function addCounts(total: number, more: number | undefined): number {
  const sum = total + (more ?? 0);
  return sum > Number.MAX_SAFE_INTEGER ? Number.MAX_SAFE_INTEGER : sum;
}
