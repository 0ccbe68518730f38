// Every ```ts and ```tsx example of README.md and docs/*.md compiles as written, and the ones that need no server run:
// each is written to a folder inside the repository (so node_modules and the package's own name resolve, as in a
// project that depends on agui-gateway) and checked with tsc. CopilotKit examples compile against the @ag-ui/client
// that @copilotkit/runtime itself uses, which is what docs/copilotkit.md tells an app to install. The YAML example of
// docs/configuration.md is loaded by the gateway's own config loader, and docs/protocol.md's request by its validation.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config/index.js";
import { parseRunAgentInput } from "../src/runs/input.js";

const REPO = path.resolve(import.meta.dirname, "..");
const WORK = path.join(REPO, "test", "artifacts", `docs-examples-${process.pid}`);
const DOCS = ["README.md", ...readdirSync(path.join(REPO, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

interface Example {
  file: string;
  lang: "ts" | "tsx" | "yaml";
  code: string;
}

const EXAMPLES: Example[] = DOCS.flatMap((file) =>
  [...readFileSync(path.join(REPO, file), "utf8").matchAll(/^```(ts|tsx|yaml)\n([\s\S]*?)^```$/gm)].map((m) => ({
    file,
    lang: m[1] as Example["lang"],
    code: m[2]!,
  })),
);
const usesCopilotKit = (e: Example) => e.code.includes('from "@copilotkit/');
// A page's code (browser globals) or a server's (it listens until stopped) is compiled here, not run: the browser and
// embedding tests run the real thing.
const runsHere = (e: Example) => !/\b(sessionStorage|localStorage|document|window)\b|\.listen\(/.test(e.code);
const typed = EXAMPLES.filter((e) => e.lang !== "yaml");

function tsc(project: string): string {
  try {
    execFileSync(process.execPath, [path.join(REPO, "node_modules", "typescript", "bin", "tsc"), "-p", project], { cwd: REPO, encoding: "utf8" });
    return "";
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error);
  }
}

/** Writes one tsc project holding `examples` in its own folder. */
function project(name: string, examples: readonly Example[], compilerOptions: Record<string, unknown> = {}): { config: string; files: string[] } {
  const dir = path.join(WORK, name);
  mkdirSync(dir, { recursive: true });
  const files = examples.map((e, i) => {
    const file = path.join(dir, `${path.basename(e.file, ".md")}-${i + 1}.${e.lang}`);
    writeFileSync(file, e.code);
    return file;
  });
  const config = path.join(dir, "tsconfig.json");
  writeFileSync(
    config,
    JSON.stringify({ extends: "../../../../tsconfig.json", compilerOptions: { noEmit: true, rootDir: "../../../..", ...compilerOptions }, include: files, exclude: [] }),
  );
  return { config, files };
}

beforeAll(() => {
  // Examples import agui-gateway/operators and agui-gateway/marbles, which resolve to dist/.
  if (!existsSync(path.join(REPO, "dist", "operators", "index.d.ts"))) {
    execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { cwd: REPO, stdio: "ignore", timeout: 120_000 });
  }
  rmSync(WORK, { recursive: true, force: true });
}, 150_000);

afterAll(() => rmSync(WORK, { recursive: true, force: true }));

describe("the docs' code examples", () => {
  it("are found: the embedding example, the CopilotKit server and page, a YAML file", () => {
    expect(typed.filter((e) => !usesCopilotKit(e)).length).toBeGreaterThanOrEqual(1);
    expect(typed.filter((e) => usesCopilotKit(e) && e.lang === "ts")).toHaveLength(1);
    expect(typed.filter((e) => usesCopilotKit(e) && e.lang === "tsx")).toHaveLength(1);
    expect(EXAMPLES.filter((e) => e.lang === "yaml").length).toBeGreaterThanOrEqual(1);
  });

  it("compile and run as written (library examples)", () => {
    const library = typed.filter((e) => !usesCopilotKit(e));
    const { config, files } = project("library", library, { lib: ["ES2023", "DOM"] });
    expect(tsc(config)).toBe("");
    for (const file of files.filter((_, i) => runsHere(library[i]!))) {
      // Each runs to its end: its assertions hold (a failed one exits non-zero and throws here).
      execFileSync(path.join(REPO, "node_modules", ".bin", "tsx"), [file], { cwd: REPO, encoding: "utf8", timeout: 60_000 });
    }
  }, 120_000);

  it("compile as written against the @ag-ui/client CopilotKit uses (server and page)", () => {
    // The copy @copilotkit/runtime resolves, as an app that installs that version has it at the top.
    const runtimeClient = realpathSync(path.join(REPO, "node_modules", "@copilotkit", "runtime", "node_modules", "@ag-ui", "client", "dist", "index.d.mts"));
    expect(JSON.parse(readFileSync(path.join(runtimeClient, "..", "..", "package.json"), "utf8")).version).toBe("0.0.59");
    const { config } = project("copilotkit", typed.filter(usesCopilotKit), {
      jsx: "react-jsx",
      lib: ["ES2023", "DOM"],
      types: ["node", "react", "react-dom"],
      paths: { "@ag-ui/client": [runtimeClient] },
    });
    expect(tsc(config)).toBe("");
  }, 120_000);

  it("the YAML file is one the gateway loads", () => {
    for (const example of EXAMPLES.filter((e) => e.lang === "yaml" && e.file === "docs/configuration.md")) {
      const { files } = project("yaml", [example]);
      const result = loadConfig(["--config", files[0]!], {});
      expect(result.kind).toBe("config");
    }
  });

  it("the request of docs/protocol.md passes the gateway's validation", () => {
    const protocol = readFileSync(path.join(REPO, "docs", "protocol.md"), "utf8");
    const requests = [...protocol.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((m) => JSON.parse(m[1]!) as Record<string, unknown>);
    expect(requests.length).toBeGreaterThanOrEqual(1);
    for (const request of requests) expect(parseRunAgentInput(request).iacCode.cwd).toMatch(/^\//);
  });
});
