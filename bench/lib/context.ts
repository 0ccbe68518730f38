// What every scenario gets from bench/run.ts.
import { pathToFileURL } from "node:url";
import type { GatewayBuild } from "./build.js";
import type { ChildHandle } from "./children.js";

export interface BenchContext {
  quick: boolean;
  /** Write a --cpu-prof profile of the throughput gateway into bench/profiles/. */
  profile: boolean;
  build: GatewayBuild;
  upstream: ChildHandle<{ url: string; port: number }>;
  /** The allowed workspace root and one workspace below it. */
  root: string;
  workspace: string;
  /** A fresh scratch dir for state files. */
  scratch(name: string): Promise<string>;
  log(line: string): void;
}

/** The gateway's own contextId derivation, so the upstream can pre-render the exact stream a thread will get. */
export async function contextIdFor(ctx: BenchContext, threadId: string): Promise<string> {
  const a2a = (await import(pathToFileURL(ctx.build.a2a).href)) as typeof import("../../src/a2a/index.js");
  return a2a.contextIdForThread(threadId);
}
