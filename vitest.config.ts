import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["marbles/**/*.spec.ts", "test/**/*.test.ts", "examples/**/*.test.ts"],
    // The real-kernel suite installs Python packages: `npm run test:interop` (and .ci/run) runs it on its own.
    exclude: ["test/interop/**", "node_modules/**"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: "forks",
  },
});
