// Headless Chromium for the browser tests: Debian's /usr/bin/chromium when the machine has it, else the
// headless shell that the @sparticuz/chromium package ships inside itself (so a fresh clone needs no
// system browser). playwright-core never downloads a browser of its own.
import { existsSync } from "node:fs";
import { access, constants, mkdtemp, readFile, rename, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import bundledChromium from "@sparticuz/chromium";
import { chromium, type BrowserContext } from "playwright-core";

export const SYSTEM_CHROMIUM = "/usr/bin/chromium";

/**
 * The background-networking flags keep Chromium from dialling Google's hosts, which a closed network
 * refuses many at a time; --no-sandbox because tests run as root.
 */
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface ChromiumBinary {
  executablePath: string;
  source: "system" | "bundled";
  /** Extra environment the binary needs (fonts of its own when the machine has no fontconfig). */
  env: Record<string, string>;
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function bundledVersion(): Promise<string> {
  // The package exports no ./package.json, and its entry point sits a version-dependent depth below the package
  // (build/index.js, build/esm/index.js): the manifest is the nearest package.json above it that names the package.
  let dir = dirname(createRequire(import.meta.url).resolve("@sparticuz/chromium"));
  for (;;) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const manifest = JSON.parse(await readFile(file, "utf8")) as { name?: string; version: string };
      if (manifest.name === "@sparticuz/chromium") return manifest.version;
    }
    if (dirname(dir) === dir) throw new Error("@sparticuz/chromium: no package.json above its entry point");
    dir = dirname(dir);
  }
}

/**
 * Unpacks the bundled headless shell once per version into <tmp>/agui-gateway-chromium-<version>.
 * The package inflates into os.tmpdir() and takes an existing file there as finished, so two test runs
 * unpacking at once could start a half-written binary: each unpacks into a staging folder of its own
 * (TMPDIR pointed at it for the call) and publishes it with one rename; the loser drops its copy.
 */
async function unpackBundled(): Promise<string> {
  const home = join(tmpdir(), `agui-gateway-chromium-${await bundledVersion()}`);
  if (await isExecutable(join(home, "chromium"))) return home;
  const staging = await mkdtemp(join(tmpdir(), "agui-gateway-chromium-staging-"));
  const savedTmp = process.env.TMPDIR;
  process.env.TMPDIR = staging;
  try {
    await bundledChromium.executablePath();
  } finally {
    if (savedTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmp;
  }
  try {
    await rename(staging, home);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    if (!(await isExecutable(join(home, "chromium")))) throw error;
  }
  return home;
}

export async function findChromium(): Promise<ChromiumBinary> {
  if (await isExecutable(SYSTEM_CHROMIUM)) return { executablePath: SYSTEM_CHROMIUM, source: "system", env: {} };
  const home = await unpackBundled();
  // The shell links fontconfig in; with no system configuration it reads the package's own (Open Sans).
  const env: Record<string, string> = existsSync("/etc/fonts/fonts.conf") ? {} : { FONTCONFIG_PATH: join(home, "fonts") };
  return { executablePath: join(home, "chromium"), source: "bundled", env };
}

/** A persistent context on a fresh profile folder (the caller removes it). */
export async function launchChromium(profile: string, options: { viewport: { width: number; height: number } }): Promise<BrowserContext> {
  const binary = await findChromium();
  return chromium.launchPersistentContext(profile, {
    executablePath: binary.executablePath,
    headless: true,
    args: ARGS,
    env: { ...process.env, ...binary.env } as Record<string, string>,
    viewport: options.viewport,
  });
}
