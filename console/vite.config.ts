// Builds the console into dist/console: one HTML, one JS, one CSS, everything bundled (no CDN).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root,
  // The gateway serves the page at /console and its files at /console/assets/*.
  base: "/console/",
  publicDir: false,
  // One zod for the page (@ag-ui/client would bring a second copy of its own), so no-eval.ts reaches every schema.
  resolve: { dedupe: ["zod"] },
  logLevel: "warn",
  build: {
    outDir: fileURLToPath(new URL("../dist/console", import.meta.url)),
    emptyOutDir: true,
    assetsDir: "assets",
    target: "es2022",
    sourcemap: false,
    modulePreload: { polyfill: false },
    // Nothing is fetched at run time except the gateway itself: no inlined data: fonts either.
    assetsInlineLimit: 0,
  },
});
