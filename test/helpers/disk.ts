// What a request left on disk: every file, directory and link under a folder, files by a digest of their bytes.
import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";

export function diskSnapshot(dir: string): Record<string, string> {
  const seen: Record<string, string> = {};
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const full = path.join(at, entry.name);
      if (entry.isDirectory()) {
        seen[full] = "dir";
        walk(full);
      } else if (entry.isSymbolicLink()) seen[full] = "link";
      else seen[full] = createHash("sha256").update(readFileSync(full)).digest("hex");
    }
  };
  walk(dir);
  return seen;
}
