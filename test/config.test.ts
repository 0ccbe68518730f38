import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, HELP_TEXT, loadConfig, type GatewayConfig } from "../src/config/index.js";

const HOME = path.resolve("/home/tester");
let dir: string;
let fileCounter = 0;

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "agui-config-test-"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function yamlFile(text: string | Buffer): string {
  const file = path.join(dir, `config-${++fileCounter}.yaml`);
  writeFileSync(file, text);
  return file;
}

function config(argv: readonly string[], env: NodeJS.ProcessEnv = {}): GatewayConfig {
  const result = loadConfig(argv, env, HOME);
  if (result.kind !== "config") throw new Error(`expected a config, got ${result.kind}`);
  return result.config;
}

/** The ConfigError message `loadConfig` throws; fails the test when it does not throw one. */
function errorOf(argv: readonly string[], env: NodeJS.ProcessEnv = {}): string {
  try {
    loadConfig(argv, env, HOME);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).not.toContain("\n");
    return message;
  }
  throw new Error("expected a ConfigError");
}

const AUTH_DEFAULTS = {
  authJwtAlgorithms: "RS256,RS384,RS512,PS256,PS384,PS512,ES256,ES384,ES512,EdDSA,Ed25519",
  authJwtClockToleranceSeconds: 30,
  authUserClaim: "sub",
  maxActiveRunsPerUser: 0,
  userRequestLimit: 0,
  userRequestIntervalSeconds: 60,
};

describe("defaults", () => {
  it("fills every option with its default", () => {
    expect(config([])).toEqual({
      host: "127.0.0.1",
      port: 41243,
      stateDir: path.join(HOME, ".iac-code", "agui"),
      demo: false,
      leaseTtlSeconds: 30,
      interruptTtlSeconds: 540,
      idleShutdownSeconds: 0,
      heartbeatSeconds: 15,
      upstreamIdleTimeoutSeconds: 0,
      a2aHttp2: false,
      validateEvents: false,
      console: false,
      debug: false,
      logStdout: false,
      runIdWindow: 256,
      reconnectGraceSeconds: 0,
      replayEvents: 10_000,
      replayMib: 4,
      replayRetentionSeconds: 60,
      replayBudgetMib: 256,
      historyMessages: 200,
      bodyBudgetMib: 64,
      bodyTimeoutSeconds: 30,
      headersTimeoutSeconds: 20,
      keepAliveTimeoutSeconds: 5,
      maxConnections: 16_384,
      ...AUTH_DEFAULTS,
    });
    const keys = Object.keys(config([]));
    for (const unset of ["a2aUrl", "a2aToken", "authToken", "configFile", "allowedCwds", "stateStore", "redisPassword"]) {
      expect(keys).not.toContain(unset);
    }
  });

  it("uses os.homedir() when no home directory is passed", () => {
    const result = loadConfig([], {});
    expect(result.kind === "config" && result.config.stateDir).toBe(path.join(os.homedir(), ".iac-code", "agui"));
  });

  it("puts the default state dir under IAC_CODE_CONFIG_DIR", () => {
    expect(config([], { IAC_CODE_CONFIG_DIR: "/etc/iac" }).stateDir).toBe(path.resolve("/etc/iac/agui"));
    expect(config([], { IAC_CODE_CONFIG_DIR: "~/conf" }).stateDir).toBe(path.join(HOME, "conf", "agui"));
    expect(config([], { IAC_CODE_CONFIG_DIR: "" }).stateDir).toBe(path.join(HOME, ".iac-code", "agui"));
    // An explicit state dir wins over the config root.
    expect(config(["--state-dir", "/srv/state"], { IAC_CODE_CONFIG_DIR: "/etc/iac" }).stateDir).toBe(
      path.resolve("/srv/state"),
    );
  });

  it("turns the console on with --demo unless told otherwise", () => {
    expect(config(["--demo"])).toMatchObject({ demo: true, console: true });
    expect(config(["--demo", "--no-console"])).toMatchObject({ demo: true, console: false });
    expect(config(["--demo", "--config", yamlFile("console: false\n")])).toMatchObject({ console: false });
    expect(config(["--console"])).toMatchObject({ demo: false, console: true });
  });
});

describe("flags", () => {
  it("reads every flag in `--flag value` form", () => {
    const c = config([
      "--host", "0.0.0.0", "--port", "8080", "--a2a-url", "http://127.0.0.1:9/", "--state-dir", "/s",
      "--interrupt-ttl", "60", "--idle-shutdown", "2.5", "--heartbeat", "0.05", "--upstream-idle-timeout", "30",
      "--validate-events", "--console", "--debug", "--log-stdout", "--demo",
      "--run-id-window", "16", "--body-budget", "12", "--body-timeout", "2", "--headers-timeout", "3",
      "--reconnect-grace", "2.5", "--replay-events", "50", "--replay-mib", "2", "--replay-retention", "9", "--replay-budget", "32", "--history-messages", "7",
      "--keep-alive-timeout", "4", "--max-connections", "100",
      "--state-store", "redis://127.0.0.1:6390/2", "--lease-ttl", "5",
    ]);
    expect(c).toEqual({
      host: "0.0.0.0",
      port: 8080,
      a2aUrl: "http://127.0.0.1:9/",
      stateDir: path.resolve("/s"),
      stateStore: "redis://127.0.0.1:6390/2",
      leaseTtlSeconds: 5,
      demo: true,
      interruptTtlSeconds: 60,
      idleShutdownSeconds: 2.5,
      heartbeatSeconds: 0.05,
      upstreamIdleTimeoutSeconds: 30,
      a2aHttp2: false,
      validateEvents: true,
      console: true,
      debug: true,
      logStdout: true,
      runIdWindow: 16,
      reconnectGraceSeconds: 2.5,
      replayEvents: 50,
      replayMib: 2,
      replayRetentionSeconds: 9,
      replayBudgetMib: 32,
      historyMessages: 7,
      bodyBudgetMib: 12,
      bodyTimeoutSeconds: 2,
      headersTimeoutSeconds: 3,
      keepAliveTimeoutSeconds: 4,
      maxConnections: 100,
      ...AUTH_DEFAULTS,
    });
  });

  it("refuses client-side budgets that cannot work", () => {
    expect(() => config(["--body-budget", "11"])).toThrow("--body-budget must be an integer of at least 12.");
    expect(() => config(["--run-id-window", "0"])).toThrow("--run-id-window must be a positive integer.");
    expect(() => config(["--max-connections", "1.5"])).toThrow("--max-connections must be a positive integer.");
    expect(() => config(["--body-timeout", "0"])).toThrow("--body-timeout must be a positive number of seconds.");
    expect(() => config([], { IAC_CODE_AGUI_HEADERS_TIMEOUT: "x" })).toThrow("IAC_CODE_AGUI_HEADERS_TIMEOUT must be a positive number of seconds.");
  });

  it("reads `--flag=value`, including values that contain `=` or are empty", () => {
    const c = config(["--port=0", "--host=::1", "--a2a-url=http://127.0.0.1:1/?a=b", "--interrupt-ttl=0"]);
    expect(c).toMatchObject({ port: 0, host: "::1", a2aUrl: "http://127.0.0.1:1/?a=b", interruptTtlSeconds: 0 });
    expect(config(["--a2a-url="]).a2aUrl).toBeUndefined();
    expect(config(["--debug=false", "--log-stdout=yes"])).toMatchObject({ debug: false, logStdout: true });
  });

  it("accepts -d and --no- forms, the last occurrence winning", () => {
    expect(config(["-d"]).debug).toBe(true);
    expect(config(["--log-stdout", "--no-log-stdout"]).logStdout).toBe(false);
    expect(config(["--port", "1", "--port", "2"]).port).toBe(2);
  });

  it("resolves relative and ~ paths", () => {
    expect(config(["--state-dir", "rel/state"]).stateDir).toBe(path.resolve(process.cwd(), "rel/state"));
    expect(config(["--state-dir", "~"]).stateDir).toBe(HOME);
    expect(config(["--state-dir", "~/s"]).stateDir).toBe(path.join(HOME, "s"));
    expect(config(["--state-dir", ""]).stateDir).toBe(path.join(HOME, ".iac-code", "agui"));
    const file = yamlFile("");
    const relative = path.relative(process.cwd(), file);
    expect(config(["--config", relative]).configFile).toBe(file);
  });

  it("answers --help, -h and --version without building a config", () => {
    expect(loadConfig(["--port", "1", "--help"], {})).toEqual({ kind: "help", text: HELP_TEXT });
    expect(loadConfig(["-h"], {})).toEqual({ kind: "help", text: HELP_TEXT });
    expect(loadConfig(["--version"], {})).toEqual({ kind: "version" });
    // Help must not be blocked by a bad env value: it is answered before anything is validated.
    expect(loadConfig(["--help"], { IAC_CODE_AGUI_PORT: "nope" }).kind).toBe("help");
  });

  it("rejects unknown options, missing values and stray arguments", () => {
    expect(errorOf(["--xyz"])).toBe("Unknown option --xyz. See --help.");
    expect(errorOf(["--xyz=1"])).toBe("Unknown option --xyz. See --help.");
    expect(errorOf(["-x"])).toBe("Unknown option -x. See --help.");
    expect(errorOf(["--a2a-token", "t"])).toBe("Unknown option --a2a-token. See --help.");
    expect(errorOf(["--port"])).toBe("Missing value for --port. See --help.");
    expect(errorOf(["--host", "--debug"])).toBe("Missing value for --host. See --help.");
    expect(errorOf(["--config"])).toBe("Missing value for --config. See --help.");
    expect(errorOf(["serve"])).toBe("Unexpected argument serve. See --help.");
    expect(errorOf(["--debug", "true"])).toBe("Unexpected argument true. See --help.");
    expect(errorOf(["--no-debug=1"])).toBe("--no-debug does not take a value. See --help.");
    expect(errorOf(["--debug=maybe"])).toBe("--debug must be one of 1, true, yes, on, 0, false, no, off.");
    expect(errorOf(["--config="])).toBe("--config must be a non-empty path.");
  });
});

describe("environment", () => {
  it("reads every env variable", () => {
    const c = config([], {
      IAC_CODE_AGUI_HOST: "127.0.0.2",
      IAC_CODE_AGUI_PORT: "9000",
      IAC_CODE_AGUI_A2A_URL: "http://localhost:1/",
      IAC_CODE_AGUI_A2A_TOKEN: "a2a-secret",
      IAC_CODE_AGUI_AUTH_TOKEN: "client-secret",
      IAC_CODE_AGUI_STATE_DIR: "/var/agui",
      IAC_CODE_AGUI_INTERRUPT_TTL: "1.5",
      IAC_CODE_AGUI_IDLE_SHUTDOWN: "10",
      IAC_CODE_AGUI_HEARTBEAT: "3",
      IAC_CODE_AGUI_UPSTREAM_IDLE_TIMEOUT: "120",
      IAC_CODE_AGUI_ALLOWED_CWDS: ["/w/one", "", "~/two"].join(path.delimiter),
      IAC_CODE_AGUI_VALIDATE_EVENTS: "1",
    });
    expect(c).toMatchObject({
      host: "127.0.0.2",
      port: 9000,
      a2aUrl: "http://localhost:1/",
      a2aToken: "a2a-secret",
      authToken: "client-secret",
      stateDir: path.resolve("/var/agui"),
      interruptTtlSeconds: 1.5,
      idleShutdownSeconds: 10,
      heartbeatSeconds: 3,
      upstreamIdleTimeoutSeconds: 120,
      allowedCwds: [path.resolve("/w/one"), path.join(HOME, "two")],
      validateEvents: true,
    });
  });

  it("parses boolean words case-insensitively and rejects others", () => {
    for (const word of ["1", "true", "YES", "On"]) {
      expect(config([], { IAC_CODE_AGUI_VALIDATE_EVENTS: word }).validateEvents).toBe(true);
    }
    for (const word of ["0", "FALSE", "no", "off"]) {
      expect(config([], { IAC_CODE_AGUI_VALIDATE_EVENTS: word }).validateEvents).toBe(false);
    }
    expect(errorOf([], { IAC_CODE_AGUI_VALIDATE_EVENTS: "sometimes" })).toBe(
      "IAC_CODE_AGUI_VALIDATE_EVENTS must be one of 1, true, yes, on, 0, false, no, off.",
    );
  });

  it("treats empty variables as unset", () => {
    const file = yamlFile("port: 7000\nauth-token: from-yaml\n");
    const c = config(["--config", file], { IAC_CODE_AGUI_PORT: "", IAC_CODE_AGUI_AUTH_TOKEN: "" });
    expect(c.port).toBe(7000);
    expect(c.authToken).toBe("from-yaml");
  });

  it("falls back to IACCODE_A2A_ALLOWED_CWDS, and skips a list with no entries", () => {
    expect(config([], { IACCODE_A2A_ALLOWED_CWDS: "/k" }).allowedCwds).toEqual([path.resolve("/k")]);
    expect(
      config([], { IAC_CODE_AGUI_ALLOWED_CWDS: "/a", IACCODE_A2A_ALLOWED_CWDS: "/k" }).allowedCwds,
    ).toEqual([path.resolve("/a")]);
    expect(config([], { IAC_CODE_AGUI_ALLOWED_CWDS: path.delimiter }).allowedCwds).toBeUndefined();
  });
});

describe("YAML file", () => {
  it("reads every key, in either spelling", () => {
    const file = yamlFile(
      [
        "host: 10.0.0.1",
        "port: 8001",
        "a2a_url: http://127.0.0.1:5/",
        "a2a-token: yt",
        "auth_token: ya",
        "state-dir: ~/yaml-state",
        "interrupt-ttl: 0",
        "idle_shutdown: 4",
        "heartbeat: 0.5",
        "upstream-idle-timeout: 9",
        "a2a-http2: true",
        "allowed-cwds: [/r1, rel]",
        "validate-events: true",
        "console: true",
        "debug: true",
        "log_stdout: true",
        "run-id-window: 32",
        "reconnect_grace: 20",
        "replay-events: 500",
        "replay_mib: 8",
        "replay-retention: 120",
        "replay_budget: 64",
        "history-messages: 70",
        "body_budget: 128",
        "body-timeout: 10",
        "headers_timeout: 5",
        "keep-alive-timeout: 2",
        "max_connections: 50",
        "state-store: rediss://cache.internal:6380",
        "redis_password: yp",
        "lease-ttl: 12",
        "auth-jwks-url: https://issuer.example/jwks.json",
        "auth_jwt_issuer: https://issuer.example/",
        "auth-jwt-audience: agui",
        "auth-jwt-algorithms: ES256",
        "auth_jwt_clock_tolerance: 5",
        "auth-user-claim: email",
        "max-active-runs-per-user: 2",
        "user_request_limit: 100",
        "user-request-interval: 10",
      ].join("\n"),
    );
    expect(config(["--config", file])).toEqual({
      host: "10.0.0.1",
      port: 8001,
      a2aUrl: "http://127.0.0.1:5/",
      a2aToken: "yt",
      authToken: "ya",
      stateDir: path.join(HOME, "yaml-state"),
      configFile: file,
      stateStore: "rediss://cache.internal:6380",
      redisPassword: "yp",
      leaseTtlSeconds: 12,
      authJwksUrl: "https://issuer.example/jwks.json",
      authJwtIssuer: "https://issuer.example/",
      authJwtAudience: "agui",
      authJwtAlgorithms: "ES256",
      authJwtClockToleranceSeconds: 5,
      authUserClaim: "email",
      maxActiveRunsPerUser: 2,
      userRequestLimit: 100,
      userRequestIntervalSeconds: 10,
      demo: false,
      interruptTtlSeconds: 0,
      idleShutdownSeconds: 4,
      heartbeatSeconds: 0.5,
      upstreamIdleTimeoutSeconds: 9,
      a2aHttp2: true,
      allowedCwds: [path.resolve("/r1"), path.resolve(process.cwd(), "rel")],
      validateEvents: true,
      console: true,
      debug: true,
      logStdout: true,
      runIdWindow: 32,
      reconnectGraceSeconds: 20,
      replayEvents: 500,
      replayMib: 8,
      replayRetentionSeconds: 120,
      replayBudgetMib: 64,
      historyMessages: 70,
      bodyBudgetMib: 128,
      bodyTimeoutSeconds: 10,
      headersTimeoutSeconds: 5,
      keepAliveTimeoutSeconds: 2,
      maxConnections: 50,
    });
  });

  it("treats an empty document, a comment-only document and null values as nothing set", () => {
    expect(config(["--config", yamlFile("")]).port).toBe(41243);
    expect(config(["--config", yamlFile("# nothing here\n")]).port).toBe(41243);
    expect(config(["--config", yamlFile("port:\nhost: ~\n")])).toMatchObject({ port: 41243, host: "127.0.0.1" });
  });

  it("skips a UTF-8 byte-order mark", () => {
    expect(config(["--config", yamlFile(Buffer.from("\uFEFFport: 1234\n", "utf8"))]).port).toBe(1234);
  });

  it("maps empty tokens and URL to undefined (auth disabled, managed upstream)", () => {
    const c = config(["--config", yamlFile('auth-token: ""\na2a-token: ""\na2a-url: ""\n')]);
    expect(c.authToken).toBeUndefined();
    expect(c.a2aToken).toBeUndefined();
    expect(c.a2aUrl).toBeUndefined();
  });

  it("reports files it cannot load", () => {
    const missing = path.join(dir, "does-not-exist.yaml");
    expect(errorOf(["--config", missing])).toBe(`Unable to load the AG-UI config file: ${missing}`);
    const invalid = yamlFile("port: [1, 2\n");
    expect(errorOf(["--config", invalid])).toBe(`Unable to load the AG-UI config file: ${invalid}`);
    const twoDocs = yamlFile("port: 1\n---\nport: 2\n");
    expect(errorOf(["--config", twoDocs])).toBe(`Unable to load the AG-UI config file: ${twoDocs}`);
    const duplicated = yamlFile("port: 1\nport: 2\n");
    expect(errorOf(["--config", duplicated])).toBe(`Unable to load the AG-UI config file: ${duplicated}`);
    const notUtf8 = yamlFile(Buffer.from([0x68, 0x6f, 0x73, 0x74, 0x3a, 0x20, 0xff, 0xfe, 0x0a]));
    expect(errorOf(["--config", notUtf8])).toBe(`Unable to load the AG-UI config file: ${notUtf8}`);
    // A directory cannot be read as a file (EISDIR); this holds even when the tests run as root,
    // where permission bits would not stop the read.
    expect(errorOf(["--config", dir])).toBe(`Unable to load the AG-UI config file: ${dir}`);
  });

  it("keeps the underlying reason as the error's cause", () => {
    const missing = path.join(dir, "also-missing.yaml");
    try {
      loadConfig(["--config", missing], {}, HOME);
      expect.unreachable();
    } catch (error) {
      expect((error as Error & { cause?: { code?: string } }).cause?.code).toBe("ENOENT");
    }
  });

  it("requires a mapping", () => {
    for (const text of ["- port\n- host\n", "just a string\n", "42\n", "!!set {a, b}\n"]) {
      expect(errorOf(["--config", yamlFile(text)])).toBe("AG-UI config file must contain a YAML mapping.");
    }
  });

  it("rejects unknown keys, naming them as written", () => {
    expect(errorOf(["--config", yamlFile("port: 1\nhots: x\n")])).toBe("Unknown key in the AG-UI config file: hots");
    expect(errorOf(["--config", yamlFile("a2a-urll: x\n")])).toBe("Unknown key in the AG-UI config file: a2a-urll");
    // Removed in the reference but not here; `demo` and `config` are flags only.
    expect(errorOf(["--config", yamlFile("demo: true\n")])).toBe("Unknown key in the AG-UI config file: demo");
  });

  it("rejects a key written in both spellings", () => {
    expect(errorOf(["--config", yamlFile("a2a-url: x\na2a_url: y\n")])).toBe(
      "Duplicate key in the AG-UI config file: a2a_url",
    );
  });

  it("keeps YAML types: strings and booleans are not numbers", () => {
    expect(errorOf(["--config", yamlFile('port: "8000"\n')])).toBe(
      "port in the AG-UI config file must be an integer between 0 and 65535.",
    );
    expect(errorOf(["--config", yamlFile("interrupt-ttl: true\n")])).toBe(
      "interrupt-ttl in the AG-UI config file must be a non-negative number of seconds.",
    );
    expect(errorOf(["--config", yamlFile("debug: yes\n")])).toBe("debug in the AG-UI config file must be true or false.");
    expect(errorOf(["--config", yamlFile("a2a-url: 5\n")])).toBe("a2a-url in the AG-UI config file must be a string.");
    expect(errorOf(["--config", yamlFile("a2a_url: {a: 1}\n")])).toBe(
      "a2a-url in the AG-UI config file must be a string.",
    );
    expect(errorOf(["--config", yamlFile("auth-token: 123\n")])).toBe(
      "auth-token in the AG-UI config file must be a string.",
    );
    expect(errorOf(["--config", yamlFile("state-dir: [a]\n")])).toBe(
      "state-dir in the AG-UI config file must be a string.",
    );
    expect(errorOf(["--config", yamlFile("allowed-cwds: /one\n")])).toBe(
      "allowed-cwds in the AG-UI config file must be a list of paths.",
    );
    expect(errorOf(["--config", yamlFile("allowed-cwds: [/one, 2]\n")])).toBe(
      "allowed-cwds in the AG-UI config file must be a list of paths.",
    );
    expect(errorOf(["--config", yamlFile("allowed-cwds: []\n")])).toBe(
      "allowed-cwds in the AG-UI config file must list at least one path.",
    );
  });
});

describe("precedence: flag > env > YAML > default", () => {
  const cases = [
    { option: "port", flag: "--port", env: "IAC_CODE_AGUI_PORT", yaml: "port", values: ["1001", "1002", 1003], key: "port", parsed: [1001, 1002, 1003], fallback: 41243 },
    { option: "host", flag: "--host", env: "IAC_CODE_AGUI_HOST", yaml: "host", values: ["h-flag", "h-env", "h-yaml"], key: "host", parsed: ["h-flag", "h-env", "h-yaml"], fallback: "127.0.0.1" },
    { option: "state dir", flag: "--state-dir", env: "IAC_CODE_AGUI_STATE_DIR", yaml: "state-dir", values: ["/f", "/e", "/y"], key: "stateDir", parsed: [path.resolve("/f"), path.resolve("/e"), path.resolve("/y")], fallback: path.join(HOME, ".iac-code", "agui") },
    { option: "interrupt ttl", flag: "--interrupt-ttl", env: "IAC_CODE_AGUI_INTERRUPT_TTL", yaml: "interrupt-ttl", values: ["11", "12", 13], key: "interruptTtlSeconds", parsed: [11, 12, 13], fallback: 540 },
  ] as const;

  for (const c of cases) {
    it(`for ${c.option}`, () => {
      const [flagValue, envValue, yamlValue] = c.values;
      const [fromFlag, fromEnv, fromYaml] = c.parsed;
      const file = yamlFile(`${c.yaml}: ${JSON.stringify(yamlValue)}\n`);
      const env = { [c.env]: envValue };
      const key = c.key as keyof GatewayConfig;
      expect(config(["--config", file, c.flag, flagValue], env)[key]).toEqual(fromFlag);
      expect(config(["--config", file], env)[key]).toEqual(fromEnv);
      expect(config(["--config", file])[key]).toEqual(fromYaml);
      expect(config([])[key]).toEqual(c.fallback);
    });
  }

  it("tokens: env beats YAML", () => {
    const file = yamlFile("auth-token: yaml-auth\na2a_token: yaml-a2a\n");
    expect(config(["--config", file])).toMatchObject({ authToken: "yaml-auth", a2aToken: "yaml-a2a" });
    const c = config(["--config", file], { IAC_CODE_AGUI_AUTH_TOKEN: "env-auth", IAC_CODE_AGUI_A2A_TOKEN: "env-a2a" });
    expect(c).toMatchObject({ authToken: "env-auth", a2aToken: "env-a2a" });
  });

  it("a valid flag hides an invalid env value and YAML value", () => {
    const file = yamlFile('port: "bad"\n');
    expect(config(["--config", file, "--port", "5"], { IAC_CODE_AGUI_PORT: "bad" }).port).toBe(5);
  });
});

describe("value checks", () => {
  it("port: integer in 0..65535 from each source", () => {
    for (const bad of ["65536", "-1", "1.5", "abc", "", "0x10", "1e3", " 80"]) {
      expect(errorOf(["--port", bad])).toBe("--port must be an integer between 0 and 65535.");
      expect(errorOf([`--port=${bad}`])).toBe("--port must be an integer between 0 and 65535.");
    }
    for (const bad of ["65536", "-1", "8080.5", "eighty"]) {
      expect(errorOf([], { IAC_CODE_AGUI_PORT: bad })).toBe("IAC_CODE_AGUI_PORT must be an integer between 0 and 65535.");
    }
    for (const bad of ["65536", "-1", "1.5", "true", "[1]"]) {
      expect(errorOf(["--config", yamlFile(`port: ${bad}\n`)])).toBe(
        "port in the AG-UI config file must be an integer between 0 and 65535.",
      );
    }
    expect(config(["--port", "65535"]).port).toBe(65535);
    expect(config(["--port", "0"]).port).toBe(0);
  });

  it("interrupt-ttl, idle-shutdown, upstream-idle-timeout: non-negative numbers", () => {
    expect(errorOf(["--interrupt-ttl", "-1"])).toBe("--interrupt-ttl must be a non-negative number of seconds.");
    expect(errorOf(["--interrupt-ttl=-0.5"])).toBe("--interrupt-ttl must be a non-negative number of seconds.");
    expect(errorOf(["--interrupt-ttl", "soon"])).toBe("--interrupt-ttl must be a non-negative number of seconds.");
    expect(errorOf(["--interrupt-ttl", "Infinity"])).toBe("--interrupt-ttl must be a non-negative number of seconds.");
    expect(errorOf(["--interrupt-ttl", "NaN"])).toBe("--interrupt-ttl must be a non-negative number of seconds.");
    expect(errorOf([], { IAC_CODE_AGUI_INTERRUPT_TTL: "-5" })).toBe(
      "IAC_CODE_AGUI_INTERRUPT_TTL must be a non-negative number of seconds.",
    );
    expect(errorOf(["--config", yamlFile("interrupt-ttl: -1\n")])).toBe(
      "interrupt-ttl in the AG-UI config file must be a non-negative number of seconds.",
    );
    expect(errorOf(["--config", yamlFile("interrupt-ttl: .inf\n")])).toBe(
      "interrupt-ttl in the AG-UI config file must be a non-negative number of seconds.",
    );
    expect(errorOf(["--idle-shutdown", "-2"])).toBe("--idle-shutdown must be a non-negative number of seconds.");
    expect(errorOf([], { IAC_CODE_AGUI_UPSTREAM_IDLE_TIMEOUT: "x" })).toBe(
      "IAC_CODE_AGUI_UPSTREAM_IDLE_TIMEOUT must be a non-negative number of seconds.",
    );
    expect(config(["--interrupt-ttl", "1e2"]).interruptTtlSeconds).toBe(100);
  });

  it("durations are capped where Node timers would fire at once", () => {
    expect(config(["--idle-shutdown", "2147483"]).idleShutdownSeconds).toBe(2147483);
    expect(errorOf(["--idle-shutdown", "2147484"])).toBe("--idle-shutdown must be at most 2147483 seconds.");
  });

  it("heartbeat: a positive number", () => {
    expect(errorOf(["--heartbeat", "0"])).toBe("--heartbeat must be a positive number of seconds.");
    expect(errorOf([], { IAC_CODE_AGUI_HEARTBEAT: "-1" })).toBe(
      "IAC_CODE_AGUI_HEARTBEAT must be a positive number of seconds.",
    );
    expect(errorOf(["--config", yamlFile('heartbeat: "15"\n')])).toBe(
      "heartbeat in the AG-UI config file must be a positive number of seconds.",
    );
  });

  it("host: a non-empty string", () => {
    expect(errorOf(["--host", ""])).toBe("--host must be a non-empty string.");
    expect(errorOf(["--config", yamlFile("host: 12\n")])).toBe("host in the AG-UI config file must be a string.");
  });
});

describe("--a2a-http2", () => {
  it("is read from the flag, the environment and YAML", () => {
    const url = ["--a2a-url", "http://127.0.0.1:1/"];
    expect(config([...url, "--a2a-http2"]).a2aHttp2).toBe(true);
    expect(config(url, { IAC_CODE_AGUI_A2A_HTTP2: "yes" }).a2aHttp2).toBe(true);
    expect(config([...url, "--no-a2a-http2"], { IAC_CODE_AGUI_A2A_HTTP2: "1" }).a2aHttp2).toBe(false);
  });

  it("is refused without an A2A URL or with --demo, naming where it came from", () => {
    expect(errorOf(["--a2a-http2"])).toBe(
      "--a2a-http2 needs --a2a-url: the demo upstream and a managed `iac-code a2a` speak HTTP/1.1 only.",
    );
    expect(errorOf(["--demo", "--a2a-url", "http://127.0.0.1:1/"], { IAC_CODE_AGUI_A2A_HTTP2: "true" })).toMatch(
      /^IAC_CODE_AGUI_A2A_HTTP2 needs --a2a-url/,
    );
    expect(errorOf(["--a2a-http2", "--a2a-url", "https://127.0.0.1:1/"])).toBe(
      "--a2a-http2 needs an http:// --a2a-url: it speaks h2c (HTTP/2 without TLS).",
    );
  });
});

describe("help text", () => {
  it("mentions every flag, env name and default, with usage and examples", () => {
    const flags = [
      "--host", "--port", "--a2a-url", "--state-dir", "--config", "--demo", "--interrupt-ttl", "--idle-shutdown",
      "--heartbeat", "--upstream-idle-timeout", "--a2a-http2", "--validate-events", "--console", "--debug", "-d", "--log-stdout",
      "--no-log-stdout", "--help", "-h", "--version",
    ];
    const envNames = [
      "IAC_CODE_AGUI_HOST", "IAC_CODE_AGUI_PORT", "IAC_CODE_AGUI_A2A_URL", "IAC_CODE_AGUI_A2A_TOKEN",
      "IAC_CODE_AGUI_AUTH_TOKEN", "IAC_CODE_AGUI_STATE_DIR", "IAC_CODE_AGUI_INTERRUPT_TTL",
      "IAC_CODE_AGUI_IDLE_SHUTDOWN", "IAC_CODE_AGUI_HEARTBEAT", "IAC_CODE_AGUI_UPSTREAM_IDLE_TIMEOUT",
      "IAC_CODE_AGUI_ALLOWED_CWDS", "IAC_CODE_AGUI_A2A_HTTP2", "IAC_CODE_AGUI_VALIDATE_EVENTS", "IAC_CODE_CONFIG_DIR",
    ];
    const words = new Set(HELP_TEXT.split(/[\s,|]+/));
    for (const name of [...flags, ...envNames]) expect(words, name).toContain(name);
    for (const fallback of ["127.0.0.1", "41243", "540", "15"]) expect(HELP_TEXT).toContain(`default ${fallback}`);
    expect(HELP_TEXT).toMatch(/^Usage: agui-gateway \[options\]/);
    expect(HELP_TEXT).toContain("Examples:");
  });

  it("every flag it lists is accepted by the parser", () => {
    const listed = [...new Set(HELP_TEXT.match(/(?<=\s)--?[a-z][a-z0-9-]*/g) ?? [])];
    expect(listed.length).toBeGreaterThan(15);
    const needsValue = new Set(["--host", "--a2a-url", "--state-dir", "--config"]);
    for (const flag of listed) {
      if (flag === "--help" || flag === "-h" || flag === "--version") continue;
      const value = flag === "--state-store" ? ["redis://127.0.0.1:6379"] : flag === "--cors-origins" ? ["https://app.example.com"] : needsValue.has(flag) ? ["/tmp"] : /port|ttl|shutdown|heartbeat|timeout|window|connections|grace|replay|history/.test(flag) ? ["1"] : flag === "--body-budget" ? ["12"] : [];
      // HTTP/2 is only for a kernel the operator points at (the demo and a managed kernel speak HTTP/1.1).
      const jwt = ["--auth-jwt-issuer", "https://issuer.example/", "--auth-jwt-audience", "agui"];
      const argv =
        flag === "--config" ? [flag, yamlFile("")]
        : flag === "--a2a-http2" ? [flag, "--a2a-url", "http://127.0.0.1:1/"]
        : flag === "--auth-jwks-url" ? [flag, "https://issuer.example/jwks.json", ...jwt]
        : flag === "--auth-jwt-key" ? [flag, "/tmp/key.pem", ...jwt]
        : flag === "--auth-jwt-algorithms" ? [flag, "ES256"]
        : flag === "--max-active-runs-per-user" || flag.startsWith("--user-request-") ? [flag, "2"]
        : flag.startsWith("--auth-") ? [flag, flag === "--auth-jwt-clock-tolerance" ? "1" : "x"]
        : [flag, ...value];
      expect(() => loadConfig(argv, {}, HOME), flag).not.toThrow();
    }
  });
});

describe("state store", () => {
  it("takes only redis:// and rediss:// URLs, and reads the password from the environment", () => {
    expect(config(["--state-store", "redis://:pw@127.0.0.1:6379/0"]).stateStore).toBe("redis://:pw@127.0.0.1:6379/0");
    expect(config([], { IAC_CODE_AGUI_STATE_STORE: "rediss://r.example:6380", IAC_CODE_AGUI_REDIS_PASSWORD: "s3cret" })).toMatchObject({
      stateStore: "rediss://r.example:6380",
      redisPassword: "s3cret",
    });
    for (const bad of ["http://127.0.0.1:6379", "127.0.0.1:6379", "file:///tmp/x", "redis://127.0.0.1:99999"]) {
      expect(() => loadConfig(["--state-store", bad], {}, HOME), bad).toThrow(/--state-store must be a redis:\/\/ or rediss:\/\/ URL/);
    }
    // Beyond Redis's 16 databases SELECT fails and the client would go on in database 0.
    for (const bad of ["redis://127.0.0.1:6379/16", "redis://127.0.0.1:6379/99", "redis://127.0.0.1/x"]) {
      expect(() => loadConfig(["--state-store", bad], {}, HOME), bad).toThrow(/--state-store must name a database from 0 to 15/);
    }
    expect(() => loadConfig(["--state-store", "redis://"], {}, HOME)).toThrow(/--state-store must name a host/);
    // A malformed password is refused without echoing it.
    const malformed = () => loadConfig(["--state-store", "redis://:%zzsecret@127.0.0.1:6379"], {}, HOME);
    expect(malformed).toThrow(/--state-store has a user name or password that is not valid percent-encoding/);
    expect(malformed).not.toThrow(/zzsecret/);
    expect(() => loadConfig(["--lease-ttl", "0"], {}, HOME)).toThrow(/--lease-ttl must be a positive number of seconds/);
  });
});

describe("--cors-origins", () => {
  it("reads a comma-separated list from the flag and the environment, and a list from YAML", () => {
    expect(config([]).corsOrigins).toBeUndefined();
    expect(config(["--cors-origins", "https://app.example.com, http://127.0.0.1:5173"]).corsOrigins).toEqual([
      "https://app.example.com",
      "http://127.0.0.1:5173",
    ]);
    expect(config([], { IAC_CODE_AGUI_CORS_ORIGINS: "https://app.example.com" }).corsOrigins).toEqual(["https://app.example.com"]);
    const file = yamlFile("cors-origins:\n  - https://app.example.com\n  - https://admin.example.com:8443\n");
    expect(config(["--config", file]).corsOrigins).toEqual(["https://app.example.com", "https://admin.example.com:8443"]);
    // A list with no entries is unset: same origin only.
    expect(config(["--cors-origins", " , "]).corsOrigins).toBeUndefined();
  });

  it("takes exact origins only: no wildcard, path, trailing slash, default port or other scheme", () => {
    for (const bad of [
      "*",
      "https://*.example.com",
      "https://app.example.com/",
      "https://app.example.com/app",
      "https://App.example.com",
      "https://app.example.com:443",
      "app.example.com",
      "null",
      "file:///tmp/page.html",
      "ftp://app.example.com",
    ]) {
      const message = errorOf(["--cors-origins", `https://ok.example.com,${bad}`]);
      expect(message, bad).toBe(
        `--cors-origins must list exact origins: ${JSON.stringify(bad)} is not an exact origin such as https://app.example.com (scheme, host and port only: no path, no trailing slash, no *).`,
      );
    }
    expect(errorOf([], { IAC_CODE_AGUI_CORS_ORIGINS: "*" })).toMatch(/^IAC_CODE_AGUI_CORS_ORIGINS must list exact origins: "\*"/);
    expect(errorOf(["--config", yamlFile("cors-origins: https://app.example.com\n")])).toMatch(/^cors-origins in .* must be a list of origins\.$/);
    expect(errorOf(["--config", yamlFile("cors-origins: []\n")])).toMatch(/^cors-origins in .* must list at least one origin\.$/);
    expect(errorOf(["--config", yamlFile("cors-origins: [3]\n")])).toMatch(/^cors-origins in .* must be a list of origins\.$/);
  });
});

describe("user tokens", () => {
  const jwt = ["--auth-jwt-issuer", "https://issuer.example/", "--auth-jwt-audience", "agui"];

  it("takes one key source, with an issuer and an audience", () => {
    expect(config(["--auth-jwks-url", "http://127.0.0.1:9/jwks", ...jwt])).toMatchObject({ authJwksUrl: "http://127.0.0.1:9/jwks" });
    expect(errorOf(["--auth-jwks-url", "https://i.example/jwks", "--auth-jwt-key", "/k.pem", ...jwt])).toBe(
      "--auth-jwks-url and --auth-jwt-key exclude each other: user tokens are verified by one of them.",
    );
    expect(errorOf(["--auth-jwt-key", "/k.pem", "--auth-jwt-audience", "agui"])).toBe("--auth-jwt-key needs --auth-jwt-issuer.");
    expect(errorOf(["--auth-jwks-url", "https://i.example/jwks", "--auth-jwt-issuer", "x"])).toBe("--auth-jwks-url needs --auth-jwt-audience.");
  });

  it("fetches keys over TLS except from loopback, and allows asymmetric algorithms only", () => {
    expect(errorOf(["--auth-jwks-url", "http://issuer.example/jwks", ...jwt])).toBe(
      "--auth-jwks-url must be an https:// URL (http:// only on 127.0.0.1, localhost or ::1).",
    );
    expect(errorOf(["--auth-jwks-url", "not a url", ...jwt])).toBe("--auth-jwks-url must be a URL.");
    for (const algs of ["HS256", "none", "RS256,HS512", ","]) {
      expect(errorOf(["--auth-jwt-algorithms", algs])).toMatch(/^--auth-jwt-algorithms must be a comma-separated list of RS256/);
    }
    expect(config([], { IAC_CODE_AGUI_AUTH_JWT_ALGORITHMS: "ES256, EdDSA" }).authJwtAlgorithms).toBe("ES256, EdDSA");
  });
});
