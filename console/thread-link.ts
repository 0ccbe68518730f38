// The thread the page shows lives in its URL (`?thread=<id>`), so a reload (or a copied tab) finds it again. What a
// later request must repeat — the rosInvocationId that binds the thread, and its workspace — is kept per thread in
// sessionStorage: like the token, it lives as long as the tab and is written nowhere else.

const PARAM = "thread";
const BINDING_KEY = (threadId: string) => `agui-console.thread.${threadId}`;

export interface ThreadBinding {
  rosInvocationId: string;
  cwd: string;
  runMode: "normal" | "pipeline";
}

/** The thread id in the page's URL, if any. */
export function threadIdFromUrl(): string | undefined {
  const id = new URL(location.href).searchParams.get(PARAM)?.trim();
  return id ? id : undefined;
}

/** Puts `threadId` in the URL (or takes it out), without a navigation or a new history entry. */
export function setThreadInUrl(threadId: string | undefined): void {
  const url = new URL(location.href);
  if ((url.searchParams.get(PARAM) ?? undefined) === threadId) return;
  if (threadId === undefined) url.searchParams.delete(PARAM);
  else url.searchParams.set(PARAM, threadId);
  history.replaceState(history.state, "", url);
}

export function savedBinding(threadId: string): ThreadBinding | undefined {
  try {
    const parsed = JSON.parse(sessionStorage.getItem(BINDING_KEY(threadId)) ?? "null") as Partial<ThreadBinding> | null;
    if (typeof parsed?.rosInvocationId !== "string" || parsed.rosInvocationId === "") return undefined;
    return { rosInvocationId: parsed.rosInvocationId, cwd: typeof parsed.cwd === "string" ? parsed.cwd : "", runMode: parsed.runMode === "pipeline" ? "pipeline" : "normal" };
  } catch {
    return undefined;
  }
}

export function saveBinding(threadId: string, binding: ThreadBinding): void {
  try {
    sessionStorage.setItem(BINDING_KEY(threadId), JSON.stringify(binding));
  } catch {
    // Storage full or refused: a reload then connects without the binding (a token-holding caller needs none).
  }
}
