// Which build of the gateway the bench loads: dist/ (tsc output, what `agui-gateway` runs) when it is at
// least as new as every source file, after one rebuild attempt if not; src/ through tsx otherwise.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The node flags the `agui-gateway` CLI runs with (its shebang): the bench runs the gateway the same way. */
export const CLI_NODE_FLAGS: string[] = readFileSync(path.join(ROOT, "src", "cli.ts"), "utf8")
  .split("\n", 1)[0]!
  .replace(/^#!\/usr\/bin\/env\s+(-S\s+)?node\s*/, "")
  .split(/\s+/)
  .filter(Boolean);

export interface GatewayBuild {
  kind: "dist" | "src";
  /** Absolute module paths. */
  gateway: string;
  operators: string;
  fileStore: string;
  redisStore: string;
  a2a: string;
  note: string;
}

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sources(rel));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") && !/\.(test|spec)\.ts$/.test(entry.name)) out.push(rel);
  }
  return out;
}

function staleFiles(): string[] {
  return [...sources("src"), ...sources("operators")].filter((rel) => {
    const js = path.join(ROOT, "dist", rel.replace(/\.ts$/, ".js"));
    return !existsSync(js) || statSync(js).mtimeMs < statSync(path.join(ROOT, rel)).mtimeMs;
  });
}

function build(kind: "dist" | "src", note: string, distDir = path.join(ROOT, "dist")): GatewayBuild {
  const at = (rel: string) => (kind === "dist" ? path.join(distDir, `${rel}.js`) : path.join(ROOT, `${rel}.ts`));
  return { kind, gateway: at("src/gateway"), operators: at("operators/index"), fileStore: at("src/state/file-store"), redisStore: at("src/state/redis-store"), a2a: at("src/a2a/index"), note };
}

/** `distDir` (--gateway-dist=DIR): bench another compiled tree as is, e.g. a patched copy of dist/ for an A/B run. */
export function resolveGatewayBuild(log: (line: string) => void, distDir?: string): GatewayBuild {
  if (distDir !== undefined) return build("dist", `compiled tree ${path.resolve(distDir)} (--gateway-dist)`, path.resolve(distDir));
  let stale = staleFiles();
  if (stale.length === 0) return build("dist", "dist/ is fresh");
  log(`dist/ is older than ${stale.length} source file(s) (e.g. ${stale[0]}); rebuilding with tsc -p tsconfig.build.json`);
  try {
    execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { cwd: ROOT, stdio: "pipe", timeout: 180_000 });
  } catch {
    // Type errors in someone's work in progress still emit JS; freshness is re-checked below.
  }
  stale = staleFiles();
  if (stale.length === 0) return build("dist", "dist/ rebuilt");
  log(`dist/ still stale after tsc (${stale[0]}): loading src/ through tsx`);
  return build("src", `src/ via tsx (dist stale: ${stale[0]})`);
}
