// The option table is the one list of settings: the README's Configuration table and the help text must
// name every entry with its flag, env var, YAML key and default.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { HELP_TEXT } from "../src/config/index.js";
import { OPTION_LIST } from "../src/config/options.js";

const README = readFileSync(path.join(import.meta.dirname, "..", "README.md"), "utf8");
const configurationRows = README.slice(README.indexOf("## Configuration"), README.indexOf("### Limits"))
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

  it("is what the README's Configuration table lists, defaults included", () => {
    expect(configurationRows.length).toBeGreaterThan(10);
    for (const option of OPTION_LIST) {
      const names = [option.flag, option.env?.[0], option.yamlKey?.replaceAll("_", "-")].filter((n) => n !== undefined);
      const row = configurationRows.find((line) => names.every((name) => line.includes(`\`${name}\``)));
      expect(row, `README row for ${names.join(" / ")}`).toBeDefined();
      if (typeof option.default === "number" || typeof option.default === "string") {
        expect(row, option.key).toContain(`\`${option.default}\``);
      }
      if (option.default === false) expect(row, option.key).toContain("off");
    }
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
