// Durable ThreadStore: one small JSON file per thread, replaced atomically (reference-adapter §7). Stateless: every
// load reads the disk and the run layer does the caching, so two stores on one directory never disagree.
import { randomBytes } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import * as fsp from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import { threadFileStem } from "./thread-key.js";
import { StateUnavailableError, type ThreadRecord, type ThreadStore } from "./thread-store.js";
import { assertStorable } from "./validate.js";
import { decodeRecordText, parseRecordText, serializeThreadRecord, stateUnavailable, threadIdOfText } from "./record-text.js";
import { errnoCode } from "../errno.js";

// Its home was this file; importers keep working.
export { serializeThreadRecord };

/** The fs/promises functions the store calls; tests replace some to inject ENOSPC, EROFS, EIO. */
export interface FsLayer {
  mkdir: typeof fsp.mkdir;
  chmod: typeof fsp.chmod;
  open: typeof fsp.open;
  rename: typeof fsp.rename;
  unlink: typeof fsp.unlink;
  lstat: typeof fsp.lstat;
  /** Called with the open temp FileHandle. */
  writeFile: typeof fsp.writeFile;
  /** Called with the open thread FileHandle. */
  readFile: typeof fsp.readFile;
}

export interface FileThreadStoreOptions {
  /** The state directory; thread files live in `<dir>/threads/`. */
  dir: string;
  fs?: Partial<FsLayer>;
}

const DEFAULT_FS: FsLayer = {
  mkdir: fsp.mkdir,
  chmod: fsp.chmod,
  open: fsp.open,
  rename: fsp.rename,
  unlink: fsp.unlink,
  lstat: fsp.lstat,
  writeFile: fsp.writeFile,
  readFile: fsp.readFile,
};

// O_NOFOLLOW refuses a symlink swapped in after lstat; O_NONBLOCK keeps a swapped-in FIFO from hanging the read.
const READ_FLAGS = fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0) | (fsConstants.O_NONBLOCK ?? 0);
const DIR_MODE = 0o700;
const FILE_MODE = 0o600;

export class FileThreadStore implements ThreadStore {
  private readonly dir: string;
  private readonly threadsDir: string;
  private readonly fs: FsLayer;
  /**
   * This store made both directories and set their modes: later saves skip the three calls (a save then costs nine
   * file-system calls instead of twelve, each a round trip through the thread pool). A save that finds them gone
   * (the state directory removed under a running gateway) makes them again.
   */
  private directoriesMade = false;
  /**
   * Temp names are this store's random prefix and a counter: one randomBytes call per store, not per save. The
   * exclusive create still refuses a name that exists.
   */
  private readonly tempPrefix = randomBytes(6).toString("hex");
  private tempCount = 0;
  /** The directory sync in flight, and the one queued behind it that renames done meanwhile wait for. */
  private directorySyncRunning: Promise<void> | undefined;
  private directorySyncQueued: Promise<void> | undefined;

  constructor(options: FileThreadStoreOptions) {
    this.dir = path.resolve(options.dir);
    this.threadsDir = path.join(this.dir, "threads");
    this.fs = { ...DEFAULT_FS, ...options.fs };
  }

  /** Absolute path of a thread's file (whether or not it exists). */
  fileFor(threadId: string): string {
    return path.join(this.threadsDir, `${threadFileStem(threadId)}.json`);
  }

  async load(threadId: string): Promise<ThreadRecord | undefined> {
    const file = this.fileFor(threadId);
    let text: string;
    try {
      const info = await this.fs.lstat(file);
      if (info.isSymbolicLink()) throw stateUnavailable("the thread file is a symlink");
      if (!info.isFile()) throw stateUnavailable("the thread file is not a regular file");
      text = await this.readRegularFile(file);
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return undefined;
      if (error instanceof StateUnavailableError) throw error;
      if (errnoCode(error) === "ELOOP") throw stateUnavailable("the thread file is a symlink", error);
      throw stateUnavailable(`the thread file cannot be read (${errnoCode(error) ?? "error"})`, error);
    }
    return parseRecordText(text, threadId, "the thread file");
  }

  /** Ids are read from the files (a stem may be a hash); temp files and unreadable files are skipped. */
  async threadIds(): Promise<string[]> {
    let names: string[];
    try {
      names = await fsp.readdir(this.threadsDir);
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return [];
      throw error;
    }
    const ids: string[] = [];
    for (const name of names) {
      if (!name.endsWith(".json") || name.startsWith(".")) continue;
      try {
        const info = await this.fs.lstat(path.join(this.threadsDir, name));
        if (!info.isFile()) continue;
        const threadId = threadIdOfText(await this.readRegularFile(path.join(this.threadsDir, name)));
        if (threadId !== undefined && `${threadFileStem(threadId)}.json` === name) ids.push(threadId);
      } catch {
        // Unreadable or foreign: load() reports it when that thread is used.
      }
    }
    return ids;
  }

  async remove(threadId: string): Promise<void> {
    await this.fs.unlink(this.fileFor(threadId)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
  }

  async save(record: ThreadRecord): Promise<void> {
    assertStorable(record);
    const text = serializeThreadRecord(record);
    if (!this.directoriesMade) await this.ensureDirectories();
    const stem = threadFileStem(record.threadId);
    const target = path.join(this.threadsDir, `${stem}.json`);
    const temp = path.join(this.threadsDir, `.${stem}.json.${this.tempPrefix}${(++this.tempCount).toString(16)}.tmp`);
    let handle: FileHandle | undefined;
    let created = false;
    let renamed = false;
    try {
      handle = await this.openTemp(temp);
      created = true;
      // Set the mode on the handle (not the path) so the file is 0600 whatever the umask, before anyone can see it.
      await handle.chmod(FILE_MODE);
      await this.fs.writeFile(handle, text, "utf8");
      await handle.sync();
      await handle.close();
      handle = undefined;
      await this.fs.rename(temp, target);
      renamed = true;
      await this.syncThreadsDirectoryAfterRename();
    } catch (error) {
      await handle?.close().catch(() => undefined);
      if (created && !renamed) await this.fs.unlink(temp).catch(() => undefined);
      throw error;
    }
  }

  private async readRegularFile(file: string): Promise<string> {
    const handle = await this.fs.open(file, READ_FLAGS);
    try {
      const info = await handle.stat();
      if (!info.isFile()) throw stateUnavailable("the thread file is not a regular file");
      // Tighten a loosened mode like the reference does; a read-only state dir must still be readable.
      if ((info.mode & 0o777) !== FILE_MODE) await handle.chmod(FILE_MODE).catch(() => undefined);
      return decodeRecordText(await this.fs.readFile(handle), "the thread file");
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  /** The temp file, created exclusively; directories removed since this store made them are made again. */
  private async openTemp(temp: string): Promise<FileHandle> {
    try {
      return await this.fs.open(temp, "wx", FILE_MODE);
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") throw error;
      this.directoriesMade = false;
      await this.ensureDirectories();
      return await this.fs.open(temp, "wx", FILE_MODE);
    }
  }

  private async ensureDirectories(): Promise<void> {
    await this.fs.mkdir(this.threadsDir, { recursive: true, mode: DIR_MODE });
    await this.fs.chmod(this.dir, DIR_MODE);
    await this.fs.chmod(this.threadsDir, DIR_MODE);
    this.directoriesMade = true;
  }

  /**
   * Makes a finished rename durable. Saves share directory syncs: a sync that has not started yet covers every rename
   * done before it starts, so a save joins the queued one (or starts one when none runs) and never the one in flight,
   * which may have begun before its rename. Under many concurrent saves that is one open, fsync and close per batch.
   */
  private syncThreadsDirectoryAfterRename(): Promise<void> {
    if (this.directorySyncQueued) return this.directorySyncQueued;
    const running = this.directorySyncRunning;
    if (!running) return this.startDirectorySync();
    const queued = running.then(noop, noop).then(() => {
      this.directorySyncQueued = undefined;
      return this.startDirectorySync();
    });
    this.directorySyncQueued = queued;
    return queued;
  }

  private startDirectorySync(): Promise<void> {
    const running = this.syncDirectory(this.threadsDir).finally(() => {
      if (this.directorySyncRunning === running) this.directorySyncRunning = undefined;
    });
    this.directorySyncRunning = running;
    return running;
  }

  /** Makes the rename itself durable; Windows cannot fsync a directory. */
  private async syncDirectory(dir: string): Promise<void> {
    if (process.platform === "win32") return;
    const handle = await this.fs.open(dir, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close().catch(() => undefined);
    }
  }
}

function noop(): void {}
