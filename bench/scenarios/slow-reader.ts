// slowReader: one client reads 1 KB/s from the gateway while the upstream offers hundreds of MB as fast
// as it can. Bounded = the gateway's RSS grows < 100 MB and the upstream is left blocked on a full
// socket (backpressure reached its write). A raw socket, so the client reads exactly what it asks for.
import { connect, type Socket } from "node:net";
import type { BenchContext } from "../lib/context.js";
import { MB, round, sleep } from "../lib/stats.js";
import type { System } from "../lib/systems.js";
import { benchPrompt, type FloodStats } from "../lib/upstream.js";

export interface SlowReaderResult {
  slowReader: { bounded: boolean; peakRssMB: number };
  detail: Record<string, unknown>;
}

export async function slowReader(ctx: BenchContext, gateway: System): Promise<SlowReaderResult> {
  const seconds = ctx.quick ? 20 : 60;
  const offered = (ctx.quick ? 300 : 600) * MB;
  const child = gateway.child!;
  const baseline = await child.rssBytes();
  const { body } = await gateway.request(benchPrompt({ mode: "flood", bytes: offered }));
  const url = new URL(gateway.url);
  const socket: Socket = connect({ host: "127.0.0.1", port: Number(url.port) });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.on("error", () => undefined);
  socket.pause();
  socket.write(
    `POST / HTTP/1.1\r\nHost: 127.0.0.1:${url.port}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  let read = 0;
  let head = "";
  let peak = baseline;
  const samples: number[] = [];
  try {
    for (let second = 0; second < seconds; second++) {
      await sleep(1000);
      const chunk = socket.read(1024) as Buffer | null ?? (socket.readableLength > 0 ? (socket.read(Math.min(1024, socket.readableLength)) as Buffer | null) : null);
      if (chunk) {
        read += chunk.length;
        if (head.length < 200) head += chunk.toString("utf8");
      }
      const rss = await child.rssBytes();
      samples.push(round(rss / MB, 1));
      peak = Math.max(peak, rss);
    }
    const flood = (await ctx.upstream.call<{ flood: FloodStats | undefined }>("stats")).flood;
    if (!head.startsWith("HTTP/1.1 200")) throw new Error(`slow reader: unexpected response ${JSON.stringify(head.slice(0, 120))}`);
    if (!flood) throw new Error("slow reader: the upstream saw no flood request");
    const growthMB = (peak - baseline) / MB;
    const backedUp = flood.waitingForDrain && flood.writtenBytes < flood.offeredBytes;
    return {
      slowReader: { bounded: growthMB < 100 && backedUp, peakRssMB: round(peak / MB, 1) },
      detail: {
        seconds,
        baselineRssMB: round(baseline / MB, 1),
        rssGrowthMB: round(growthMB, 1),
        clientReadBytes: read,
        upstreamOfferedMB: round(flood.offeredBytes / MB, 1),
        upstreamWrittenMB: round(flood.writtenBytes / MB, 1),
        upstreamWaitingForDrain: flood.waitingForDrain,
        rssSamplesMB: samples,
      },
    };
  } finally {
    socket.destroy();
  }
}
