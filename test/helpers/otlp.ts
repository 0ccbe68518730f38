// A real OTLP/HTTP trace receiver on 127.0.0.1: it takes what the gateway's exporter POSTs to /v1/traces (OTLP
// JSON, gzip or not), keeps every raw body (for secret scans) and decodes the spans into plain objects.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { expect } from "vitest";

export type AttributeValue = string | number | boolean | readonly AttributeValue[];

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** undefined for a root span. */
  parentSpanId: string | undefined;
  name: string;
  kind: "internal" | "server" | "client" | "producer" | "consumer" | "unspecified";
  startMs: number;
  endMs: number;
  attributes: Record<string, AttributeValue>;
  events: { name: string; timeMs: number; attributes: Record<string, AttributeValue> }[];
  links: { traceId: string; spanId: string }[];
  /** "error" with the code as message, or "unset". */
  status: { code: "unset" | "ok" | "error"; message?: string };
  /** The resource's service.name. */
  service: string;
}

export interface OtlpReceiver {
  /** What OTEL_EXPORTER_OTLP_ENDPOINT would be set to. */
  endpoint: string;
  /** The traces path: `${endpoint}/v1/traces`. */
  tracesUrl: string;
  spans: ReceivedSpan[];
  /** Every body as received (decompressed), for scans over all that left the gateway. */
  bodies: string[];
  /** Resolves with the first span `match` accepts, once it has arrived (fails after `timeoutMs`). */
  span(match: (span: ReceivedSpan) => boolean, what: string, timeoutMs?: number): Promise<ReceivedSpan>;
  close(): Promise<void>;
}

const KINDS = ["unspecified", "internal", "server", "client", "producer", "consumer"] as const;
const STATUS = ["unset", "ok", "error"] as const;

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      let raw = Buffer.concat(chunks);
      if (req.headers["content-encoding"] === "gzip") raw = gunzipSync(raw);
      const text = raw.toString("utf8");
      bodies.push(text);
      try {
        spans.push(...decode(JSON.parse(text)));
      } catch {
        res.writeHead(400, { "Content-Type": "application/json" }).end("{}");
        return;
      }
      res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint,
    tracesUrl: `${endpoint}/v1/traces`,
    spans,
    bodies,
    span: async (match, what, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = spans.find(match);
        if (found) return found;
        expect(Date.now() < deadline, `a span arrives: ${what} (received: ${spans.map((s) => s.name).join(", ")})`).toBe(true);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

type Json = Record<string, unknown>;

function decode(request: unknown): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const resourceSpans of ((request as Json).resourceSpans ?? []) as Json[]) {
    const resource = attributesOf(((resourceSpans.resource as Json | undefined)?.attributes ?? []) as Json[]);
    for (const scope of (resourceSpans.scopeSpans ?? []) as Json[]) {
      for (const span of (scope.spans ?? []) as Json[]) {
        const parent = span.parentSpanId as string | undefined;
        out.push({
          traceId: span.traceId as string,
          spanId: span.spanId as string,
          parentSpanId: parent === undefined || parent === "" ? undefined : parent,
          name: span.name as string,
          kind: KINDS[Number(span.kind ?? 0)] ?? "unspecified",
          startMs: nanosToMs(span.startTimeUnixNano),
          endMs: nanosToMs(span.endTimeUnixNano),
          attributes: attributesOf((span.attributes ?? []) as Json[]),
          events: ((span.events ?? []) as Json[]).map((e) => ({
            name: e.name as string,
            timeMs: nanosToMs(e.timeUnixNano),
            attributes: attributesOf((e.attributes ?? []) as Json[]),
          })),
          links: ((span.links ?? []) as Json[]).map((l) => ({ traceId: l.traceId as string, spanId: l.spanId as string })),
          status: {
            code: STATUS[Number((span.status as Json | undefined)?.code ?? 0)] ?? "unset",
            ...(typeof (span.status as Json | undefined)?.message === "string" && { message: (span.status as Json).message as string }),
          },
          service: String(resource["service.name"] ?? ""),
        });
      }
    }
  }
  return out;
}

function attributesOf(list: Json[]): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const { key, value } of list as { key: string; value: Json }[]) out[key] = valueOf(value);
  return out;
}

function valueOf(value: Json): AttributeValue {
  if ("stringValue" in value) return value.stringValue as string;
  if ("boolValue" in value) return value.boolValue as boolean;
  if ("intValue" in value) return Number(value.intValue);
  if ("doubleValue" in value) return Number(value.doubleValue);
  if ("arrayValue" in value) return (((value.arrayValue as Json).values ?? []) as Json[]).map(valueOf);
  return JSON.stringify(value);
}

function nanosToMs(nanos: unknown): number {
  return Number(BigInt(String(nanos ?? 0)) / 1_000_000n);
}

/** The spans whose parent is `span`. */
export function childrenOf(spans: readonly ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] {
  return spans.filter((s) => s.parentSpanId === span.spanId && s.traceId === span.traceId);
}

/** Every span under `root` (children, their children…), root excluded. */
export function descendantsOf(spans: readonly ReceivedSpan[], root: ReceivedSpan): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const children = childrenOf(spans, queue.shift()!);
    out.push(...children);
    queue.push(...children);
  }
  return out;
}

/** A W3C traceparent for a caller's span of our own making: version 00, sampled. */
export function callerTraceparent(): { header: string; traceId: string; spanId: string } {
  const hex = (bytes: number) => [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
  const traceId = hex(16);
  const spanId = hex(8);
  return { header: `00-${traceId}-${spanId}-01`, traceId, spanId };
}
