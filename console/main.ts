// The console's wiring: form fields → HttpAgent runs against this gateway → the timeline model →
// the two rendered columns. One thread at a time; its HttpAgent keeps messages and pending interrupts.
import "./no-eval.js";
import { HttpAgent, type ResumeEntry } from "@ag-ui/client";
import { byId } from "./dom.js";
import { describeError, envelopeOf } from "./errors.js";
import { applyEvent, newRun, newThreadMemory, recordError, type RunView, type ThreadMemory } from "./timeline.js";
import { renderConversation, renderTimeline } from "./view.js";

const TOKEN_KEY = "agui-console.token";

interface Thread {
  id: string;
  /** One per thread: a resume must repeat the rosInvocationId of the run it answers. */
  rosInvocationId: string;
  agent: HttpAgent;
  runs: RunView[];
  memory: ThreadMemory;
}

const el = {
  token: byId<HTMLInputElement>("token"),
  tokenState: byId<HTMLElement>("token-state"),
  tokenForm: byId<HTMLFormElement>("token-form"),
  tokenClear: byId<HTMLButtonElement>("token-clear"),
  thread: byId<HTMLInputElement>("thread"),
  newThread: byId<HTMLButtonElement>("new-thread"),
  cwd: byId<HTMLInputElement>("cwd"),
  pipeline: byId<HTMLInputElement>("pipeline"),
  language: byId<HTMLSelectElement>("language"),
  prompt: byId<HTMLTextAreaElement>("prompt"),
  composer: byId<HTMLFormElement>("composer"),
  send: byId<HTMLButtonElement>("send"),
  cancel: byId<HTMLButtonElement>("cancel"),
  hint: byId<HTMLElement>("composer-hint"),
  conversation: byId<HTMLElement>("conversation"),
  timeline: byId<HTMLElement>("timeline"),
  demo: byId<HTMLElement>("demo-note"),
};

/** The gateway's root: the page lives at <base>/console. */
const gatewayBase = location.pathname.replace(/\/console\/?(index\.html)?$/, "/").replace(/\/?$/, "/");
const gatewayUrl = new URL(gatewayBase, location.origin).toString();

const answers = new Map<string, { entry: ResumeEntry; label: string }>();
let thread = createThread(newId());
let activeRun: RunView | undefined;
let cancelling = false;

function newId(): string {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  // Plain-http pages off loopback are not a secure context and lack randomUUID.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function createThread(id: string): Thread {
  el.thread.value = id;
  answers.clear();
  return { id, rosInvocationId: newId(), agent: new HttpAgent({ url: gatewayUrl, threadId: id }), runs: [], memory: newThreadMemory() };
}

function token(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}

function headers(): Record<string, string> {
  const result: Record<string, string> = {};
  const bearer = token();
  if (bearer !== "") result.Authorization = `Bearer ${bearer}`;
  if (el.language.value !== "") result["Accept-Language"] = el.language.value;
  return result;
}

function forwardedProps() {
  return {
    iacCode: {
      schemaVersion: 1,
      rosInvocationId: thread.rosInvocationId,
      cwd: el.cwd.value.trim(),
      runMode: el.pipeline.checked ? "pipeline" : "normal",
      ...(el.language.value !== "" && { preferredLanguage: el.language.value }),
    },
  };
}

// --- runs ------------------------------------------------------------------------------------------

async function startRun(run: RunView, resume?: ResumeEntry[]): Promise<void> {
  const agent = thread.agent;
  const owner = thread;
  agent.headers = headers();
  owner.runs.push(run);
  activeRun = run;
  cancelling = false;
  render();
  try {
    await agent.runAgent(
      { runId: run.runId, forwardedProps: forwardedProps(), ...(resume !== undefined && { resume }) },
      {
        onEvent: ({ event }) => {
          adoptRosInvocationId(owner, event);
          applyEvent(owner.memory, run, event);
          render();
        },
      },
    );
    if (run.status === "running") recordError(run, "STREAM_ENDED", "The stream ended without a terminal event.");
  } catch (error) {
    // A RUN_ERROR already told the user what happened; the rejection that follows it says nothing new.
    if (run.error === undefined) {
      const shown = describeError(error);
      if (run.status === "running") recordError(run, shown.code, shown.message);
      if (shown.status === 401) el.token.focus();
    }
  } finally {
    if (!run.sawRunStarted && run.prompt !== undefined) {
      // Refused before the stream began: the prompt never reached the thread, so the agent forgets it too.
      agent.setMessages(agent.messages.slice(0, -1));
    }
    if (activeRun === run) activeRun = undefined;
    cancelling = false;
    render();
  }
}

/**
 * A resume must repeat the execution's rosInvocationId; the session event names it. A thread typed in
 * again after a reload has a new one of its own until the gateway re-shows the pending interrupts.
 */
function adoptRosInvocationId(owner: Thread, event: { type: string }): void {
  const e = event as { type: string; name?: unknown; value?: { rosInvocationId?: unknown } };
  if (e.type !== "CUSTOM" || e.name !== "iac-code.session.v1") return;
  if (typeof e.value?.rosInvocationId === "string" && e.value.rosInvocationId !== "") owner.rosInvocationId = e.value.rosInvocationId;
}

function sendPrompt(text: string): void {
  if (activeRun || pendingInterrupts().length > 0) return;
  thread.agent.addMessage({ id: newId(), role: "user", content: text });
  el.prompt.value = "";
  void startRun(newRun(newId(), text));
}

function pendingInterrupts() {
  return thread.agent.pendingInterrupts;
}

/** Collects one answer per open interrupt; the resume goes out once every interrupt has one. */
function answer(interruptId: string, entry: ResumeEntry, label: string): void {
  if (activeRun) return;
  answers.set(interruptId, { entry, label });
  const pending = pendingInterrupts();
  if (!pending.every((i) => answers.has(i.id))) return render();
  const chosen = pending.map((i) => answers.get(i.id)!);
  answers.clear();
  void startRun(newRun(newId(), undefined, chosen.map((c) => c.label).join(" · ")), chosen.map((c) => c.entry));
}

async function cancelActiveRun(): Promise<void> {
  const run = activeRun;
  if (!run || cancelling) return;
  cancelling = true;
  render();
  if (run.executionId === undefined) {
    // Nothing to name yet (no session event): closing the request is the only cancel there is.
    thread.agent.abortRun();
    return;
  }
  const url = new URL(`extensions/iac-code/v1/executions/${encodeURIComponent(run.executionId)}/cancel`, gatewayUrl);
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...headers() },
      body: JSON.stringify({ threadId: thread.id, rosInvocationId: thread.rosInvocationId }),
    });
    if (!response.ok) {
      const body = await response.text();
      const envelope = envelopeOf(body) ?? { code: `HTTP_${response.status}`, message: body };
      if (activeRun === run) recordError(run, envelope.code, envelope.message);
    }
  } catch (error) {
    const shown = describeError(error);
    if (activeRun === run) recordError(run, shown.code, shown.message);
  } finally {
    cancelling = false;
    render();
  }
}

// --- rendering -------------------------------------------------------------------------------------

let frame = 0;
function render(): void {
  if (frame !== 0) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    draw();
  });
}

function draw(): void {
  const stick = (box: HTMLElement) => box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  const stickConversation = stick(el.conversation);
  const stickTimeline = stick(el.timeline);
  const busy = activeRun !== undefined;
  const answered = new Map([...answers].map(([id, a]) => [id, a.entry]));
  const pending = new Set(pendingInterrupts().map((i) => i.id));
  el.conversation.replaceChildren(...renderConversation(thread.runs, { pending, answers: answered, answer, busy }));
  el.timeline.replaceChildren(...renderTimeline(thread.runs, pending, render));
  if (thread.runs.length === 0) {
    el.timeline.replaceChildren(Object.assign(document.createElement("p"), { className: "empty", textContent: "Events of each run appear here as they stream." }));
  }
  if (stickConversation) el.conversation.scrollTop = el.conversation.scrollHeight;
  if (stickTimeline) el.timeline.scrollTop = el.timeline.scrollHeight;

  const waiting = pendingInterrupts().length > 0;
  el.send.disabled = busy || waiting;
  el.cancel.disabled = !busy || cancelling;
  el.cancel.textContent = cancelling ? "Cancelling…" : "Cancel";
  el.thread.disabled = busy;
  el.newThread.disabled = busy;
  el.hint.textContent = busy
    ? "Running… Cancel stops it."
    : waiting
      ? "The agent is waiting for your answer above."
      : "Enter sends, Shift+Enter adds a line.";
  const saved = token() !== "";
  el.tokenState.textContent = saved ? "token set (this tab only)" : "no token";
  el.tokenState.className = saved ? "token-state set" : "token-state";
  el.tokenClear.disabled = !saved;
}

// --- events ----------------------------------------------------------------------------------------

el.composer.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = el.prompt.value.trim();
  if (text !== "") sendPrompt(text);
});
el.prompt.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    el.composer.requestSubmit();
  }
});
el.cancel.addEventListener("click", () => void cancelActiveRun());
el.newThread.addEventListener("click", () => {
  thread = createThread(newId());
  render();
});
el.thread.addEventListener("change", () => {
  const id = el.thread.value.trim();
  if (id !== "" && id !== thread.id) thread = createThread(id);
  render();
});
el.tokenForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const value = el.token.value.trim();
  // sessionStorage only: the token lives as long as this tab and is never written anywhere else.
  if (value !== "") sessionStorage.setItem(TOKEN_KEY, value);
  el.token.value = "";
  render();
});
el.tokenClear.addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  render();
});

async function loadConfig(): Promise<void> {
  try {
    const response = await fetch(new URL("console/config.json", gatewayUrl));
    const config = (await response.json()) as { cwd?: unknown; demo?: unknown };
    if (typeof config.cwd === "string" && el.cwd.value === "") el.cwd.value = config.cwd;
    el.demo.hidden = config.demo !== true;
  } catch {
    // Without config the fields stay empty; the gateway's INVALID_INPUT will say what is missing.
  }
}

void loadConfig();
render();
