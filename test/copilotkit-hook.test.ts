// @vitest-environment jsdom
// The real @copilotkit/react-core 1.74 `useInterrupt` hook rendered in jsdom, against @copilotkit/runtime 1.75
// serving the gateway (issue 13: every approval failed with RUN_ID_CONFLICT, because the hook resumes under the
// run id of the run that ended at the interrupt). Deploy → the hook renders the interrupt → a click approves
// it → the turn finishes; then a pipeline selection the same way; then, with GatewayRunner, the permission shown
// again by a page reloaded in front of a restarted runtime, and answered. Loopback only, telemetry off.
import { createElement, useCallback, useEffect, useState } from "react";
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { CopilotKitProvider, useAgent, useCopilotKit, useInterrupt } from "@copilotkit/react-core/v2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject } from "../operators/types.js";
import type { ScriptedA2AServer } from "../src/demo/index.js";
import { GatewayAgent } from "../src/client/index.js";
import { GatewayRunner } from "../src/copilotkit/index.js";
import { expectValidTraffic, iacAgents, startCopilotRuntime, type CopilotRuntimeServer } from "./helpers/copilotkit.js";
import { startStack, type Stack } from "./helpers/e2e.js";

// The project compiles without the DOM lib (Node code); these are the few jsdom members the page test touches.
interface PageElement {
  querySelector(selector: string): PageElement | null;
  append(child: PageElement): void;
  dispatchEvent(event: unknown): boolean;
  readonly textContent: string | null;
  readonly innerHTML: string;
}
const page = globalThis as unknown as {
  document: { createElement(tag: string): PageElement; body: PageElement };
  MouseEvent: new (type: string, init: { bubbles: boolean }) => unknown;
};

// React's act() warns unless the environment says it is a test environment.
(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let stack: Stack<ScriptedA2AServer>;
let runtime: CopilotRuntimeServer;

beforeAll(async () => {
  stack = await startStack();
  const iacCode = (stack.input().forwardedProps as { iacCode: JsonObject }).iacCode;
  runtime = await startCopilotRuntime(stack.gateway.url, iacAgents(iacCode));
});

afterAll(async () => {
  await runtime?.close();
  await stack?.close();
});

/** A page with a send button and the interrupt UI the hook returns (renderInChat: false places it here). */
function Chat(props: { agentId: string; prompt: string; answer: unknown; threadId?: string }) {
  const { agent } = useAgent({ agentId: props.agentId });
  const { copilotkit } = useCopilotKit();
  const [status, setStatus] = useState("idle");
  // A page opened on an existing thread connects to it once the runtime is there, as CopilotChat does on mount.
  const connected = copilotkit.runtimeConnectionStatus === "connected";
  useEffect(() => {
    if (props.threadId === undefined || !connected) return;
    agent.threadId = props.threadId;
    void copilotkit.connectAgent({ agent });
  }, [agent, copilotkit, connected, props.threadId]);
  const send = useCallback(async () => {
    setStatus("running");
    agent.addMessage({ id: crypto.randomUUID(), role: "user", content: props.prompt });
    await copilotkit.runAgent({ agent });
    setStatus("done");
  }, [agent, copilotkit, props.prompt]);
  const interruptUi = useInterrupt({
    agentId: props.agentId,
    renderInChat: false,
    render: ({ interrupt, resolve }) =>
      createElement(
        "div",
        { id: "interrupt" },
        createElement("p", { id: "question" }, interrupt?.message ?? ""),
        createElement("button", { id: "approve", onClick: () => void resolve(props.answer) }, "Approve"),
      ),
  });
  const assistantText = agent.messages
    .filter((m) => m.role === "assistant")
    .map((m) => (typeof m.content === "string" ? m.content : ""))
    .join("\n");
  return createElement(
    "main",
    null,
    createElement("button", { id: "send", onClick: () => void send() }, "Send"),
    createElement("output", { id: "status" }, status),
    createElement("output", { id: "connection" }, String(copilotkit.runtimeConnectionStatus)),
    createElement("section", { id: "answer" }, assistantText),
    interruptUi,
  );
}

async function mount(agentId: string, prompt: string, answer: unknown, where: { runtimeUrl?: string; threadId?: string } = {}): Promise<{ root: Root; container: PageElement }> {
  const container = page.document.createElement("div");
  page.document.body.append(container);
  const root = createRoot(container as never);
  await act(async () => {
    root.render(
      createElement(
        CopilotKitProvider,
        {
          runtimeUrl: where.runtimeUrl ?? runtime.url,
          showDevConsole: false,
          children: createElement(Chat, { agentId, prompt, answer, ...(where.threadId !== undefined && { threadId: where.threadId }) }),
        },
      ),
    );
  });
  return { root, container };
}

async function until(container: PageElement, selector: string, timeoutMs = 10_000): Promise<PageElement> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = container.querySelector(selector);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`${selector} never appeared; page: ${container.innerHTML.slice(0, 500)}`);
    await act(async () => {
      await new Promise((r) => setTimeout(r, 25));
    });
  }
}

/** The provider reached the runtime and knows its agents (a page's first render does not yet). */
async function connected(container: PageElement): Promise<void> {
  await until(container, "#connection");
  const deadline = Date.now() + 10_000;
  while (container.querySelector("#connection")!.textContent !== "connected") {
    if (Date.now() > deadline) throw new Error(`never connected: ${container.querySelector("#connection")!.textContent}`);
    await act(async () => void (await new Promise((r) => setTimeout(r, 25))));
  }
}

async function click(element: PageElement): Promise<void> {
  await act(async () => {
    element.dispatchEvent(new page.MouseEvent("click", { bubbles: true }));
  });
}

describe("useInterrupt (real hook, jsdom)", () => {
  it("deploy → the hook shows the permission → Approve → the deployment finishes", async () => {
    const { root, container } = await mount("iac", "deploy the stack", { decision: "allow_once" });
    await connected(container);
    await click(container.querySelector("#send")!);
    const question = await until(container, "#question");
    expect(question.textContent).toMatch(/^Deploy stack demo-[0-9a-f]+ to cn-hangzhou - allow once\?$/);
    const parked = runtime.exchanges.at(-1)!;
    await click(container.querySelector("#approve")!);
    await until(container, "#answer:not(:empty)");
    for (let i = 0; i < 400 && !/deployed/i.test(container.querySelector("#answer")!.textContent ?? ""); i++) {
      await act(async () => void (await new Promise((r) => setTimeout(r, 25))));
    }
    expect(container.querySelector("#answer")!.textContent).toMatch(/deployed/i);
    expect(container.querySelector("#interrupt")).toBeNull();
    // The hook resumed under the run id of the run that ended at the interrupt, and the gateway admitted it.
    const resumed = runtime.exchanges.at(-1)!;
    expect(resumed.body["runId"]).toBe(parked.body["runId"]);
    expect(resumed.body["resume"]).toEqual([
      { interruptId: expect.stringMatching(/^permission-/), status: "resolved", payload: { decision: "allow_once" } },
    ]);
    expect(resumed.status).toBe(200);
    const streams = await expectValidTraffic(runtime);
    expect(streams.at(-1)!.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    await act(async () => root.unmount());
  });

  it("a pipeline candidate selection through the hook", async () => {
    const { root, container } = await mount("iac-pipeline", "build a VPC", { selectedId: "1" });
    await connected(container);
    await click(container.querySelector("#send")!);
    const question = await until(container, "#question");
    expect(question.textContent).not.toBe("");
    const parked = runtime.exchanges.at(-1)!;
    await click(container.querySelector("#approve")!);
    const deadline = Date.now() + 10_000;
    while (runtime.exchanges.at(-1) === parked || !(await finished(runtime))) {
      if (Date.now() > deadline) throw new Error("the selection never finished");
      await act(async () => void (await new Promise((r) => setTimeout(r, 25))));
    }
    const resumed = runtime.exchanges.at(-1)!;
    expect(resumed.body["runId"]).toBe(parked.body["runId"]);
    expect(resumed.status).toBe(200);
    const streams = await expectValidTraffic(runtime);
    expect(streams.at(-1)!.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    await act(async () => root.unmount());
  });
});

describe("useInterrupt with GatewayRunner, after a runtime restart", () => {
  it("the reloaded page gets the pending permission from the gateway; Approve finishes the deployment", async () => {
    const iacCode = (stack.input().forwardedProps as { iacCode: JsonObject }).iacCode;
    // No auth on this gateway: the runner's connect carries the binding's proof, as the agents' runs do.
    const startRuntime = () =>
      startCopilotRuntime(stack.gateway.url, iacAgents(iacCode), {
        agentClass: GatewayAgent,
        runner: (fetch) => new GatewayRunner({ url: stack.gateway.url, fetch, forwardedProps: () => ({ iacCode: { rosInvocationId: iacCode["rosInvocationId"] } }) }),
      });
    const first = await startRuntime();
    const before = await mount("iac", "deploy the stack", { decision: "allow_once" }, { runtimeUrl: first.url });
    await connected(before.container);
    await click(before.container.querySelector("#send")!);
    const asked = (await until(before.container, "#question")).textContent;
    expect(asked).toMatch(/^Deploy stack demo-[0-9a-f]+ to cn-hangzhou - allow once\?$/);
    const threadId = first.exchanges.at(-1)!.body["threadId"] as string;
    await act(async () => before.root.unmount());
    await first.close();

    const second = await startRuntime();
    try {
      const after = await mount("iac", "deploy the stack", { decision: "allow_once" }, { runtimeUrl: second.url, threadId });
      await connected(after.container);
      const question = await until(after.container, "#question");
      expect(question.textContent).toBe(asked);
      await click(after.container.querySelector("#approve")!);
      for (let i = 0; i < 400 && !/deployed/i.test(after.container.querySelector("#answer")!.textContent ?? ""); i++) {
        await act(async () => void (await new Promise((r) => setTimeout(r, 25))));
      }
      expect(after.container.querySelector("#answer")!.textContent).toMatch(/deployed/i);
      expect(after.container.querySelector("#interrupt")).toBeNull();
      const resumed = second.exchanges.at(-1)!;
      expect(resumed.body["threadId"]).toBe(threadId);
      expect(resumed.body["resume"]).toEqual([{ interruptId: expect.stringMatching(/^permission-/), status: "resolved", payload: { decision: "allow_once" } }]);
      expect(resumed.status).toBe(200);
      const streams = await expectValidTraffic(second);
      expect(streams.at(-1)!.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
      await act(async () => after.root.unmount());
    } finally {
      await second.close();
    }
  });
});

/** The last gateway stream has ended with its terminal event. */
async function finished(server: CopilotRuntimeServer): Promise<boolean> {
  const last = server.exchanges.at(-1)!;
  const text = await Promise.race([last.text, new Promise<string>((r) => setTimeout(() => r(""), 10))]);
  return /"type":"RUN_(FINISHED|ERROR)"/.test(text);
}
