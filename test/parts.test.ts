import { describe, expect, it } from "vitest";
import { InputError } from "../src/input-error.js";
import type { AguiMessage } from "../src/runs/input.js";
import {
  MAX_IMAGE_BYTES,
  MAX_TOTAL_IMAGE_BYTES,
  buildUserParts,
  isSafeFileName,
  strictBase64DecodedLength,
} from "../src/runs/parts.js";

const PNG_BYTES = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00]);
const PNG = PNG_BYTES.toString("base64");

const user = (content: unknown): AguiMessage => ({ id: "u", role: "user", content }) as AguiMessage;
const image = (value: string, mimeType = "image/png", metadata?: unknown) => ({
  type: "image",
  source: { type: "data", value, mimeType },
  ...(metadata === undefined ? {} : { metadata }),
});
/** Strict base64 text whose decoded length is exactly `bytes`, built without allocating the bytes. */
const base64OfLength = (bytes: number): string => {
  const rest = bytes % 3;
  return "A".repeat(Math.floor(bytes / 3) * 4) + (rest === 1 ? "AA==" : rest === 2 ? "AAA=" : "");
};

function failure(content: unknown, prefix = "messages.3"): InputError {
  try {
    buildUserParts(user(content), prefix);
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return error as InputError;
  }
  throw new Error("expected buildUserParts to throw");
}

function expectFailure(content: unknown, base: string, field: string, reason?: string): void {
  const error = failure(content);
  expect({ base: error.base, field: error.field, reason: error.reason }).toEqual({ base, field, reason });
}

describe("buildUserParts: text", () => {
  it("turns string content into one text part", () => {
    expect(buildUserParts(user("Crie um modelo de VPC"), "messages.0")).toEqual([{ text: "Crie um modelo de VPC" }]);
  });

  it("turns text parts into text parts, in order", () => {
    expect(buildUserParts(user([{ type: "text", text: "a" }, { type: "text", text: "" }]), "messages.0")).toEqual([
      { text: "a" },
      { text: "" },
    ]);
  });

  it("rejects content that is neither a string nor a list", () => {
    expectFailure(42, "The user message content is invalid.", "messages.3.content", "Invalid value.");
    expectFailure(undefined, "The user message content is invalid.", "messages.3.content", "Invalid value.");
  });

  it("rejects malformed parts with the field named", () => {
    expectFailure(["x"], "The user message content is invalid.", "messages.3.content.0", "Expected an object.");
    expectFailure([{ type: "text" }], "The user message content is invalid.", "messages.3.content.0.text", "Required field is missing.");
    expectFailure([{ type: "text", text: 1 }], "The user message content is invalid.", "messages.3.content.0.text", "Expected a string.");
    expectFailure([{ text: "no type" }], "The user message content is invalid.", "messages.3.content.0.type", "Required field is missing.");
    expectFailure([{ type: "image" }], "The user message content is invalid.", "messages.3.content.0.source", "Required field is missing.");
  });
});

describe("buildUserParts: images", () => {
  it("builds an inline data part named after its position (text then image gives agui-image-2)", () => {
    const parts = buildUserParts(user([{ type: "text", text: "look" }, image(PNG, "IMAGE/PNG")]), "messages.0");
    expect(parts).toEqual([{ text: "look" }, { data: { filename: "agui-image-2", bytes: PNG }, mediaType: "image/png" }]);
  });

  it("numbers each image by the parts already built", () => {
    const parts = buildUserParts(user([image(PNG), image(PNG, "image/jpeg"), { type: "text", text: "t" }, image(PNG, "image/webp")]), "m");
    expect(parts.map((p) => (p.data as { filename?: string } | undefined)?.filename)).toEqual([
      "agui-image-1",
      "agui-image-2",
      undefined,
      "agui-image-4",
    ]);
    expect(parts.map((p) => p.mediaType)).toEqual(["image/png", "image/jpeg", undefined, "image/webp"]);
  });

  it("uses metadata.filename when it is a safe file name", () => {
    const [part] = buildUserParts(user([image(PNG, "image/gif", { filename: "diagram v2.gif" })]), "m");
    expect(part).toEqual({ data: { filename: "diagram v2.gif", bytes: PNG }, mediaType: "image/gif" });
  });

  it("falls back to the generated name for an unsafe or non-string filename", () => {
    for (const filename of ["../etc/passwd", "a/b.png", "CON", 7]) {
      const [, part] = buildUserParts(user([{ type: "text", text: "t" }, image(PNG, "image/png", { filename })]), "m");
      expect((part?.data as { filename: string }).filename).toBe("agui-image-2");
    }
  });

  it("rejects url and file sources as remote media", () => {
    const url = { type: "image", source: { type: "url", value: "https://example.com/a.png" } };
    expectFailure([url], "Remote media URLs are not supported.", "messages.3.content.0.source.type");
    const file = { type: "image", source: { type: "file", value: "file-123", provider: "openai" } };
    expectFailure([{ type: "text", text: "x" }, file], "Remote media URLs are not supported.", "messages.3.content.1.source.type");
  });

  it("rejects an unknown source type as malformed", () => {
    const odd = { type: "image", source: { type: "blob", value: PNG, mimeType: "image/png" } };
    expectFailure([odd], "The user message content is invalid.", "messages.3.content.0.source.type", "Expected one of the allowed values.");
  });

  it("rejects other image media types", () => {
    expectFailure([image(PNG, "image/svg+xml")], "The image media type is not supported.", "messages.3.content.0.source.mimeType");
    expectFailure([image(PNG, "image/bmp")], "The image media type is not supported.", "messages.3.content.0.source.mimeType");
  });

  it("rejects invalid base64", () => {
    const bad = "The image data is not valid base64.";
    const field = "messages.3.content.0.source.value";
    expectFailure([image("not base64!")], bad, field);
    expectFailure([image("iVBORw0KGgo")], bad, field); // missing padding
    expectFailure([image("iVBO Rw0KGgo=")], bad, field); // whitespace
    expectFailure([image("iVBORw0K\nGgo=")], bad, field); // newline
    expectFailure([image("iVBORw0KGgo=".replace("=", "-"))], bad, field); // URL-safe alphabet
    expectFailure([image("iV=ORw0KGgo=")], bad, field); // padding in the middle
    expectFailure([image("")], bad, field);
  });

  it("accepts an image of exactly 8 MiB and rejects 8 MiB + 1", () => {
    const [ok] = buildUserParts(user([image(base64OfLength(MAX_IMAGE_BYTES))]), "m");
    expect(ok?.mediaType).toBe("image/png");
    expectFailure([image(base64OfLength(MAX_IMAGE_BYTES + 1))], "An image exceeds the maximum size.", "messages.3.content.0.source.value");
  });

  it("accepts 10 MiB of images in total and rejects one byte more", () => {
    const eightMiB = base64OfLength(MAX_IMAGE_BYTES);
    const rest = MAX_TOTAL_IMAGE_BYTES - MAX_IMAGE_BYTES;
    expect(buildUserParts(user([image(eightMiB), image(base64OfLength(rest))]), "m")).toHaveLength(2);
    expectFailure(
      [{ type: "text", text: "two" }, image(eightMiB), image(base64OfLength(rest + 1))],
      "The total image content exceeds the maximum size.",
      "messages.3.content.2.source.value",
    );
  });
});

describe("buildUserParts: other part kinds", () => {
  it.each(["audio", "video", "document", "binary", "hologram"])("rejects %s parts", (type) => {
    const part = { type, source: { type: "data", value: PNG, mimeType: "audio/wav" } };
    expectFailure([{ type: "text", text: "x" }, part], "Only text and inline data images are supported.", "messages.3.content.1.type");
  });
});

describe("strictBase64DecodedLength", () => {
  it("matches Buffer's decoded length for every padding shape", () => {
    for (let n = 1; n <= 12; n++) {
      const text = Buffer.alloc(n, 0xab).toString("base64");
      expect(strictBase64DecodedLength(text)).toBe(n);
    }
  });

  it("rejects non-strict forms", () => {
    for (const text of ["A", "AB", "ABC", "A===", "====", "AB=C", "AB==\n", " ABC", "ABC="+"=", "ÀBCD"]) {
      expect(strictBase64DecodedLength(text)).toBeUndefined();
    }
  });
});

describe("isSafeFileName", () => {
  it("accepts ordinary names", () => {
    for (const name of ["photo.png", "diagram v2.gif", "é.webp", "a".repeat(255), "console.png", "COM10", "nul-ish.txt"]) {
      expect(isSafeFileName(name), name).toBe(true);
    }
  });

  it("rejects unsafe names", () => {
    const unsafe = [
      "", ".", "..", "a/b", "a\\b", "C:evil", "bad\u0000", "tab\there", "del\u007f", "a<b", "a>b", 'a"b', "a|b", "a?b", "a*b",
      "trailing.", "trailing ", "CON", "con.txt", "con.tar.gz", "Nul", "COM1", "lpt9.log", "é".repeat(128), // 256 UTF-8 bytes
    ];
    for (const name of unsafe) expect(isSafeFileName(name), JSON.stringify(name)).toBe(false);
  });
});
