import { mkdir, mkdtemp, realpath, rm, stat, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allowedRootsFromEnv, checkCwd, resolveCwd } from "../src/runs/cwd.js";
import { InputError } from "../src/input-error.js";

// Layout under one scratch dir (all real paths):
//   <base>/root/            allowed root; contains ws/, file.txt, link-out -> outside, dangling -> outside/missing
//   <base>/root-x/          sibling whose name starts with "root" (prefix confusion)
//   <base>/outside/         not allowed
//   <base>/root-link -> root  a root given as a symlink
let base: string;
let root: string;
let outside: string;
let rootX: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(os.tmpdir(), "cwd-test-")));
  root = path.join(base, "root");
  outside = path.join(base, "outside");
  rootX = path.join(base, "root-x");
  await mkdir(path.join(root, "ws", "deep"), { recursive: true });
  await mkdir(outside);
  await mkdir(rootX);
  await writeFile(path.join(root, "file.txt"), "not a dir");
  await symlink(outside, path.join(root, "link-out"));
  await symlink(path.join(outside, "missing"), path.join(root, "dangling"));
  await symlink("ws", path.join(root, "link-in"));
  await symlink(root, path.join(base, "root-link"));
  await symlink(path.join(root, "loop-b"), path.join(root, "loop-a"));
  await symlink(path.join(root, "loop-a"), path.join(root, "loop-b"));
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

async function rejection(raw: string, roots: readonly string[]): Promise<InputError> {
  try {
    await resolveCwd(raw, roots);
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    const inputError = error as InputError;
    expect(inputError.field).toBe("forwardedProps.iacCode.cwd");
    expect(inputError.reason).toBeUndefined();
    return inputError;
  }
  throw new Error(`expected resolveCwd(${raw}) to throw`);
}

const OUTSIDE = "The iac-code workspace is outside the allowed roots.";
const CANNOT_CREATE = "The iac-code workspace cannot be created.";

async function rejectionOf(call: () => Promise<unknown>): Promise<InputError> {
  const error = await call().then(() => undefined, (caught: unknown) => caught);
  expect(error).toBeInstanceOf(InputError);
  expect((error as InputError).field).toBe("forwardedProps.iacCode.cwd");
  return error as InputError;
}

describe("resolveCwd: absolute paths only", () => {
  it("accepts an absolute path to an existing directory and returns its real path", async () => {
    await expect(resolveCwd(path.join(root, "ws"), [root])).resolves.toBe(path.join(root, "ws"));
  });

  it.each(["", "relative/ws", "./ws", "~/ws", "~", "$HOME/ws"])("rejects %j as not absolute", async (raw) => {
    expect((await rejection(raw, [root])).base).toBe("The iac-code workspace must be an absolute path.");
  });

  it("does not expand $VARS inside an absolute path", async () => {
    const raw = path.join(root, "$HOME");
    await expect(resolveCwd(raw, [root])).resolves.toBe(raw);
    await expect(stat(raw)).resolves.toBeTruthy();
  });

  it("rejects a NUL byte as invalid", async () => {
    expect((await rejection(`${root}/a\0b`, [root])).base).toBe("The iac-code workspace is invalid.");
  });
});

describe("resolveCwd: confinement", () => {
  it("normalizes the path (trailing slash, . and .. inside the root)", async () => {
    await expect(resolveCwd(`${root}/ws/deep/.././/`, [root])).resolves.toBe(path.join(root, "ws"));
  });

  it("accepts the root itself", async () => {
    await expect(resolveCwd(root, [root])).resolves.toBe(root);
  });

  it("rejects a .. escape", async () => {
    expect((await rejection(`${root}/ws/../../outside`, [root])).base).toBe(OUTSIDE);
  });

  it("rejects a symlink inside the root that points outside", async () => {
    expect((await rejection(path.join(root, "link-out"), [root])).base).toBe(OUTSIDE);
  });

  it("rejects a not-yet-existing child behind an escaping symlink, without creating it", async () => {
    expect((await rejection(path.join(root, "link-out", "new-child"), [root])).base).toBe(OUTSIDE);
    await expect(stat(path.join(outside, "new-child"))).rejects.toThrow();
  });

  it("rejects a dangling symlink whose target is outside", async () => {
    expect((await rejection(path.join(root, "dangling", "child"), [root])).base).toBe(OUTSIDE);
    await expect(stat(path.join(outside, "missing"))).rejects.toThrow();
  });

  it("follows a symlink that stays inside the root and returns the real path", async () => {
    await expect(resolveCwd(path.join(root, "link-in", "deep"), [root])).resolves.toBe(path.join(root, "ws", "deep"));
  });

  it("accepts a root given as a symlink, for paths through the link and through the real dir", async () => {
    const linkRoot = path.join(base, "root-link");
    await expect(resolveCwd(path.join(linkRoot, "ws"), [linkRoot])).resolves.toBe(path.join(root, "ws"));
    await expect(resolveCwd(path.join(root, "ws"), [linkRoot])).resolves.toBe(path.join(root, "ws"));
    expect((await rejection(outside, [linkRoot])).base).toBe(OUTSIDE);
  });

  it("compares component-wise: a sibling sharing the root's name prefix is outside", async () => {
    expect((await rejection(rootX, [root])).base).toBe(OUTSIDE);
    expect((await rejection(path.join(rootX, "child"), [root])).base).toBe(OUTSIDE);
    await expect(stat(path.join(rootX, "child"))).rejects.toThrow();
  });

  it("ignores roots that do not exist or are not directories", async () => {
    const roots = [path.join(base, "nope"), path.join(root, "file.txt"), "relative-root"];
    expect((await rejection(path.join(root, "ws"), roots)).base).toBe(OUTSIDE);
    await expect(resolveCwd(path.join(outside), [...roots, outside])).resolves.toBe(outside);
  });

  it("accepts a path under any of several roots", async () => {
    await expect(resolveCwd(outside, [root, outside])).resolves.toBe(outside);
  });

  it("rejects a symlink loop as invalid", async () => {
    expect((await rejection(path.join(root, "loop-a"), [root])).base).toBe("The iac-code workspace is invalid.");
  });
});

describe("resolveCwd: existence", () => {
  it("rejects an existing file", async () => {
    expect((await rejection(path.join(root, "file.txt"), [root])).base).toBe("The iac-code workspace is not a directory.");
  });

  it("creates a missing workspace (mkdir -p, mode 0700) and returns its real path", async () => {
    const target = path.join(root, "created", "a", "b");
    await expect(resolveCwd(target, [root])).resolves.toBe(target);
    const info = await stat(target);
    expect(info.isDirectory()).toBe(true);
    expect(info.mode & 0o077).toBe(0);
  });

  it("creates a missing workspace behind an inside symlink at its real location", async () => {
    await expect(resolveCwd(path.join(root, "link-in", "fresh"), [root])).resolves.toBe(path.join(root, "ws", "fresh"));
    expect((await stat(path.join(root, "ws", "fresh"))).isDirectory()).toBe(true);
  });

  it("reports a workspace under a file as impossible to create", async () => {
    expect((await rejection(path.join(root, "file.txt", "child"), [root])).base).toBe("The iac-code workspace cannot be created.");
  });

  it("reports a mkdir failure (procfs refuses new directories, even for root)", async () => {
    expect((await rejection("/proc/agui-gateway-cwd-test", ["/proc"])).base).toBe("The iac-code workspace cannot be created.");
  });
});

describe("checkCwd: long paths", () => {
  it("refuses a path past PATH_MAX (4095 bytes) as impossible to create, before walking it", async () => {
    for (const raw of [`${root}/${"d/".repeat(32_000)}`, `${root}/${"é".repeat(2_048)}`]) {
      expect((await rejectionOf(() => checkCwd(raw, [root]))).base).toBe(CANNOT_CREATE);
    }
  }, 5_000);

  it("takes a missing tail of 1,900 components as it is written, with its `..` resolved", async () => {
    const tail = "d/".repeat(1_900).slice(0, -1);
    await expect(checkCwd(`${root}/ws/${tail}`, [root])).resolves.toMatchObject({ path: path.join(root, "ws", tail), missing: true });
    await expect(checkCwd(`${root}/link-in/new/../${tail}/x`, [root])).resolves.toMatchObject({ path: path.join(root, "ws", tail, "x"), missing: true });
  });
});

describe("allowedRootsFromEnv", () => {
  const serverCwd = "/srv/app";

  it("defaults to the server cwd only", () => {
    expect(allowedRootsFromEnv({}, serverCwd)).toEqual([serverCwd]);
  });

  it("prefers IAC_CODE_AGUI_ALLOWED_CWDS and drops empty items", () => {
    const env = {
      IAC_CODE_AGUI_ALLOWED_CWDS: ["/a", "", "/b"].join(path.delimiter) + path.delimiter,
      IACCODE_A2A_ALLOWED_CWDS: "/c",
    };
    expect(allowedRootsFromEnv(env, serverCwd)).toEqual(["/a", "/b"]);
  });

  it("falls back to IACCODE_A2A_ALLOWED_CWDS", () => {
    expect(allowedRootsFromEnv({ IACCODE_A2A_ALLOWED_CWDS: "/c" }, serverCwd)).toEqual(["/c"]);
    expect(allowedRootsFromEnv({ IAC_CODE_AGUI_ALLOWED_CWDS: "", IACCODE_A2A_ALLOWED_CWDS: "/c" }, serverCwd)).toEqual(["/c"]);
  });

  it("resolves relative items against the server cwd", () => {
    expect(allowedRootsFromEnv({ IAC_CODE_AGUI_ALLOWED_CWDS: "work" }, serverCwd)).toEqual(["/srv/app/work"]);
  });

  it("does not allow the temp dir by default", async () => {
    const roots = allowedRootsFromEnv({}, root);
    expect((await rejection(outside, roots)).base).toBe(OUTSIDE);
  });
});
