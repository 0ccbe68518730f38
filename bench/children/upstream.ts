// Child: the bench's fake A2A kernel (bench/lib/upstream.ts).
import { childArgs, failStart, serveParent } from "../lib/child-ipc.js";
import { startBenchUpstream } from "../lib/upstream.js";

try {
  const upstream = await startBenchUpstream(childArgs<{ port?: number; http2?: boolean }>());
  serveParent({ url: upstream.url, port: upstream.port }, {
    stats: () => upstream.stats(),
    prepare: (args: { contextId: string; frames: number }) => upstream.prepare(args.contextId, args.frames),
  }, () => upstream.close());
} catch (error) {
  failStart(error);
}
