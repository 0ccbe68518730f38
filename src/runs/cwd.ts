// Workspace (forwardedProps.iacCode.cwd) resolution and confinement (reference §3.4). The check runs
// on the physical path so a symlink cannot lead a workspace out of the allowed roots.
import { statSync } from "node:fs";
import { lstat, mkdir, readlink, realpath, rmdir, stat } from "node:fs/promises";
import path from "node:path";
import { INPUT_ERROR_BASES as B, type InputErrorBase, InputError } from "../input-error.js";
import { atItsSize } from "../../operators/lib/short-list.js";
import { errnoCode } from "../errno.js";

const CWD_FIELD = "forwardedProps.iacCode.cwd";
// Same bound as Linux's MAXSYMLINKS: a cycle ends as "invalid" instead of looping.
const MAX_SYMLINK_HOPS = 40;

const cwdError = (base: InputErrorBase) => new InputError(base, CWD_FIELD);

/** Allowed roots from IAC_CODE_AGUI_ALLOWED_CWDS, else IACCODE_A2A_ALLOWED_CWDS (split on path.delimiter, empty items dropped).
 *  When neither is set: [serverCwd] only (deliberately stricter than the reference, which also allows the temp dir). */
export function allowedRootsFromEnv(env: NodeJS.ProcessEnv, serverCwd: string): string[] {
  for (const name of ["IAC_CODE_AGUI_ALLOWED_CWDS", "IACCODE_A2A_ALLOWED_CWDS"]) {
    const items = (env[name] ?? "").split(path.delimiter).filter((item) => item.length > 0);
    // A variable that is empty (or only delimiters) counts as unset, as `os.environ.get(...) or` does.
    if (items.length > 0) return items.map((item) => path.resolve(serverCwd, item));
  }
  return [serverCwd];
}

/**
 * The workspace to offer in examples (the CLI banner's curl, the console's default): the first allowed root that is a
 * directory now, since a missing root is dropped at admission; the first root when none is.
 */
export function exampleWorkspace(allowedRoots: readonly string[]): string {
  const existing = allowedRoots.find((root) => {
    try {
      return path.isAbsolute(root) && statSync(root).isDirectory();
    } catch {
      return false;
    }
  });
  return existing ?? allowedRoots[0] ?? process.cwd();
}

/** A workspace that passed every check; `missing` ones are created only once their run is admitted. */
export interface CheckedWorkspace {
  /** The physical path, inside the allowed roots. */
  path: string;
  missing: boolean;
  roots: readonly string[];
}

/** The longest name (one path component) Linux file systems take, in bytes. */
const NAME_MAX_BYTES = 255;
/** The longest path Linux system calls take, in bytes (PATH_MAX less its NUL). */
const PATH_MAX_BYTES = 4095;

/** Resolve and check a workspace, creating nothing. Throws InputError (field forwardedProps.iacCode.cwd, no reason). */
export async function checkCwd(raw: string, allowedRoots: readonly string[]): Promise<CheckedWorkspace> {
  // No ~ or $VAR expansion: "~/ws" is simply not absolute.
  if (typeof raw !== "string" || raw.length === 0 || !path.isAbsolute(raw)) throw cwdError(B.cwdNotAbsolute);
  if (raw.includes("\0")) throw cwdError(B.cwdInvalid);
  // Refused before any walk: a path no system call takes, whose components would each cost a step.
  if (raw.length > PATH_MAX_BYTES || Buffer.byteLength(raw) > PATH_MAX_BYTES) throw cwdError(B.cwdCannotCreate);

  const roots = await realRoots(allowedRoots);
  const absolute = path.resolve(raw);
  // The usual case, an existing directory, in one call; anything else takes the walk below and says why.
  const directory = await realDirectory(absolute);
  const resolved = directory ?? (await physicalPath(absolute));
  if (!isUnderAny(resolved, roots)) throw cwdError(B.cwdOutsideRoots);
  // A name no file system takes is refused here, not by a mkdir halfway down the path.
  if (resolved.split(path.sep).some((name) => Buffer.byteLength(name) > NAME_MAX_BYTES)) throw cwdError(B.cwdCannotCreate);
  if (directory !== undefined) return { path: directory, missing: false, roots };

  let existing;
  try {
    existing = await stat(resolved);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return { path: resolved, missing: true, roots };
    if (errnoCode(error) === "ENOTDIR") throw cwdError(B.cwdCannotCreate);
    throw cwdError(B.cwdInvalid);
  }
  if (!existing.isDirectory()) throw cwdError(B.cwdNotDirectory);
  return { path: resolved, missing: false, roots };
}

/** A prepared workspace, with the directories made for it (newest last), to take back if its run is refused after all. */
export interface PreparedWorkspace {
  path: string;
  created: string[];
}

/** Creates a checked workspace that is missing (mkdir -p, 0700). Throws InputError. */
export async function prepareWorkspace(workspace: CheckedWorkspace): Promise<PreparedWorkspace> {
  if (!workspace.missing) return { path: workspace.path, created: [] };
  const created = await mkdirParents(workspace.path);
  // Re-check after creation: something may have swapped a component for a symlink meanwhile.
  let real: string;
  try {
    real = await realpath(workspace.path);
  } catch {
    await unprepareWorkspace({ path: workspace.path, created });
    throw cwdError(B.cwdInvalid);
  }
  if (!isUnderAny(real, workspace.roots)) {
    await unprepareWorkspace({ path: workspace.path, created });
    throw cwdError(B.cwdOutsideRoots);
  }
  return { path: real, created };
}

/** Removes the directories `prepareWorkspace` made, if they are still empty (best effort). */
export async function unprepareWorkspace(prepared: PreparedWorkspace): Promise<void> {
  for (const dir of [...prepared.created].reverse()) await rmdir(dir).catch(() => undefined);
}

/** Resolve, check and create a workspace; returns the resolved real path. Throws InputError. */
export async function resolveCwd(raw: string, allowedRoots: readonly string[]): Promise<string> {
  return (await prepareWorkspace(await checkCwd(raw, allowedRoots))).path;
}

/**
 * mkdir -p, one component at a time. Not fs.mkdir({recursive}): on Node 20 it loops forever when
 * mkdir reports ENOENT under an existing parent (procfs, some FUSE mounts); this loop is bounded
 * by the number of path components.
 */
async function mkdirParents(target: string): Promise<string[]> {
  const { root } = path.parse(target);
  const created: string[] = [];
  let current = root;
  try {
    for (const component of target.slice(root.length).split(path.sep).filter(Boolean)) {
      current = path.join(current, component);
      try {
        await mkdir(current, { mode: 0o700 });
        created.push(current);
      } catch (error) {
        if (errnoCode(error) !== "EEXIST") throw cwdError(B.cwdCannotCreate);
        const isDirectory = await stat(current).then((info) => info.isDirectory(), () => false);
        if (!isDirectory) throw cwdError(B.cwdCannotCreate);
      }
    }
  } catch (error) {
    // A workspace that cannot be made leaves none of its parents behind.
    await unprepareWorkspace({ path: target, created });
    throw error;
  }
  return created;
}

/** Real paths of the roots that exist and are directories; the others are ignored. */
async function realRoots(allowedRoots: readonly string[]): Promise<string[]> {
  const roots: string[] = [];
  for (const root of allowedRoots) {
    if (!path.isAbsolute(root)) continue;
    try {
      const directory = await realDirectory(root);
      if (directory !== undefined) {
        roots.push(directory);
        continue;
      }
      const real = await realpath(root);
      if ((await stat(real)).isDirectory()) roots.push(real);
    } catch {
      // Missing or unreadable roots are dropped, as in the reference.
    }
  }
  // Each run keeps its workspace's roots.
  return atItsSize(roots);
}

/**
 * The real path of an existing directory, every symlink followed, in one call: realpath of `<dir>/.` fails (ENOTDIR,
 * ENOENT, EACCES, ELOOP) for anything else, which the caller then looks at step by step. Not on Windows, whose path
 * rules drop a trailing "." and would take a file for a directory.
 */
async function realDirectory(absolute: string): Promise<string | undefined> {
  if (process.platform === "win32") return undefined;
  try {
    return await realpath(`${absolute.endsWith(path.sep) ? absolute : absolute + path.sep}.`);
  } catch {
    return undefined;
  }
}

/**
 * The path with every symlink followed, component by component, like Python's resolve(strict=False):
 * the existing prefix becomes its real path and the missing rest is appended. Unlike fs.realpath it also
 * follows a dangling symlink, so `<root>/link-to-outside/new` is seen as outside before anything is created.
 */
async function physicalPath(absolute: string): Promise<string> {
  const { root } = path.parse(absolute);
  const pending = absolute.slice(root.length).split(path.sep).filter(Boolean).reverse();
  let current = root;
  let hops = 0;
  while (pending.length > 0) {
    const component = pending.pop() as string;
    if (component === ".") continue;
    if (component === "..") {
      current = path.dirname(current);
      continue;
    }
    const candidate = path.join(current, component);
    let info;
    try {
      info = await lstat(candidate);
    } catch (error) {
      const code = errnoCode(error);
      if (code !== "ENOENT" && code !== "ENOTDIR") throw cwdError(B.cwdInvalid);
      // Nothing below a missing component exists: the rest is appended as written, in one join.
      return path.join(candidate, ...pending.reverse());
    }
    if (!info.isSymbolicLink()) {
      current = candidate;
      continue;
    }
    if (++hops > MAX_SYMLINK_HOPS) throw cwdError(B.cwdInvalid);
    let target: string;
    try {
      target = await readlink(candidate);
    } catch {
      throw cwdError(B.cwdInvalid);
    }
    const targetRoot = path.parse(target).root;
    if (targetRoot) current = targetRoot;
    pending.push(...target.slice(targetRoot.length).split(path.sep).filter(Boolean).reverse());
  }
  return current;
}

/** Component-wise containment: /a/bc is not under /a/b. */
function isUnderAny(candidate: string, roots: readonly string[]): boolean {
  return roots.some((root) => {
    if (candidate === root) return true;
    const prefix = root.endsWith(path.sep) ? root : root + path.sep;
    return candidate.startsWith(prefix);
  });
}

