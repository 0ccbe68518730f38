// Unauthenticated clients against the gateway's own resources (issue 14, item 3): a shared budget for the
// request bodies buffered at once, deadlines for headers and bodies, a connection cap, and refused bodies
// drained behind their answer. Loopback only, every test bounded in time; the process is still this one
// and /health answers after each.
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoScript, startScriptedA2AServer, type ScriptedA2AServer } from "../src/demo/index.js";
import { startGateway, type RunningGateway } from "../src/gateway.js";
import { streamProblems } from "./helpers/checks.js";
import { ensureCliBuilt, startCli, type CliGateway } from "./helpers/durable.js";
import { liveSse, openSse, postRaw, scriptByPrompt, sessionEventOf, slowTurn, startStack } from "./helpers/e2e.js";
import { envelopeProblems, httpCall, inputFor, postJson, sseEvents, silentLogger, type Reply } from "./helpers/faults.js";
import { rawHttp } from "./helpers/http.js";
import { bigJson, floodFromChild, pollHealth, startControlServer, upload } from "./helpers/flood.js";

const MiB = 1024 * 1024;
const PID = process.pid;

let upstream: ScriptedA2AServer;
let root: string;
const gateways: RunningGateway[] = [];
const children: CliGateway[] = [];

beforeAll(async () => {
  upstream = await startScriptedA2AServer({ script: createDemoScript({ frameDelayMs: 0 }) });
  root = await mkdtemp(path.join(tmpdir(), "agui-flood-"));
  await mkdir(path.join(root, "ws"));
}, 120_000);

afterAll(async () => {
  for (const child of children) await child.kill("SIGKILL");
  for (const gateway of gateways) await gateway.close();
  await upstream?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

async function launch(extra: Parameters<typeof startGateway>[0] extends infer O ? Partial<O> : never = {}): Promise<RunningGateway> {
  const gateway = await startGateway({ host: "127.0.0.1", port: 0, a2aUrl: upstream.url, allowedRoots: [root], logger: silentLogger, ...extra });
  gateways.push(gateway);
  return gateway;
}

async function healthMs(url: string): Promise<number> {
  const started = Date.now();
  const reply = await httpCall(new URL("/health", url).href, { method: "GET", timeoutMs: 5_000 });
  expect(reply.status).toBe(200);
  return Date.now() - started;
}

/** The same process, and /health answers (the 1 s target is measured against a gateway process, below). */
async function expectAlive(url: string): Promise<void> {
  expect(process.pid).toBe(PID);
  expect(await healthMs(url)).toBeLessThan(5_000);
}

describe("refused bodies are drained behind their answer", () => {
  it("Python urllib posting 13 MiB reads the 413 envelope, 10 times out of 10 (and chunked, 3 of 3; and a 404, a 415)", async () => {
    const gateway = await launch();
    const script = `
import json, sys, urllib.request, urllib.error
url = sys.argv[1]
body = b" " * (13 * 1024 * 1024)
def attempt(data, path="", content_type="application/json"):
    req = urllib.request.Request(url + path, data=data, headers={"Content-Type": content_type}, method="POST")
    try:
        urllib.request.urlopen(req, timeout=30)
        return "no error"
    except urllib.error.HTTPError as e:
        return "%d %s" % (e.code, json.loads(e.read())["error"]["code"])
    except Exception as e:
        return repr(e)
chunked = lambda: iter([body[i:i + 65536] for i in range(0, len(body), 65536)])
print(json.dumps([attempt(body) for _ in range(10)] + [attempt(chunked()) for _ in range(3)]
                 + [attempt(body, "nope"), attempt(body, "", "text/plain")]))
`;
    // Asynchronously: the gateway under test lives in this process and must keep serving meanwhile.
    const result = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
      execFile("python3", ["-c", script, gateway.url], { encoding: "utf8", timeout: 90_000 }, (error, stdout, stderr) =>
        error ? reject(error) : resolve({ stdout, stderr }),
      );
    });
    expect(result.stderr).toBe("");
    expect(JSON.parse(result.stdout)).toEqual([
      ...Array.from({ length: 13 }, () => "413 REQUEST_TOO_LARGE"),
      // Refusals that never read the body drain it too.
      "404 NOT_FOUND",
      "415 UNSUPPORTED_MEDIA_TYPE",
    ]);
    await expectAlive(gateway.url);
  }, 100_000);

  it("a body declared longer than the drain bound is refused with its envelope, its connection closed behind the answer", async () => {
    const gateway = await launch();
    const attempts: [path: string, contentType: string, close: boolean, expected: string][] = [
      ["", "application/json", false, "413 REQUEST_TOO_LARGE"],
      ["", "application/json", true, "413 REQUEST_TOO_LARGE"],
      ["connect", "application/json", false, "413 REQUEST_TOO_LARGE"],
      ["extensions/iac-code/v1/executions/x/cancel", "application/json", true, "413 REQUEST_TOO_LARGE"],
      // Refused before the body is read: the drain of a `Connection: close` request meets the declared length.
      ["", "text/plain", true, "415 UNSUPPORTED_MEDIA_TYPE"],
      ["nothing", "application/json", true, "404 NOT_FOUND"],
    ];
    for (const [route, contentType, close, expected] of attempts) {
      const reply = await rawHttp(new URL(route, gateway.url).href, {
        headers: { "Content-Type": contentType, "Content-Length": String(100_000_000), ...(close && { Connection: "close" }) },
        chunks: [Buffer.alloc(64 * 1024, 0x20)],
      });
      const code = (reply.json as { error?: { code?: string } } | undefined)?.error?.code;
      expect(`${reply.status} ${code}`, `${route || "/"} ${contentType}${close ? " (close)" : ""}: ${reply.text.slice(0, 200)}`).toBe(expected);
    }
    await expectAlive(gateway.url);
  }, 60_000);
});

describe("a request near the body limit", () => {
  it("an 11 MiB prompt is run by the built-in demo kernel to RUN_FINISHED (the kernel takes what the gateway admits)", async () => {
    const gateway = await launch();
    const prompt = "a".repeat(11 * MiB);
    const reply = await postJson(gateway.url, inputFor(path.join(root, "ws"), { prompt }));
    expect(reply.status).toBe(200);
    const { events, problems } = sseEvents(reply.text);
    expect([...problems, ...streamProblems(events)]).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED" });
    await expectAlive(gateway.url);
  }, 60_000);
});

describe("the shared body budget", () => {
  it("over budget a request gets 503 SERVER_BUSY with Retry-After, its body drained; the budget is released afterwards", async () => {
    const gateway = await launch({ bodyBudgetMib: 12 });
    const body = bigJson(11 * MiB);
    // Two trickled uploads of 11 MiB against a budget of 12: whichever is read first holds the budget until
    // it is done, the other is refused at once.
    const started = Date.now();
    const both = await Promise.all([0, 1].map(() => upload(gateway.url, body, { chunk: MiB, everyMs: 100 }).then((r) => ({ r, at: Date.now() - started }))));
    const [refused, read] = [both.find((b) => (b.r as Reply).status === 503), both.find((b) => (b.r as Reply).status === 400)];
    expect(refused && read, JSON.stringify(both.map((b) => (b.r as Reply).status))).toBeTruthy();
    const reply = refused!.r as Reply;
    expect(envelopeProblems(reply)).toEqual([]);
    expect([reply.json?.error?.code, reply.headers["retry-after"]]).toEqual(["SERVER_BUSY", "1"]);
    expect((read!.r as Reply).json?.error?.code).toBe("INVALID_INPUT");
    // The refused body is drained without the budget, alongside the other, not after it.
    expect(refused!.at).toBeLessThanOrEqual(read!.at + 500);
    // The budget is given back: the next body is read in full.
    const again = (await upload(gateway.url, body)) as Reply;
    expect([again.status, again.json?.error?.code]).toEqual([400, "INVALID_INPUT"]);
    const refusedCount = (await gateway.metrics.refusedRequests.get()).values.find((v) => v.labels["reason"] === "budget")?.value;
    expect(refusedCount).toBe(1);
    await expectAlive(gateway.url);
  }, 30_000);

  it("an observer stream gives its body's budget back when it starts, as a run stream does", async () => {
    // A budget of 64 KiB and observer bodies of 40 KiB: a second observer fits only if the first one's body is no
    // longer counted while its stream is open.
    const stack = await startStack({
      script: scriptByPrompt({ slow: (turn) => slowTurn(`sess-${turn.contextId}`, 400, 25) }),
      gateway: { bodyBudgetMib: 1 / 16 },
    });
    try {
      const input = stack.input({ prompt: "slow" });
      const live = await openSse(stack.gateway.url, input);
      await live.until((e) => e.type === "CUSTOM");
      const executionId = String(sessionEventOf(live.events).executionId);
      const executionUrl = `${stack.gateway.url}extensions/iac-code/v1/executions/${executionId}`;
      // JSON may end in whitespace: the padding makes the body big without a key the route refuses.
      const body = JSON.stringify({ threadId: input.threadId, runId: input.runId, rosInvocationId: "invocation-1" }).padEnd(40 * 1024, " ");
      const observe = async () => {
        const controller = new AbortController();
        const response = await fetch(`${executionUrl}/subscribe`, { method: "POST", headers: { "Content-Type": "application/json" }, body, signal: controller.signal });
        return liveSse(response, controller);
      };
      const first = await observe();
      expect(first.status).toBe(200);
      expect(await first.until((e) => e.type === "RUN_STARTED")).toBeDefined();
      const second = await observe();
      expect(second.status, "an open observer stream must not hold the body budget (503 SERVER_BUSY)").toBe(200);
      expect(await second.until((e) => e.type === "RUN_STARTED")).toBeDefined();
      const cancel = await postRaw(`${executionUrl}/cancel`, { threadId: input.threadId, rosInvocationId: "invocation-1" });
      expect(cancel.status).toBe(200);
      for (const stream of [live, first, second]) expect(streamProblems(await stream.rest())).toEqual([]);
      expect((await stack.gateway.metrics.refusedRequests.get()).values.find((v) => v.labels["reason"] === "budget")?.value ?? 0).toBe(0);
    } finally {
      await stack.close();
    }
  }, 30_000);
});

describe("deadlines and the connection cap", () => {
  it("a body trickled slower than the body deadline is cut with a 408 envelope", async () => {
    const gateway = await launch({ bodyTimeoutSeconds: 1 });
    const started = Date.now();
    const reply = (await upload(gateway.url, bigJson(64 * 1024), { chunk: 10, everyMs: 200 })) as Reply;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(envelopeProblems(reply)).toEqual([]);
    expect([reply.status, reply.json?.error?.code]).toEqual([408, "REQUEST_TIMEOUT"]);
    await expectAlive(gateway.url);
  }, 20_000);

  it("headers trickled past the headers deadline lose their connection; idle sockets beyond the cap are closed at once", async () => {
    const gateway = await launch({ headersTimeoutSeconds: 1, maxConnections: 10 });
    const port = gateway.port;
    const sockets: Socket[] = [];
    const closedAt: number[] = [];
    const started = Date.now();
    for (let i = 0; i < 15; i++) {
      const socket = connect(port, "127.0.0.1");
      socket.on("error", () => undefined);
      socket.on("close", () => closedAt.push(Date.now() - started));
      socket.write("POST / HTTP/1.1\r\nHost: x\r\n");
      sockets.push(socket);
    }
    const trickle = setInterval(() => {
      for (const s of sockets) if (!s.destroyed) s.write("X-Slow: 1\r\n");
    }, 200);
    try {
      // Five are over the cap (closed at once, counted below), the rest are cut by the headers deadline.
      await expect.poll(() => closedAt.length, { timeout: 8_000, interval: 100 }).toBe(15);
      expect(Math.max(...closedAt)).toBeLessThan(6_000);
    } finally {
      clearInterval(trickle);
      for (const s of sockets) s.destroy();
    }
    const dropped = (await gateway.metrics.refusedRequests.get()).values.find((v) => v.labels["reason"] === "connections")?.value;
    expect(dropped).toBe(5);
    await expectAlive(gateway.url);
  }, 20_000);

  it("an SSE stream outlives the body and headers deadlines", async () => {
    const slowUpstream = await startScriptedA2AServer({ script: createDemoScript({ frameDelayMs: 150 }) });
    const gateway = await startGateway({
      host: "127.0.0.1", port: 0, a2aUrl: slowUpstream.url, allowedRoots: [root], logger: silentLogger, bodyTimeoutSeconds: 1, headersTimeoutSeconds: 1,
    });
    try {
      const started = Date.now();
      const reply = await postJson(gateway.url, inputFor(path.join(root, "ws")));
      expect(Date.now() - started).toBeGreaterThan(2_500);
      expect(reply.text).toContain('"type":"RUN_FINISHED"');
      await expectAlive(gateway.url);
    } finally {
      await gateway.close();
      await slowUpstream.close();
    }
  }, 30_000);
});

describe("the issue's flood target, against a real gateway process", () => {
  it("100 concurrent 11 MiB bodies: RSS stays under 700 MB, /health answers within 1 s throughout, every request gets an answer", async () => {
    ensureCliBuilt();
    const child = await startCli(["--a2a-url", upstream.url, "--port", "0", "--state-dir", path.join(root, "state")], { IAC_CODE_AGUI_ALLOWED_CWDS: root });
    children.push(child);
    const pid = child.child.pid!;
    const rss = async () => Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;
    let maxRss = await rss();
    let flooding = true;
    const watchRss = (async () => {
      while (flooding) {
        maxRss = Math.max(maxRss, await rss());
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    // /health is timed from a process of its own, and the flood comes from another, at the lowest priority:
    // what is measured is the gateway, not this test runner's own load.
    const control = await startControlServer();
    const poller = pollHealth(new URL("/health", child.url).href);
    const controlPoller = pollHealth(control.url);
    const started = Date.now();
    const answers = await floodFromChild(child.url, 100, 11 * MiB);
    flooding = false;
    await watchRss;
    const health = await poller.stop();
    const machine = await controlPoller.stop();
    await control.close();
    console.log(
      `flood: ${Date.now() - started} ms, max RSS ${(maxRss / MiB).toFixed(0)} MiB, /health ${health.samples} samples, max ${health.maxMs} ms ` +
        `(a trivial server beside it: max ${machine.maxMs} ms), answers ${JSON.stringify(answers)}`,
    );
    const statuses = new Map(Object.entries(answers));
    expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBe(100);
    expect([...statuses.keys()].filter((k) => k !== "400 INVALID_INPUT" && k !== "503 SERVER_BUSY")).toEqual([]);
    expect(maxRss).toBeLessThan(700 * 1024 * 1024);
    expect(health.failures).toBe(0);
    expect(health.samples).toBeGreaterThanOrEqual(2);
    // Within 1 s of what the machine itself adds: a loaded machine delays every process, a blocked gateway only itself.
    expect(machine.failures).toBe(0);
    expect(health.maxMs - machine.maxMs).toBeLessThan(1_000);
    expect(await healthMs(child.url)).toBeLessThan(1_000 + machine.maxMs);
  }, 120_000);
});
