// The option table is the one list of settings: the Options table of docs/configuration.md and the help text must
// name every entry with its flag (and its short and --no- forms), every env var, its YAML key and default.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { HELP_TEXT } from "../src/config/index.js";
import { OPTION_LIST } from "../src/config/options.js";

const CONFIGURATION = readFileSync(path.join(import.meta.dirname, "..", "docs", "configuration.md"), "utf8");
const configurationRows = CONFIGURATION.slice(CONFIGURATION.indexOf("## Options"), CONFIGURATION.indexOf("## Limits"))
  .split("\n")
  .filter((line) => line.startsWith("| `") || line.startsWith("| –"));

describe("the option table", () => {
  it("gives every option a distinct key, flag, env var and YAML key", () => {
    const names = OPTION_LIST.flatMap((o) => [o.flag, o.shortFlag, ...(o.env ?? []), o.yamlKey].filter((n) => n !== undefined));
    expect(new Set(names).size).toBe(names.length);
    for (const option of OPTION_LIST) {
      expect(option.flag ?? option.env?.[0], option.key).toBeDefined();
      expect(option.yamlKey, option.key).toBeDefined();
      if (option.flag !== undefined && option.kind !== "boolean") expect(option.valueName, option.key).toBeDefined();
      // A default the schema refuses would make every run without that setting fail.
      if (option.default !== undefined) expect(option.schema.safeParse(option.default).success, option.key).toBe(true);
      expect(option.default !== undefined || option.defaultText !== undefined, option.key).toBe(true);
    }
  });

  it("is what the Options table of docs/configuration.md lists, defaults included", () => {
    expect(configurationRows.length).toBeGreaterThan(10);
    for (const option of OPTION_LIST) {
      const names = [
        option.flag,
        option.shortFlag,
        option.kind === "boolean" && option.flag !== undefined ? `--no-${option.flag.slice(2)}` : undefined,
        ...(option.env ?? []),
        option.yamlKey?.replaceAll("_", "-"),
      ].filter((n) => n !== undefined);
      const row = configurationRows.find((line) => names.every((name) => line.includes(`\`${name}\``)));
      expect(row, `docs/configuration.md row for ${names.join(" / ")}`).toBeDefined();
      if (typeof option.default === "number" || typeof option.default === "string") {
        expect(row, option.key).toContain(`\`${option.default}\``);
      }
      if (option.default === false) expect(row, option.key).toContain("off");
    }
  });

  it("lists the flags --help shows that are not settings", () => {
    for (const flag of ["--config", "--demo", "--no-demo", "--help", "-h", "--version"]) {
      expect(HELP_TEXT, flag).toContain(flag);
      expect(configurationRows.some((line) => line.includes(`\`${flag}`)), flag).toBe(true);
    }
    expect(configurationRows.some((line) => line.includes("`IAC_CODE_CONFIG_DIR`"))).toBe(true);
  });

  it("shows each option's sources and default in --help", () => {
    for (const option of OPTION_LIST) {
      const shown = `default ${option.defaultText ?? String(option.default)}`;
      const line = HELP_TEXT.split("\n").find((l) => l.includes(shown) && (option.yamlKey === undefined || l.includes(`yaml ${option.yamlKey.replaceAll("_", "-")}`)));
      expect(line, option.key).toBeDefined();
      for (const env of option.env ?? []) expect(line, option.key).toContain(env);
    }
  });
});
