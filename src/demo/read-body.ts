// Request bodies of the loopback fakes (demo kernel, raw fault server, test LLM): read whole, bounded.
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";

export function readRequestText(req: IncomingMessage | Http2ServerRequest, limit = 8 * 1024 * 1024): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new Error("request body too large"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
