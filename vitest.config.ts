import { defineConfig } from "vitest/config";

// The interrupt/resume e2e files run twice: once with the demo kernel at 0 ms between frames, once at
// its shipped 10–40 ms rhythm (test/helpers/pacing.ts), where answers race the kernel's turn as they do
// for a user. Only those files: the others' demo turns carry no interrupt and would just take longer.
const SHIPPED_PACING_FILES = ["test/e2e-resume.test.ts", "test/e2e-pipeline.test.ts"];

// Files that time the gateway under a flood (/health within 1 s while 100 bodies upload): they run after every
// other file, alone, so the replica suites' processes do not share the 2 cores with them.
const LOAD_TIMED_FILES = ["test/flood.test.ts"];

// The Redis state-store tests start real redis-servers; this setup makes sure the binary exists (issue #17).
const REDIS_GLOBAL_SETUP = "test/helpers/redis-global-setup.ts";

export default defineConfig({
  test: {
    // The real-kernel suite installs Python packages: `npm run test:interop` (and .ci/run) runs it on its own.
    exclude: ["test/interop/**", "node_modules/**"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // expect.poll waits up to 1 s by default: too short for a browser turn on a loaded 2-core machine.
    expect: { poll: { timeout: 10_000 } },
    pool: "forks",
    // @copilotkit/react-core's entry imports its stylesheet: run it through vite (CSS becomes an empty module).
    server: { deps: { inline: [/@copilotkit\/react-core/] } },
    projects: [
      {
        extends: true,
        test: {
          name: "default",
          include: ["marbles/**/*.spec.ts", "test/**/*.test.ts", "examples/**/*.test.ts"],
          exclude: ["test/interop/**", "node_modules/**", ...LOAD_TIMED_FILES],
          globalSetup: [REDIS_GLOBAL_SETUP],
        },
      },
      {
        extends: true,
        test: { name: "load-timed", include: LOAD_TIMED_FILES, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: { name: "shipped-pacing", include: SHIPPED_PACING_FILES, env: { AGUI_E2E_DEMO_PACING: "shipped" } },
      },
    ],
  },
});
