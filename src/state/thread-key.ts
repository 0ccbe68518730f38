// Where a thread's state lives on disk (reference-adapter §7.1). The stem must be one safe path component on every
// platform, and stable, so a restarted gateway finds the same file for the same threadId.
import { createHash } from "node:crypto";
import path from "node:path";

const PLAIN_ID = /^[A-Za-z0-9_.-]+$/;
const WINDOWS_RESERVED = new Set([
  "CON", "PRN", "AUX", "NUL",
  ...Array.from({ length: 9 }, (_, i) => `COM${i + 1}`),
  ...Array.from({ length: 9 }, (_, i) => `LPT${i + 1}`),
]);
/** Longest stem written; keeps `.<stem>.json.<random>.tmp` under the usual 255-byte name limit. */
const MAX_STEM_LENGTH = 200;

export function threadFileStem(threadId: string): string {
  if (isPlainStem(threadId)) return threadId;
  const bytes = Buffer.from(threadId, "utf8");
  const encoded = `aguiid~${bytes.toString("hex")}`;
  if (encoded.length <= MAX_STEM_LENGTH) return encoded;
  return `aguihash~${createHash("sha256").update(bytes).digest("hex")}`;
}

function isPlainStem(threadId: string): boolean {
  if (!PLAIN_ID.test(threadId)) return false;
  // Lowercase only, so ids differing in case never share a file on case-insensitive file systems.
  if (threadId !== threadId.toLowerCase()) return false;
  if (threadId === "." || threadId === ".." || threadId.endsWith(".")) return false;
  // The reference has no length cap on plain ids, but a longer one could not be written at all.
  if (threadId.length > MAX_STEM_LENGTH) return false;
  const base = threadId.split(".", 1)[0] ?? "";
  return !WINDOWS_RESERVED.has(base.toUpperCase());
}

/** `<IAC_CODE_CONFIG_DIR or ~/.iac-code>/agui`, used when neither --state-dir nor IAC_CODE_AGUI_STATE_DIR is set. */
export function defaultStateDir(env: NodeJS.ProcessEnv, homeDir: string): string {
  const fromEnv = env["IAC_CODE_CONFIG_DIR"];
  if (fromEnv === undefined || fromEnv === "") return path.join(homeDir, ".iac-code", "agui");
  const expanded = /^~(?=$|[\\/])/.test(fromEnv) ? homeDir + fromEnv.slice(1) : fromEnv;
  return path.join(path.resolve(expanded), "agui");
}
