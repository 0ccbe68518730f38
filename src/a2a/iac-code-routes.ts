// The iac-code REST extension routes beside the JSON-RPC endpoint (a2a-upstream §5.5): plain JSON over
// the client's connection pool and headers, failures classified as the JSON-RPC calls' are.
import { request, type Dispatcher } from "undici";
import { RunError } from "../../operators/types.js";
import { isSuccess, parseJson, readText, tryParseJson } from "./bodies.js";
import { a2aUnavailable, classify } from "./errors.js";
import { invalidFrame } from "./frames.js";
import { messageText } from "../i18n/index.js";
import { isObject } from "../../operators/lib/json.js";

/** What a route call borrows from the client. */
export interface RestTransport {
  /** The A2A base URL, ending in "/"; route paths resolve against it. */
  base: URL;
  dispatcher: Dispatcher;
  /** A2A-Version and Authorization. */
  headers: Readonly<Record<string, string>>;
  timeoutMs: number;
}

export interface PipelineState {
  snapshot?: unknown;
  events?: unknown[];
}

/** iac-code pipeline recovery (a2a-upstream §5.5); null (404) = nothing known for that task. */
export async function fetchPipelineState(transport: RestTransport, taskId: string, afterSequence: number): Promise<PipelineState | null> {
  const url = new URL("iac-code/pipeline/state", transport.base);
  url.searchParams.set("taskId", taskId);
  url.searchParams.set("afterSequence", String(afterSequence));
  const body = await rest(transport, url, "GET", undefined, [404]);
  if (body.status === 404) return null;
  const state = body.json;
  if (!isObject(state) || (state.events !== undefined && !Array.isArray(state.events))) throw invalidFrame();
  return state as PipelineState;
}

/**
 * iac-code explicit session restore (newer kernels); false (404 not_found) = the session cannot be restored.
 * "unsupported" when the kernel has no such route (iac-code 0.13 and plain A2A servers): the session
 * then lives as long as the kernel process, and GetTask is the only check left.
 */
export async function requestSessionRestore(
  transport: RestTransport,
  body: { cwd: string; sessionId: string; taskId?: string },
): Promise<boolean | "unsupported"> {
  const url = new URL("iac-code/session/ensure-restored", transport.base);
  const reply = await rest(transport, url, "POST", JSON.stringify(body), [404, 409]);
  if (reply.status === 404) return isObject(reply.json) && reply.json.status === "not_found" ? false : "unsupported";
  if (reply.status === 409) {
    const error = isObject(reply.json) ? reply.json.error : undefined;
    if (isObject(error) && error.code === "SESSION_BACKUP_NOT_READY" && error.retryable === true) {
      throw new RunError("SESSION_BACKUP_NOT_READY", messageText("a2a.sessionBackupNotReady"));
    }
    throw a2aUnavailable();
  }
  const status = isObject(reply.json) ? reply.json.status : undefined;
  if (status !== "current" && status !== "restored") throw invalidFrame();
  return true;
}

/** One plain-JSON call; statuses in `expected` are returned to the caller instead of failing. */
async function rest(
  transport: RestTransport,
  url: URL,
  method: "GET" | "POST",
  body: string | undefined,
  expected: number[],
): Promise<{ status: number; json: unknown }> {
  try {
    const headers: Record<string, string> = { ...transport.headers, Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const res = await request(url, {
      dispatcher: transport.dispatcher,
      method,
      headers,
      body,
      headersTimeout: transport.timeoutMs,
      bodyTimeout: transport.timeoutMs,
    });
    if (!isSuccess(res.statusCode) && !expected.includes(res.statusCode)) {
      res.body.dump().catch(() => undefined);
      throw a2aUnavailable();
    }
    const text = await readText(res.body);
    // Error statuses may come with an empty or non-JSON body; only a success body must parse.
    if (!isSuccess(res.statusCode)) return { status: res.statusCode, json: tryParseJson(text) };
    return { status: res.statusCode, json: parseJson(text) };
  } catch (error) {
    throw classify(error);
  }
}
