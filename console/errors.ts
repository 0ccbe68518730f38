// Every failure the page can meet, reduced to the code and (gateway-localized) message it shows.
// HttpAgent turns a refused request into Error("HTTP <status>: <body>") with `status` and `payload`.

export interface ShownError {
  code: string;
  message: string;
  status?: number;
}

type Loose = Record<string, unknown>;
const isObject = (v: unknown): v is Loose => typeof v === "object" && v !== null && !Array.isArray(v);

/** The gateway's pre-SSE envelope `{"error":{"code","message"}}`, if that is what `body` is. */
export function envelopeOf(body: unknown): { code: string; message: string } | undefined {
  const parsed = typeof body === "string" ? tryJson(body) : body;
  if (!isObject(parsed) || !isObject(parsed.error)) return undefined;
  const { code, message } = parsed.error;
  if (typeof code !== "string") return undefined;
  return { code, message: typeof message === "string" ? message : "" };
}

export function describeError(error: unknown): ShownError {
  if (!(error instanceof Error)) return { code: "ERROR", message: String(error) };
  const extra = error as Error & { status?: unknown; payload?: unknown };
  const status = typeof extra.status === "number" ? extra.status : undefined;
  const http = /^HTTP (\d{3}): ([\s\S]*)$/.exec(error.message);
  const statusCode = status ?? (http ? Number(http[1]) : undefined);
  const envelope = envelopeOf(extra.payload) ?? (http ? envelopeOf(http[2]) : undefined);
  if (envelope) return { ...envelope, ...(statusCode !== undefined && { status: statusCode }) };
  if (statusCode !== undefined) return { code: `HTTP_${statusCode}`, message: http?.[2] ?? error.message, status: statusCode };
  if (error.name === "AbortError") return { code: "ABORTED", message: "The request was stopped." };
  if (error instanceof TypeError) return { code: "NETWORK_ERROR", message: `The gateway could not be reached (${error.message}).` };
  return { code: error.name === "AGUIError" ? "CLIENT_ERROR" : "ERROR", message: error.message };
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
