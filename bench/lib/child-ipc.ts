// The child side of the bench IPC: announce readiness, answer named commands, and exit when the
// parent goes away so no server outlives a crashed bench.
export interface ChildRequest {
  id: number;
  cmd: string;
  args?: unknown;
}

export type ChildReply =
  | { type: "ready"; id?: undefined; value: unknown }
  | { type: "fatal"; id?: undefined; error: string }
  | { type: "ok"; id: number; value: unknown }
  | { type: "error"; id: number; error: string };

export type Handlers = Record<string, (args: any) => unknown>;

import { setFlagsFromString, writeHeapSnapshot } from "node:v8";
import { runInNewContext } from "node:vm";

export function childArgs<T>(): T {
  return JSON.parse(process.argv[2] ?? "{}") as T;
}

export function serveParent(ready: unknown, handlers: Handlers, onExit?: () => Promise<void>): void {
  const send = (reply: ChildReply) => {
    if (process.connected) process.send!(reply);
  };
  const exit = async () => {
    await onExit?.().catch(() => undefined);
    // process.exit, not a kill: --cpu-prof writes its profile here.
    process.exit(0);
  };
  process.on("disconnect", () => void exit());
  process.on("message", (message: ChildRequest) => {
    if (message.cmd === "exit") {
      void exit();
      return;
    }
    if (message.cmd === "cpu") {
      const usage = process.cpuUsage();
      send({ type: "ok", id: message.id, value: (usage.user + usage.system) / 1000 });
      return;
    }
    if (message.cmd === "busy") {
      send({ type: "ok", id: message.id, value: performance.eventLoopUtilization().active });
      return;
    }
    if (message.cmd === "memory") {
      send({ type: "ok", id: message.id, value: process.memoryUsage() });
      return;
    }
    if (message.cmd === "heapSnapshot") {
      // For looking at what an idle stream costs; the path is the child's answer.
      send({ type: "ok", id: message.id, value: writeHeapSnapshot(message.args as string | undefined) });
      return;
    }
    if (message.cmd === "gcMemory") {
      // Diagnostics after a measurement: what of the heap is live (a full GC first), not part of any figure.
      setFlagsFromString("--expose-gc");
      (runInNewContext("gc") as () => void)();
      send({ type: "ok", id: message.id, value: process.memoryUsage() });
      return;
    }
    if (message.cmd === "rss") {
      send({ type: "ok", id: message.id, value: process.memoryUsage().rss });
      return;
    }
    const handler = handlers[message.cmd];
    if (!handler) {
      send({ type: "error", id: message.id, error: `unknown command ${message.cmd}` });
      return;
    }
    Promise.resolve()
      .then(() => handler(message.args))
      .then(
        (value) => send({ type: "ok", id: message.id, value: value ?? null }),
        (error: unknown) => send({ type: "error", id: message.id, error: String(error) }),
      );
  });
  send({ type: "ready", value: ready });
}

export function failStart(error: unknown): void {
  if (process.connected) process.send!({ type: "fatal", error: String(error instanceof Error ? error.stack : error) } satisfies ChildReply);
  process.exit(1);
}
