import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["marbles/**/*.spec.ts", "test/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: "forks",
  },
});
