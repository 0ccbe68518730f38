// `npm run test:interop`: the gateway (and the reference Python adapter) against the REAL `iac-code a2a`
// kernel. globalSetup installs the pinned package into test/interop/.venv once; the files run one at a
// time because each starts its own kernel process and the machine has two cores.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/interop/**/*.test.ts"],
    globalSetup: ["test/interop/setup.ts"],
    pool: "forks",
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 90_000,
  },
});
