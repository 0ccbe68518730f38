// Vitest global setup: the Redis store tests need a real redis-server. A machine without one gets it from apt
// when the tests run as root (a fresh CI container); otherwise the run stops here with what to install. The tests
// are never skipped: a green run must mean the Redis store was tested.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const INSTALLER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../.ci/install-redis-server");

function hasRedisServer(): boolean {
  return spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
}

export default function setup(): void {
  if (hasRedisServer()) return;
  const canInstall = process.getuid?.() === 0 && spawnSync("apt-get", ["--version"], { stdio: "ignore" }).status === 0;
  if (canInstall) {
    console.log("[redis] redis-server is not on PATH: installing Debian's redis-server with apt-get");
    const result = spawnSync("bash", [INSTALLER], { encoding: "utf8" });
    if (result.status !== 0) console.error(`${result.stdout ?? ""}${result.stderr ?? ""}`.trim().split("\n").slice(-20).join("\n"));
  }
  if (!hasRedisServer()) {
    throw new Error(
      "redis-server is not on PATH and could not be installed: the Redis state-store tests need it " +
        "(Debian/Ubuntu: `apt-get install redis-server`, or run .ci/install-redis-server as root).",
    );
  }
}
