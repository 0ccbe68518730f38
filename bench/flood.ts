// `npx tsx bench/flood.ts`: issue 14's client-side targets at full size, against a real gateway process started
// like `npm start` (default settings). Prints its figures; exits 1 when a target is missed.
//   A. 100 concurrent 11 MiB bodies at loopback speed      → RSS < 700 MB, /health < 1 s, every request answered
//   B. 200 concurrent 11 MiB bodies at 1 MB/s each          → the same
//   C. 2,000 bodies trickled at one byte every 5 s          → all cut within a minute, /health < 1 s meanwhile
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { bigJson, pollHealth, upload } from "../test/helpers/flood.js";
import { ensureCliBuilt } from "../test/helpers/durable.js";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const MiB = 1024 * 1024;
let failed = false;

async function main(): Promise<void> {
  ensureCliBuilt();
  const root = await mkdtemp(path.join(tmpdir(), "agui-bench-flood-"));
  await mkdir(path.join(root, "ws"));
  const child = spawn(
    process.execPath,
    ["--max-semi-space-size=2", "--heap-growing-percent=20", path.join(REPO, "dist", "src", "cli.js"), "--demo", "--port", "0", "--state-dir", path.join(root, "state")],
    { cwd: root, stdio: ["ignore", "pipe", "ignore"] },
  );
  const url = await new Promise<string>((resolve) => {
    let out = "";
    child.stdout!.on("data", (c: Buffer) => {
      out += c.toString("utf8");
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
  });
  const rss = async () => Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0) * 1024;
  try {
    for (const [name, count, pace] of [
      ["A: 100 × 11 MiB, full speed", 100, {}],
      ["B: 200 × 11 MiB, 1 MB/s each", 200, { chunk: 64 * 1024, everyMs: 64 }],
    ] as const) {
      let maxRss = await rss();
      let running = true;
      const watch = (async () => {
        while (running) {
          maxRss = Math.max(maxRss, await rss());
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      const health = pollHealth(new URL("/health", url).href);
      const started = Date.now();
      const replies = await Promise.all(Array.from({ length: count }, () => upload(url, bigJson(11 * MiB), pace)));
      const seconds = (Date.now() - started) / 1000;
      running = false;
      await watch;
      const h = await health.stop();
      const answers = new Map<string, number>();
      for (const r of replies) {
        const key = r instanceof Error ? `error ${(r as NodeJS.ErrnoException).code ?? r.message}` : `${r.status} ${r.json?.error?.code ?? ""}`;
        answers.set(key, (answers.get(key) ?? 0) + 1);
      }
      const ok = maxRss < 700 * MiB && h.maxMs < 1_000 && h.failures === 0 && [...answers.keys()].every((k) => !k.startsWith("error"));
      failed ||= !ok;
      console.log(
        `${name}: ${seconds.toFixed(1)} s, max RSS ${(maxRss / MiB).toFixed(0)} MiB, /health max ${h.maxMs} ms over ${h.samples} samples (${h.failures} failed), answers ${JSON.stringify(Object.fromEntries(answers))} ${ok ? "OK" : "MISSED"}`,
      );
    }

    // C: tricklers. Each sends its headers and then one byte every 5 s of a 100-byte body.
    const port = Number(new URL(url).port);
    const health = pollHealth(new URL("/health", url).href);
    const started = Date.now();
    const closedAt: number[] = [];
    const sockets = Array.from({ length: 2_000 }, () => {
      const socket = connect(port, "127.0.0.1");
      socket.on("error", () => undefined);
      socket.on("close", () => closedAt.push(Date.now() - started));
      socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{");
      return socket;
    });
    const trickle = setInterval(() => {
      for (const s of sockets) if (!s.destroyed) s.write(" ");
    }, 5_000);
    while (closedAt.length < sockets.length && Date.now() - started < 90_000) await new Promise((r) => setTimeout(r, 250));
    clearInterval(trickle);
    for (const s of sockets) s.destroy();
    const h = await health.stop();
    const last = Math.max(...closedAt);
    const ok = closedAt.length === sockets.length && last < 60_000 && h.maxMs < 1_000 && h.failures === 0;
    failed ||= !ok;
    console.log(
      `C: 2,000 trickled bodies: ${closedAt.length} cut, the last after ${(last / 1000).toFixed(1)} s; /health max ${h.maxMs} ms over ${h.samples} samples (${h.failures} failed), RSS ${((await rss()) / MiB).toFixed(0)} MiB ${ok ? "OK" : "MISSED"}`,
    );
  } finally {
    child.kill("SIGKILL");
    await rm(root, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(failed ? 1 : 0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
