// Test-only (test/crash-points.test.ts), loaded into a real CLI with `node --import`: with
// IAC_CODE_AGUI_TEST_CRASH_POINT=<saveNumber>:<phase> the process SIGKILLs itself at that phase of its N-th thread
// file save. It wraps node:fs/promises before the CLI loads, at the calls FileThreadStore.save makes in order:
//   before-write    before open(<threads>/.<stem>.json.<hex>.tmp, "wx")
//   after-write     after writeFile(<that handle>)
//   after-fsync     after <that handle>.sync()
//   after-rename    after rename(<temp>, <thread file>)
//   after-dir-fsync after the sync of the threads directory that follows the rename
// so the production store carries no test hook.
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import path from "node:path";

const POINT = /^(\d+):(before-write|after-write|after-fsync|after-rename|after-dir-fsync)$/.exec(
  process.env["IAC_CODE_AGUI_TEST_CRASH_POINT"] ?? "",
);

if (POINT) {
  const target = { save: Number(POINT[1]), phase: POINT[2] };
  const TEMP = /^\.[^/\\]+\.json\.[0-9a-f]+\.tmp$/;
  const fsp = fs.promises;
  const real = { open: fsp.open, writeFile: fsp.writeFile, rename: fsp.rename };
  let saves = 0;
  /** Save number of each temp file (by path) and of each open temp handle. */
  const saveOfTemp = new Map();
  const saveOfHandle = new WeakMap();
  /** The save whose rename is done and whose directory sync comes next. */
  let renamedSave;

  const crash = (save, phase) => {
    if (save === target.save && phase === target.phase) process.kill(process.pid, "SIGKILL");
  };
  const afterSync = (handle, save, phase) => {
    const sync = handle.sync.bind(handle);
    handle.sync = async () => {
      await sync();
      crash(save, phase);
    };
    return handle;
  };

  fsp.open = async (file, flags, ...rest) => {
    const name = typeof file === "string" ? path.basename(file) : "";
    if (flags === "wx" && TEMP.test(name)) {
      const save = ++saves;
      crash(save, "before-write");
      saveOfTemp.set(String(file), save);
      const handle = await real.open(file, flags, ...rest);
      saveOfHandle.set(handle, save);
      return afterSync(handle, save, "after-fsync");
    }
    const handle = await real.open(file, flags, ...rest);
    if (flags === "r" && renamedSave !== undefined && typeof file === "string" && path.basename(file) === "threads") {
      const save = renamedSave;
      renamedSave = undefined;
      return afterSync(handle, save, "after-dir-fsync");
    }
    return handle;
  };
  fsp.writeFile = async (file, ...rest) => {
    await real.writeFile(file, ...rest);
    const save = saveOfHandle.get(file);
    if (save !== undefined) crash(save, "after-write");
  };
  fsp.rename = async (from, to) => {
    await real.rename(from, to);
    const save = saveOfTemp.get(String(from));
    if (save === undefined) return;
    saveOfTemp.delete(String(from));
    renamedSave = save;
    crash(save, "after-rename");
  };
  // ESM importers of node:fs/promises (the store) see the wrapped functions.
  syncBuiltinESMExports();
}
