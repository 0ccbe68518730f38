// The --help text, generated from the option table so it cannot drift from the parser.
import { CONFIG_FLAG, DEMO_FLAG, OPTION_LIST, type OptionSpec } from "./options.js";

function buildHelpText(): string {
  const width = 36;
  const row = (left: string, right: string): string =>
    left.length < width - 2 ? `  ${left.padEnd(width - 2)}${right}` : `  ${left}\n${" ".repeat(width)}${right}`;
  const detail = (text: string): string => `${" ".repeat(width)}${text}`;
  const sources = (option: OptionSpec): string => {
    const parts = [
      ...(option.env?.length ? [`env ${option.env.join(" or ")}`] : []),
      ...(option.yamlKey ? [`yaml ${option.yamlKey.replaceAll("_", "-")}`] : []),
      `default ${option.defaultText ?? String(option.default)}`,
    ];
    return parts.join(" | ");
  };

  const flagged = OPTION_LIST.filter((o) => o.flag !== undefined);
  const unflagged = OPTION_LIST.filter((o) => o.flag === undefined);
  const lines: string[] = [
    "Usage: agui-gateway [options]",
    "",
    "AG-UI gateway in front of an A2A 1.0 execution kernel (iac-code a2a).",
    "Precedence: command-line flag > environment variable > YAML config file > default.",
    "",
    "Options:",
    row(`${CONFIG_FLAG} PATH`, "YAML config file (keys as below; `-` and `_` are the same)."),
    row(`${DEMO_FLAG}, --no-demo`, "Serve the built-in demo A2A upstream (turns on --console)."),
  ];
  for (const option of flagged) {
    const flag = option.flag ?? "";
    const names =
      option.kind === "boolean"
        ? [option.shortFlag, flag, `--no-${flag.slice(2)}`].filter(Boolean).join(", ")
        : `${flag} ${option.valueName ?? "VALUE"}`;
    lines.push(row(names, option.description), detail(sources(option)));
  }
  lines.push(row("-h, --help", "Show this help and exit."), row("--version", "Print the version and exit."));
  lines.push("", "Settings without a flag:");
  for (const option of unflagged) {
    lines.push(row(option.env?.[0] ?? option.key, option.description), detail(sources(option)));
  }
  lines.push(
    row("IAC_CODE_CONFIG_DIR", "Config root; the default state dir is <root>/agui."),
    detail("default ~/.iac-code"),
    "",
    "Examples:",
    "  agui-gateway --demo",
    "  agui-gateway --a2a-url http://127.0.0.1:41241/ --port 8080",
    "  IAC_CODE_AGUI_AUTH_TOKEN=secret agui-gateway --config ./agui.yaml --interrupt-ttl=0",
  );
  return lines.join("\n") + "\n";
}

export const HELP_TEXT: string = buildHelpText();
