// A refused body is drained one chunk per turn of the event loop: a hundred refused uploads drained at full speed held
// the loop for whole batches of reads, and every other request (/health among them) waited behind them.
import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { drainUnreadBody } from "../src/http/body.js";

/** A request whose connection closes with the answer, with `chunks` of its body already read from the socket. */
function refusedRequest(chunks: number): Readable & IncomingMessage {
  const req = new Readable({ read() {} }) as Readable & IncomingMessage;
  Object.assign(req, { headers: { connection: "close" }, httpVersion: "1.1", socket: { destroySoon() {} } });
  for (let i = 0; i < chunks; i++) req.push(Buffer.alloc(64 * 1024));
  return req;
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("draining a refused body", () => {
  it("takes one chunk per turn of the event loop, and reads it all", async () => {
    const req = refusedRequest(200);
    const drained = drainUnreadBody(req, 0);
    const left: number[] = [];
    for (let i = 0; i < 5; i++) {
      await turn();
      left.push(req.readableLength / (64 * 1024));
    }
    // Without the pacing the first turn already finds all 200 chunks read.
    expect(left[0]).toBeGreaterThan(190);
    for (let i = 1; i < left.length; i++) expect(left[i - 1]! - left[i]!).toBeLessThanOrEqual(2);
    req.push(null);
    await drained;
    expect(req.readableLength).toBe(0);
  });
});
