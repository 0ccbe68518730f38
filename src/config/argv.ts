// The command line: flags from the option table plus --config, --demo, --help and --version.
import { ConfigError } from "./errors.js";
import { CONFIG_FLAG, DEMO_FLAG, OPTION_LIST, type OptionKey, type OptionSpec } from "./options.js";
import { parseBooleanWord, type FlagValue } from "./sources.js";

export type ParsedArgv =
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "args"; flagValues: Map<OptionKey, FlagValue>; configPath?: string; demo: boolean };

type FlagTarget =
  | { type: "option"; option: OptionSpec & { key: OptionKey }; negated: boolean }
  | { type: "config" }
  | { type: "demo"; negated: boolean }
  | { type: "help" }
  | { type: "version" };

const FLAG_TARGETS: ReadonlyMap<string, FlagTarget> = buildFlagTargets();

function buildFlagTargets(): Map<string, FlagTarget> {
  const targets = new Map<string, FlagTarget>([
    ["--help", { type: "help" }],
    ["-h", { type: "help" }],
    ["--version", { type: "version" }],
    [CONFIG_FLAG, { type: "config" }],
    [DEMO_FLAG, { type: "demo", negated: false }],
    ["--no-demo", { type: "demo", negated: true }],
  ]);
  for (const option of OPTION_LIST) {
    if (option.flag === undefined) continue;
    targets.set(option.flag, { type: "option", option, negated: false });
    if (option.shortFlag !== undefined) targets.set(option.shortFlag, { type: "option", option, negated: false });
    if (option.kind === "boolean") {
      targets.set(`--no-${option.flag.slice(2)}`, { type: "option", option, negated: true });
    }
  }
  return targets;
}

/** `argv` holds the user's arguments only; --help and --version win over everything before them. */
export function parseArgv(argv: readonly string[]): ParsedArgv {
  const flagValues = new Map<OptionKey, FlagValue>();
  let configPath: string | undefined;
  let demo = false;

  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index] ?? "";
    if (!arg.startsWith("-") || arg === "-" || arg === "--") {
      throw new ConfigError(`Unexpected argument ${arg}. See --help.`);
    }
    const equals = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const name = equals === -1 ? arg : arg.slice(0, equals);
    const inlineValue = equals === -1 ? undefined : arg.slice(equals + 1);
    const target = FLAG_TARGETS.get(name);
    if (target === undefined) throw new ConfigError(`Unknown option ${name}. See --help.`);

    const takesValue =
      target.type === "config" || (target.type === "option" && target.option.kind !== "boolean");
    if (!takesValue) {
      const negated = (target.type === "option" || target.type === "demo") && target.negated;
      if (inlineValue !== undefined && (negated || target.type === "help" || target.type === "version")) {
        throw new ConfigError(`${name} does not take a value. See --help.`);
      }
      if (target.type === "help" || target.type === "version") return { kind: target.type };
      const flagValue = inlineValue === undefined ? !negated : parseBooleanWord(inlineValue, name);
      if (target.type === "demo") demo = flagValue;
      else if (target.type === "option") flagValues.set(target.option.key, { raw: flagValue, label: name });
      continue;
    }

    let value = inlineValue;
    if (value === undefined) {
      const next = argv[index + 1];
      // "-5" is a value (so the range check can report it); "--port" or "-d" is the next flag.
      if (next === undefined || (next.startsWith("-") && !/^-\d|^-\.\d/.test(next))) {
        throw new ConfigError(`Missing value for ${name}. See --help.`);
      }
      value = next;
      index++;
    }
    if (target.type === "config") {
      if (value === "") throw new ConfigError(`${CONFIG_FLAG} must be a non-empty path.`);
      configPath = value;
    } else if (target.type === "option") {
      flagValues.set(target.option.key, { raw: value, label: target.option.flag ?? name });
    }
  }
  return { kind: "args", flagValues, ...(configPath === undefined ? {} : { configPath }), demo };
}
