#!/usr/bin/env -S node --max-semi-space-size=2 --heap-growing-percent=20
// agui-gateway: parse the configuration, start the upstream (demo or given URL), serve AG-UI.
// V8 tuned for a process that mostly holds long-lived streams: a small young generation (2 MB semi-spaces,
// not up to 16) and an old generation that grows by 20% of what is live rather than up to 4x, so the
// garbage of admissions is collected instead of piling up between major GCs. 10,000 idle streams take
// ~530 MB instead of ~650, for no measurable loss of throughput (bench/). `npm start` passes the same flags.
import { createPublicKey, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { assertLoopbackA2AUrl } from "./a2a/index.js";
import { ConfigError, loadConfig, type GatewayConfig } from "./config/index.js";
import { startScriptedA2AServer, demoScript } from "./demo/index.js";
import { SERVER_VERSION, createLogger, startGateway } from "./gateway.js";
import { startManagedKernel } from "./ops/managed-kernel.js";
import { exampleWorkspace } from "./runs/cwd.js";
import { algorithmList } from "./config/options.js";
import type { JwtOptions } from "./http/jwt.js";
import { tracingWanted } from "./ops/trace.js";

/** User tokens, when a key source is configured; the PEM key is read and checked now, not at the first request. */
function jwtOptionsOf(config: GatewayConfig): JwtOptions | undefined {
  if (config.authJwksUrl === undefined && config.authJwtKey === undefined) return undefined;
  let publicKeyPem: string | undefined;
  if (config.authJwtKey !== undefined) {
    try {
      publicKeyPem = readFileSync(config.authJwtKey, "utf8");
      if (createPublicKey(publicKeyPem).type !== "public") throw new Error("not a public key");
    } catch (error) {
      throw new ConfigError(`--auth-jwt-key ${config.authJwtKey} is not a readable PEM public key (${error instanceof Error ? error.message : String(error)}).`);
    }
  }
  return {
    ...(config.authJwksUrl !== undefined && { jwksUrl: config.authJwksUrl }),
    ...(publicKeyPem !== undefined && { publicKeyPem }),
    issuer: config.authJwtIssuer!,
    audience: config.authJwtAudience!,
    algorithms: algorithmList(config.authJwtAlgorithms),
    clockToleranceSeconds: config.authJwtClockToleranceSeconds,
    userClaim: config.authUserClaim,
  };
}

async function main(argv: string[]): Promise<number> {
  let config: GatewayConfig;
  let jwt: JwtOptions | undefined;
  try {
    const result = loadConfig(argv, process.env);
    if (result.kind === "help") {
      process.stdout.write(result.text.endsWith("\n") ? result.text : `${result.text}\n`);
      return 0;
    }
    if (result.kind === "version") {
      process.stdout.write(`${SERVER_VERSION}\n`);
      return 0;
    }
    config = result.config;
    if (config.a2aUrl !== undefined && !config.demo) assertLoopbackA2AUrl(config.a2aUrl);
    jwt = jwtOptionsOf(config);
  } catch (error) {
    process.stderr.write(`agui-gateway: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }

  const destination = config.logStdout ? process.stdout : process.stderr;
  const logger = createLogger({ debug: config.debug, destination, pretty: (destination as NodeJS.WriteStream).isTTY === true });
  let a2aUrl = config.a2aUrl;
  let a2aToken = config.a2aToken;
  const cleanups: (() => Promise<void>)[] = [];
  if (config.demo) {
    const demo = await startScriptedA2AServer({ script: demoScript });
    cleanups.push(() => demo.close());
    a2aUrl = demo.url;
    a2aToken = undefined;
    logger.info({ a2aUrl }, "built-in demo A2A upstream started");
  }
  if (a2aUrl === undefined) {
    // Neither a URL nor the demo: run `iac-code a2a` ourselves when it is installed.
    try {
      const kernel = await startManagedKernel({ logger });
      cleanups.push(() => kernel.stop());
      a2aUrl = kernel.url;
      a2aToken = kernel.token;
    } catch (error) {
      process.stderr.write(`agui-gateway: ${error instanceof Error ? error.message : String(error)}\n`);
      return 1;
    }
  }

  let stop: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  process.once("SIGINT", () => stop());
  process.once("SIGTERM", () => stop());

  const gateway = await startGateway({
    host: config.host,
    port: config.port,
    a2aUrl,
    stateDir: config.stateDir,
    ...(config.stateStore !== undefined && { stateStore: config.stateStore, leaseTtlSeconds: config.leaseTtlSeconds }),
    ...(config.redisPassword !== undefined && { redisPassword: config.redisPassword }),
    ...(a2aToken !== undefined && { a2aToken }),
    ...(config.authToken !== undefined && { authToken: config.authToken }),
    ...(jwt && { jwt }),
    ...(config.allowedCwds !== undefined && { allowedRoots: config.allowedCwds }),
    ...(config.corsOrigins !== undefined && { corsOrigins: config.corsOrigins }),
    interruptTtlSeconds: config.interruptTtlSeconds,
    heartbeatSeconds: config.heartbeatSeconds,
    upstreamIdleTimeoutSeconds: config.upstreamIdleTimeoutSeconds,
    a2aHttp2: config.a2aHttp2,
    validateEvents: config.validateEvents,
    ...((config.console || config.demo) && { console: { demo: config.demo } }),
    idleShutdownSeconds: config.idleShutdownSeconds,
    runIdWindow: config.runIdWindow,
    reconnectGraceSeconds: config.reconnectGraceSeconds,
    historyMessages: config.historyMessages,
    replay: { events: config.replayEvents, mib: config.replayMib, retentionSeconds: config.replayRetentionSeconds, budgetMib: config.replayBudgetMib },
    maxActiveRunsPerUser: config.maxActiveRunsPerUser,
    userRequestLimit: config.userRequestLimit,
    userRequestIntervalSeconds: config.userRequestIntervalSeconds,
    bodyBudgetMib: config.bodyBudgetMib,
    bodyTimeoutSeconds: config.bodyTimeoutSeconds,
    headersTimeoutSeconds: config.headersTimeoutSeconds,
    keepAliveTimeoutSeconds: config.keepAliveTimeoutSeconds,
    maxConnections: config.maxConnections,
    tracing: tracingWanted(config.tracing, process.env),
    onIdle: () => stop(),
    logger,
  });
  cleanups.unshift(() => gateway.close());
  // Like rxjs's hook (src/ops/unhandled.ts): a promise rejection nobody handled is a bug to log and count, not a
  // reason to end every stream of every user.
  process.on("unhandledRejection", (reason) => {
    gateway.metrics.unhandledErrors.inc();
    logger.error({ err: reason }, "unhandled promise rejection (contained; please report)");
  });
  process.stdout.write(banner(gateway.url, config, exampleWorkspace(gateway.allowedRoots)));

  await stopped;
  logger.info("shutting down");
  for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  return 0;
}

function banner(url: string, config: GatewayConfig, cwd: string): string {
  const body = JSON.stringify({
    threadId: "demo-thread-1",
    // Unique per process: two replicas started in the same millisecond must not print one runId.
    runId: `run-${randomUUID()}`,
    state: {},
    messages: [{ id: "message-1", role: "user", content: "Create a VPC template" }],
    tools: [],
    context: [],
    forwardedProps: { iacCode: { schemaVersion: 1, rosInvocationId: "invocation-1", cwd, runMode: "normal" } },
  });
  const auth = config.authToken ? ` -H 'Authorization: Bearer <token>'` : "";
  return [
    `agui-gateway ${SERVER_VERSION} listening on ${url}${config.demo ? " (built-in demo upstream)" : ""}`,
    "Try it:",
    `  curl -N ${url} -H 'Content-Type: application/json' -H 'Accept: text/event-stream'${auth} \\`,
    // A ' in a path would end the shell's quoted string: written as '\'' it stays one argument.
    `    -d '${body.replaceAll("'", "'\\''")}'`,
    "(each request needs a new runId; a prompt that mentions \"deploy\" asks for permission first)",
    ...(config.console || config.demo ? [`Web console: ${url}console`] : []),
    "",
  ].join("\n");
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`agui-gateway: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
    process.exit(1);
  },
);
