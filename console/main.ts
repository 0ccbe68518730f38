// The console's wiring: form fields → HttpAgent runs against this gateway → the timeline model →
// the two rendered columns. One thread at a time; its HttpAgent keeps messages and pending interrupts.
// The thread's id is in the URL: a reload connects to it (POST /connect) and shows the conversation, the run
// still streaming, or the interrupts waiting for an answer. A run stream that breaks is resumed with Last-Event-ID.
import "./no-eval.js";
import { HttpAgent, type BaseEvent, type Message, type ResumeEntry } from "@ag-ui/client";
import { byId, h } from "./dom.js";
import { describeError, envelopeOf } from "./errors.js";
import { DEFAULT_BACKOFF_MS, resilientFetch } from "./reconnect.js";
import { saveBinding, savedBinding, setThreadInUrl, threadIdFromUrl, type ThreadBinding } from "./thread-link.js";
import { applyEvent, newRun, newThreadMemory, recordError, type RunView, type ThreadMemory } from "./timeline.js";
import { renderConversation, renderHistory, renderTimeline } from "./view.js";

const TOKEN_KEY = "agui-console.token";

interface Thread {
  id: string;
  /** One per thread: a resume must repeat the rosInvocationId of the run it answers. */
  rosInvocationId: string;
  /** The gateway knows rosInvocationId as this thread's (a run of it started, or the gateway named it): a connect sends it as proof. */
  bound: boolean;
  agent: HttpAgent;
  runs: RunView[];
  memory: ThreadMemory;
  /** The conversation as the last connect found it (MESSAGES_SNAPSHOT); the conversation column shows it, then runs[historyFrom…]. */
  history: Message[];
  historyFrom: number;
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
const connectUrl = new URL("connect", gatewayUrl).toString();
/** Connects in a row after a connect stream broke before its end. */
const CONNECT_TRIES = 3;

const answers = new Map<string, { entry: ResumeEntry; label: string }>();
const linked = threadIdFromUrl();
let thread = createThread(linked ?? newId(), linked !== undefined ? savedBinding(linked) : undefined);
let activeRun: RunView | undefined;
let cancelling = false;
/** The reconnect under way (1…) while a broken run stream is being resumed; 0 otherwise. */
let reconnecting = 0;
/** Why the active run's stream ended without its terminal event, when a reconnect could not resume it. */
let streamFailure: Error | undefined;
/** A line above the conversation: what the page did on its own (a linked thread that was not found). */
let notice: string | undefined;

function newId(): string {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  // Plain-http pages off loopback are not a secure context and lack randomUUID.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function createThread(id: string, binding?: ThreadBinding): Thread {
  el.thread.value = id;
  answers.clear();
  if (binding) {
    // What the thread's runs sent: a resume must come from the same workspace.
    if (binding.cwd !== "") el.cwd.value = binding.cwd;
    el.pipeline.checked = binding.runMode === "pipeline";
  }
  const agent = new HttpAgent({ url: gatewayUrl, threadId: id });
  agent.fetch = resilientFetch({
    resumable: (url) => url !== connectUrl,
    onReconnect: (attempt) => {
      reconnecting = attempt;
      render();
    },
    onGiveUp: (error) => {
      streamFailure = error;
    },
  });
  return {
    id,
    rosInvocationId: binding?.rosInvocationId ?? newId(),
    bound: binding !== undefined,
    agent,
    runs: [],
    memory: newThreadMemory(),
    history: [],
    historyFrom: 0,
  };
}

/** Keeps what a reload needs to go on with the thread: its binding and workspace. */
function remember(owner: Thread, props: ReturnType<typeof forwardedProps>): void {
  owner.bound = true;
  saveBinding(owner.id, { rosInvocationId: owner.rosInvocationId, cwd: props.iacCode.cwd, runMode: props.iacCode.runMode === "pipeline" ? "pipeline" : "normal" });
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
  const props = forwardedProps();
  agent.headers = headers();
  owner.runs.push(run);
  activeRun = run;
  cancelling = false;
  reconnecting = 0;
  streamFailure = undefined;
  setThreadInUrl(owner.id);
  render();
  let lost = false;
  try {
    await agent.runAgent(
      { runId: run.runId, forwardedProps: props, ...(resume !== undefined && { resume }) },
      {
        onEvent: ({ event }) => {
          reconnecting = 0;
          adoptRosInvocationId(owner, event);
          // The thread exists on the gateway now, bound to this rosInvocationId (or the one the session event named).
          if (event.type === "RUN_STARTED" || isSessionEvent(event)) remember(owner, props);
          applyEvent(owner.memory, run, event);
          render();
        },
      },
    );
    if (run.status === "running" && !streamFailure) recordError(run, "STREAM_ENDED", "The stream ended without a terminal event.");
    if (run.status === "running") throw streamFailure;
  } catch (error) {
    // A RUN_ERROR already told the user what happened; the rejection that follows it says nothing new.
    if (run.error === undefined) {
      const shown = describeError(error);
      if (run.status === "running") recordError(run, shown.code, shown.message);
      if (shown.status === 401) el.token.focus();
      // The stream broke and what it missed is no longer kept: the thread as the gateway has it now instead.
      lost = shown.code === "REPLAY_EXPIRED";
    }
  } finally {
    if (!run.sawRunStarted && run.prompt !== undefined) {
      // Refused before the stream began: the prompt never reached the thread, so the agent forgets it too.
      agent.setMessages(agent.messages.slice(0, -1));
    }
    if (activeRun === run) activeRun = undefined;
    cancelling = false;
    reconnecting = 0;
    render();
  }
  if (lost && thread === owner) await connect(owner, "lost");
}

/**
 * POST /connect: the thread as the gateway has it, as one run of the agent (its MESSAGES_SNAPSHOT becomes the agent's
 * messages, its interrupt outcome the agent's pending interrupts). The snapshot is shown as the conversation; a run
 * still streaming goes on in this run's view; waiting interrupts are shown as cards to answer.
 */
async function connect(owner: Thread, why: "load" | "typed" | "lost" | "token", attempt = 1): Promise<void> {
  if (activeRun) return;
  const agent = owner.agent;
  const run = newRun(newId());
  run.connect = true;
  agent.headers = headers();
  owner.runs.push(run);
  activeRun = run;
  cancelling = false;
  render();
  let broke = false;
  let notFound = false;
  agent.url = connectUrl;
  try {
    await agent.runAgent(
      { runId: run.runId, forwardedProps: connectProps(owner) },
      {
        onEvent: ({ event }) => {
          if (event.type === "MESSAGES_SNAPSHOT") {
            owner.history = (event as BaseEvent & { messages: Message[] }).messages;
            owner.historyFrom = owner.runs.indexOf(run);
          }
          adoptRosInvocationId(owner, event);
          applyEvent(owner.memory, run, event);
          render();
        },
      },
    );
    if (run.status === "running") {
      recordError(run, "STREAM_ENDED", "The stream ended without a terminal event.");
      broke = true;
    }
  } catch (error) {
    if (run.error === undefined) {
      const shown = describeError(error);
      notFound = shown.code === "THREAD_NOT_FOUND";
      if (!notFound && run.status === "running") recordError(run, shown.code, shown.message);
      if (shown.status === 401) el.token.focus();
      broke = shown.code === "NETWORK_ERROR";
    }
  } finally {
    agent.url = gatewayUrl;
    if (activeRun === run) activeRun = undefined;
    cancelling = false;
    render();
  }
  if (thread !== owner) return;
  if (notFound) {
    owner.runs.splice(owner.runs.indexOf(run), 1);
    setThreadInUrl(undefined);
    if (why === "typed") return render(); // a new thread under the id typed in: its first run creates it
    thread = createThread(newId());
    notice = `Thread ${owner.id} was not found on the gateway; this is a new thread.`;
    return render();
  }
  // A connect that lost its stream connects again (nothing is changed by a connect).
  if (broke && attempt < CONNECT_TRIES) {
    await new Promise((resolve) => setTimeout(resolve, DEFAULT_BACKOFF_MS[attempt - 1] ?? 1_000));
    if (thread === owner) await connect(owner, why, attempt + 1);
  }
}

function connectProps(owner: Thread) {
  return {
    iacCode: {
      schemaVersion: 1,
      // Proof of the binding; without one the gateway lets only the token's holder or the thread's owner in.
      ...(owner.bound && { rosInvocationId: owner.rosInvocationId }),
      ...(el.language.value !== "" && { preferredLanguage: el.language.value }),
    },
  };
}

/**
 * A resume must repeat the execution's rosInvocationId; the session event names it. A thread typed in
 * again after a reload has a new one of its own until the gateway re-shows the pending interrupts.
 */
function adoptRosInvocationId(owner: Thread, event: { type: string }): void {
  if (!isSessionEvent(event)) return;
  const e = event as { value?: { rosInvocationId?: unknown } };
  if (typeof e.value?.rosInvocationId === "string" && e.value.rosInvocationId !== "") {
    owner.rosInvocationId = e.value.rosInvocationId;
    owner.bound = true;
  }
}

function isSessionEvent(event: { type: string }): boolean {
  const e = event as { type: string; name?: unknown };
  return e.type === "CUSTOM" && e.name === "iac-code.session.v1";
}

function sendPrompt(text: string): void {
  if (activeRun || pendingInterrupts().length > 0) return;
  thread.agent.addMessage({ id: newId(), role: "user", content: text });
  el.prompt.value = "";
  notice = undefined;
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
  el.conversation.replaceChildren(
    ...(notice !== undefined ? [h("p", { class: "note notice" }, notice)] : []),
    ...renderHistory(thread.history),
    ...renderConversation(thread.runs.slice(thread.historyFrom), { pending, answers: answered, answer, busy }),
  );
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
  el.hint.textContent = reconnecting > 0
    ? `Connection lost; reconnecting (try ${reconnecting} of ${DEFAULT_BACKOFF_MS.length})…`
    : activeRun?.connect
      ? activeRun.items.length > 0
        ? "Following the turn that is still running… Cancel stops it."
        : "Connecting to the thread…"
      : busy
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
  notice = undefined;
  // A new thread exists on the gateway once its first run starts; the URL names it from then on.
  setThreadInUrl(undefined);
  render();
});
el.thread.addEventListener("change", () => {
  const id = el.thread.value.trim();
  if (id === "" || id === thread.id) return render();
  thread = createThread(id, savedBinding(id));
  notice = undefined;
  setThreadInUrl(id);
  void connect(thread, "typed");
});
el.tokenForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const value = el.token.value.trim();
  // sessionStorage only: the token lives as long as this tab and is never written anywhere else.
  if (value !== "") sessionStorage.setItem(TOKEN_KEY, value);
  el.token.value = "";
  // A linked thread the gateway refused to show without a token: show it now.
  const last = thread.runs.at(-1);
  if (!activeRun && last?.connect && last.error?.code === "UNAUTHORIZED") void connect(thread, "token");
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
if (linked !== undefined) void connect(thread, "load");
render();
