// The latest user message becomes the parts of the A2A message (reference §3.3). Images stay
// inline: an A2A *data* part {filename, bytes} rather than a file part, as the kernel expects.
import type { A2APart } from "../../operators/types.js";
import { INPUT_ERROR_BASES as B, INPUT_ERROR_REASONS as R, InputError } from "../input-error.js";
import type { AguiMessage } from "./input.js";
import { isObject } from "../../operators/lib/json.js";

export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;
export const MAX_TOTAL_IMAGE_BYTES = 10 * 1024 * 1024;

export const IMAGE_MEDIA_TYPES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const REMOTE_SOURCE_TYPES: ReadonlySet<string> = new Set(["url", "file"]);

// Padding may only close the last quartet; with length % 4 == 0 this is exactly strict base64.
const BASE64_ALPHABET = /^[A-Za-z0-9+/]*={0,2}$/;

/** Decoded byte length of a strict base64 string, or undefined when it is not strict base64. */
export function strictBase64DecodedLength(value: string): number | undefined {
  if (value.length === 0 || value.length % 4 !== 0 || !BASE64_ALPHABET.test(value)) return undefined;
  const padding = value.endsWith("==") ? 2 : value.endsWith("=") ? 1 : 0;
  return (value.length / 4) * 3 - padding;
}

const WINDOWS_RESERVED = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$/i;
// Controls (C0, DEL, C1) and the characters Windows forbids; "/" and "\" are the path separators.
const UNSAFE_FILENAME_CHARS = /[\u0000-\u001f\u007f-\u009f<>:"/\\|?*]/;
const MAX_FILENAME_BYTES = 255;

/** A client-supplied file name that can be written as-is on any platform without escaping its directory. */
export function isSafeFileName(name: string): boolean {
  if (name.length === 0 || name === "." || name === "..") return false;
  if (Buffer.byteLength(name, "utf8") > MAX_FILENAME_BYTES) return false;
  if (UNSAFE_FILENAME_CHARS.test(name)) return false;
  if (name.endsWith(".") || name.endsWith(" ")) return false;
  return !WINDOWS_RESERVED.test(name);
}

/** Throws InputError. See the reference §3.3 for the rules; the image bytes are passed through unchanged. */
export function buildUserParts(message: AguiMessage, fieldPrefix: string /* e.g. "messages.3" */): A2APart[] {
  const content: unknown = (message as { content?: unknown }).content;
  const contentField = `${fieldPrefix}.content`;
  if (typeof content === "string") return [{ text: content }];
  if (!Array.isArray(content)) throw new InputError(B.contentInvalid, contentField, R.invalid);

  const parts: A2APart[] = [];
  let totalImageBytes = 0;
  content.forEach((item: unknown, index) => {
    const field = `${contentField}.${index}`;
    if (!isObject(item)) throw new InputError(B.contentInvalid, field, R.object);
    const type = item["type"];
    if (type === "text") {
      const text = item["text"];
      if (typeof text !== "string") throw new InputError(B.contentInvalid, `${field}.text`, reasonFor(text, R.string));
      parts.push({ text });
      return;
    }
    if (type !== "image") {
      // Any other named kind (audio, video, document, binary, future ones) is unsupported, not malformed.
      if (typeof type === "string") throw new InputError(B.unsupportedPart, `${field}.type`);
      throw new InputError(B.contentInvalid, `${field}.type`, reasonFor(type, R.string));
    }
    const image = imagePart(item, field, parts.length + 1);
    totalImageBytes += image.bytes;
    if (totalImageBytes > MAX_TOTAL_IMAGE_BYTES) throw new InputError(B.imagesTooLarge, `${field}.source.value`);
    parts.push(image.part);
  });
  return parts;
}

function imagePart(item: Record<string, unknown>, field: string, ordinal: number): { part: A2APart; bytes: number } {
  const source = item["source"];
  const sourceField = `${field}.source`;
  if (!isObject(source)) throw new InputError(B.contentInvalid, sourceField, reasonFor(source, R.object));
  const sourceType = source["type"];
  if (typeof sourceType === "string" && REMOTE_SOURCE_TYPES.has(sourceType)) {
    throw new InputError(B.remoteMedia, `${sourceField}.type`);
  }
  if (sourceType !== "data") {
    throw new InputError(B.contentInvalid, `${sourceField}.type`, reasonFor(sourceType, R.allowedValue));
  }
  const mimeType = source["mimeType"];
  const mediaType = typeof mimeType === "string" ? mimeType.toLowerCase() : undefined;
  if (mediaType === undefined || !IMAGE_MEDIA_TYPES.has(mediaType)) {
    throw new InputError(B.imageMediaType, `${sourceField}.mimeType`);
  }
  const value = source["value"];
  const bytes = typeof value === "string" ? strictBase64DecodedLength(value) : undefined;
  if (typeof value !== "string" || bytes === undefined) throw new InputError(B.imageBase64, `${sourceField}.value`);
  if (bytes > MAX_IMAGE_BYTES) throw new InputError(B.imageTooLarge, `${sourceField}.value`);

  const metadata = item["metadata"];
  const requested = isObject(metadata) ? metadata["filename"] : undefined;
  const filename = typeof requested === "string" && isSafeFileName(requested) ? requested : `agui-image-${ordinal}`;
  return { part: { data: { filename, bytes: value }, mediaType }, bytes };
}

function reasonFor(value: unknown, wrongType: (typeof R)[keyof typeof R]) {
  return value === undefined ? R.missing : wrongType;
}

