// Request bodies are counted while they stream in: an oversized body is refused as soon as it crosses
// the limit, without buffering the rest.
import type { IncomingMessage } from "node:http";
import { HttpError } from "./errors.js";

export interface BodyTexts {
  tooLarge: string;
  invalidJson: string;
  notObject: string;
}

export const RUN_BODY: BodyTexts = {
  tooLarge: "The AG-UI request body is too large.",
  invalidJson: "The request body is not valid JSON.",
  notObject: "RunAgentInput must be a JSON object.",
};

export const CANCEL_BODY: BodyTexts = {
  tooLarge: "The cancel request body is too large.",
  invalidJson: "The cancel request body is not valid JSON.",
  notObject: "The cancel request must be a JSON object.",
};

export async function readBody(req: IncomingMessage, limit: number, texts: BodyTexts): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isInteger(declared) && declared > limit) throw new HttpError(413, "REQUEST_TOO_LARGE", texts.tooLarge);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      req.pause();
      throw new HttpError(413, "REQUEST_TOO_LARGE", texts.tooLarge);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Strict UTF-8 and JSON; the top level must be an object. */
export function parseJsonObject(body: Buffer, texts: BodyTexts): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(body));
  } catch {
    throw new HttpError(400, "INVALID_JSON", texts.invalidJson);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new HttpError(400, "INVALID_INPUT", texts.notObject);
  }
  if (depthExceeds(value, MAX_JSON_DEPTH)) throw new HttpError(400, "INVALID_INPUT", "The request body is nested too deeply.");
  return value as Record<string, unknown>;
}

/** Deeper documents would overflow the stack of every recursive step after parsing (digest, validation). */
export const MAX_JSON_DEPTH = 128;

function depthExceeds(root: object, limit: number): boolean {
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (depth > limit) return true;
    if (typeof value !== "object" || value === null) continue;
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}
