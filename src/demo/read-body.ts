// Request bodies of the loopback fakes (demo kernel, raw fault server, test LLM): read whole, bounded.
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";

/**
 * The gateway admits AG-UI bodies up to 12 MiB, and the JSON-RPC request it makes of one (the prompt in an A2A message)
 * is a little larger: a fake kernel takes all of it, so a prompt the gateway admitted never fails at the kernel.
 */
export const MAX_KERNEL_BODY_BYTES = 16 * 1024 * 1024;

export function readRequestText(req: IncomingMessage | Http2ServerRequest, limit = MAX_KERNEL_BODY_BYTES): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        reject(new Error("request body too large"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      // The request stays open while its stream is answered: these listeners would keep the body for that long.
      req.off("data", onData).off("end", onEnd).off("error", reject).on("error", ignore);
      resolve(Buffer.concat(chunks).toString("utf8"));
    };
    req.on("data", onData).on("end", onEnd).on("error", reject);
  });
}

function ignore(): void {}
