// Reading what the kernel sends back: bounded bodies, depth-checked JSON, status and content-type tests.
import { invalidFrame } from "./frames.js";
import { UPSTREAM_LIMITS, nestsDeeperThan } from "./limits.js";

/** Bound on one SSE record and on one JSON reply, so a broken kernel cannot grow our memory without limit. */
export const MAX_RECORD_CHARS = 16 * 1024 * 1024;

export async function readText(body: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > MAX_RECORD_CHARS) throw invalidFrame();
    chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }
  return Buffer.concat(chunks, size).toString("utf8");
}

/** Every JSON document from the kernel comes through here, so its nesting is bounded before anything walks it. */
export function parseJson(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidFrame();
  }
  if (!opensAtMost(text, UPSTREAM_LIMITS.maxDepth) && nestsDeeperThan(value, UPSTREAM_LIMITS.maxDepth)) throw invalidFrame();
  return value;
}

/**
 * A text with at most `limit` opening brackets cannot nest deeper than `limit` (brackets inside strings only add
 * to the count): most frames are settled by this scan, cheaper than walking the parsed value. indexOf, not a
 * charCodeAt loop: the loop, inlined into the SSE line loop, cost more than the JSON.parse before it.
 */
function opensAtMost(text: string, limit: number): boolean {
  let opened = 0;
  for (let i = text.indexOf("{"); i !== -1; i = text.indexOf("{", i + 1)) if (++opened > limit) return false;
  for (let i = text.indexOf("["); i !== -1; i = text.indexOf("[", i + 1)) if (++opened > limit) return false;
  return true;
}

export function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

export function isEventStream(contentType: string | string[] | undefined): boolean {
  const value = Array.isArray(contentType) ? contentType[0] : contentType;
  return value !== undefined && value.toLowerCase().startsWith("text/event-stream");
}
