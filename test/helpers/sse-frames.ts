// Drives the A2A SSE frame decoder over byte chunks as the stream reader does (UTF-8 decoded across cuts), and cuts
// a body into such chunks, for tests that cut a body anywhere.
import { StringDecoder } from "node:string_decoder";
import { SseFrameDecoder } from "../../src/a2a/sse-reader.js";

/** The frames decoded from `chunks` (each re-serialized), and the decoder's failure if it stopped on one. */
export function decodeSseChunks(chunks: readonly Buffer[]): { frames: string[]; error?: string } {
  const decoder = new SseFrameDecoder();
  const text = new StringDecoder("utf8");
  const frames: string[] = [];
  const take = () => {
    for (const frame of decoder.take()) frames.push(JSON.stringify(frame));
  };
  for (const chunk of chunks) {
    decoder.feed(text.write(chunk));
    take();
    if (decoder.failure) break;
  }
  if (!decoder.failure) decoder.feed(text.end());
  take();
  return { frames, ...(decoder.failure !== undefined && { error: decoder.failure.message }) };
}

/** `bytes` cut into consecutive chunks of `nextSize()` bytes each (the last one shorter); every byte once, in order. */
export function cutBytes(bytes: Buffer, nextSize: () => number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; ) {
    const size = nextSize();
    chunks.push(bytes.subarray(at, at + size));
    at += size;
  }
  return chunks;
}
