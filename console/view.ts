// Renders runs into the two columns: the conversation (prompts, replies, interrupts, errors) and the
// timeline (everything the stream said, in order). Re-rendered whole on each animation frame; the
// open/closed state of collapsibles lives in the model so a re-render keeps it.
import type { Message, ResumeEntry } from "@ag-ui/client";
import { h } from "./dom.js";
import { interruptForm, type InterruptChoice } from "./interrupts.js";
import {
  candidateLabel,
  prettyJson,
  replies,
  type Badge,
  type CandidateNode,
  type PipelineTree,
  type Reply,
  type RunView,
  type StepNode,
  type TimelineItem,
} from "./timeline.js";

export interface ConversationActions {
  /** Interrupts the thread still waits on (a refused resume leaves them open, so their cards stay live). */
  pending: ReadonlySet<string>;
  /** Answers of the interrupts still waiting, by interrupt id. */
  answers: ReadonlyMap<string, ResumeEntry>;
  /** `label` is what the user picked, as shown on the button (or what they typed). */
  answer(interruptId: string, entry: ResumeEntry, label: string): void;
  busy: boolean;
}

const STATUS_TEXT: Record<RunView["status"], string> = {
  running: "running",
  success: "finished",
  interrupt: "waiting for you",
  cancelled: "cancelled",
  error: "error",
};

export function renderConversation(runs: readonly RunView[], actions: ConversationActions): Node[] {
  const nodes: Node[] = [];
  for (const run of runs) {
    if (run.prompt !== undefined) nodes.push(h("div", { class: "bubble user" }, run.prompt));
    if (run.answer !== undefined) nodes.push(h("div", { class: "bubble user answer" }, run.answer));
    const shown = replies(run);
    nodes.push(...replyBubbles(shown));
    if (shown.length === 0 && run.status === "running") nodes.push(h("div", { class: "bubble assistant pending" }, "…"));
    if (run.error) nodes.push(errorCard(run.error.code, run.error.message));
    if (run.status === "cancelled" && !run.error) nodes.push(h("div", { class: "note" }, "The run was cancelled."));
    if (run.status === "interrupt") {
      for (const interrupt of run.interrupts) nodes.push(interruptCard(interrupt, actions.pending.has(interrupt.id) ? actions : undefined));
    }
  }
  return nodes;
}

/**
 * The conversation as a connect found it (MESSAGES_SNAPSHOT): the user's messages and the assistant's text, in
 * order. Tool calls and reasoning are not in a thread's history, so they are not shown here.
 */
export function renderHistory(messages: readonly Message[]): Node[] {
  const nodes: Node[] = [];
  for (const message of messages) {
    const text = messageText(message).trim();
    if (text === "") continue;
    if (message.role === "user") nodes.push(h("div", { class: "bubble user history", "data-message-id": message.id }, text));
    else if (message.role === "assistant") {
      nodes.push(h("div", { class: "bubble assistant history", "data-message-id": message.id }, h("div", { class: "reply-text" }, text)));
    }
  }
  return nodes;
}

function messageText(message: Message): string {
  const content = (message as { content?: unknown }).content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) => (typeof part === "object" && part !== null && (part as { type?: unknown }).type === "text" ? String((part as { text?: unknown }).text ?? "") : ""))
    .filter((t) => t !== "")
    .join("\n");
}

/**
 * One bubble per message. Candidates' messages that started one after another stand side by side in
 * one row, each under its candidate's label, like the candidate cards in the timeline.
 */
function replyBubbles(shown: Reply[]): Node[] {
  const nodes: Node[] = [];
  let row: HTMLElement | undefined;
  for (const reply of shown) {
    const bubble = h(
      "div",
      { class: `bubble assistant${reply.streaming ? " streaming" : ""}${reply.candidate ? " candidate-reply" : ""}`, "data-message-id": reply.messageId, ...(reply.candidate && { "data-candidate": reply.candidate.id }) },
      reply.candidate && h("div", { class: "reply-label" }, reply.candidate.label),
      h("div", { class: "reply-text" }, reply.text),
    );
    if (!reply.candidate) {
      row = undefined;
      nodes.push(bubble);
      continue;
    }
    if (!row) {
      row = h("div", { class: "candidate-replies" });
      nodes.push(row);
    }
    row.append(bubble);
  }
  return nodes;
}

export function errorCard(code: string, message: string): HTMLElement {
  return h("div", { class: "error-card", role: "alert", "data-code": code }, h("span", { class: "code" }, code), h("span", { class: "message" }, message));
}

function interruptCard(interrupt: RunView["interrupts"][number], actions: ConversationActions | undefined): HTMLElement {
  const form = interruptForm(interrupt);
  const answered = actions?.answers.get(form.id);
  const live = actions !== undefined && answered === undefined && !actions.busy;
  const send = (entry: ResumeEntry, label: string) => actions?.answer(form.id, entry, label);
  const choiceButton = (choice: InterruptChoice) =>
    h(
      "button",
      {
        type: "button",
        class: `choice ${choice.tone}`,
        disabled: !live,
        onclick: () => send({ interruptId: form.id, status: "resolved", payload: choice.payload }, choice.label),
      },
      choice.label,
    );
  let textForm: HTMLElement | undefined;
  if (form.text) {
    const input = h("input", { type: "text", placeholder: form.text.label, "aria-label": form.text.label, disabled: !live });
    const field = form.text.field;
    textForm = h(
      "form",
      {
        class: "free-text",
        onsubmit: (event: Event) => {
          event.preventDefault();
          const value = input.value.trim();
          if (value !== "") send({ interruptId: form.id, status: "resolved", payload: { [field]: value } }, value);
        },
      },
      input,
      h("button", { type: "submit", class: "choice neutral", disabled: !live }, "Send"),
    );
  }
  return h(
    "section",
    { class: `interrupt ${form.kind}${live ? "" : " settled"}`, "data-interrupt-id": form.id },
    h("header", {}, h("span", { class: "kind" }, form.kind.replace(/_/g, " ")), h("strong", {}, form.title)),
    form.message !== "" && h("p", { class: "prompt" }, form.message),
    form.details.length > 0 && h("dl", {}, form.details.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    h("div", { class: "choices" }, form.choices.map(choiceButton)),
    textForm,
    answered
      ? h("p", { class: "answered" }, "Answered; waiting for the other requests above.")
      : live &&
          h(
            "button",
            { type: "button", class: "link", onclick: () => send({ interruptId: form.id, status: "cancelled" }, "Cancelled") },
            "Dismiss (cancel this request)",
          ),
    form.expiresAt !== undefined && h("p", { class: "expires" }, `Expires ${new Date(form.expiresAt).toLocaleString()}`),
  );
}

// --- timeline --------------------------------------------------------------------------------------

export function renderTimeline(runs: readonly RunView[], pending: ReadonlySet<string>, onToggle: () => void): Node[] {
  return runs.map((run) => {
    const answered = run.status === "interrupt" && !run.interrupts.some((i) => pending.has(i.id));
    return h(
      "article",
      { class: `run ${run.status}`, "data-run-id": run.runId, "data-status": run.status },
      h(
        "header",
        {},
        h("span", { class: "run-kind" }, run.connect ? "connect" : run.prompt !== undefined ? "prompt" : "resume"),
        h("code", { class: "run-id", title: "runId" }, run.runId.slice(0, 8)),
        run.executionId !== undefined && h("code", { class: "exec-id", title: `executionId ${run.executionId}` }, `exec ${run.executionId.slice(0, 8)}`),
        h("span", { class: `status ${run.status}${answered ? " answered" : ""}` }, answered ? "answered" : STATUS_TEXT[run.status]),
      ),
      run.items.map((item) => timelineItem(item, run, onToggle)),
    );
  });
}

function collapsible(item: { open: boolean }, onToggle: () => void, cls: string, summary: Node[], body: Node): HTMLElement {
  const details = h("details", { class: cls, open: item.open }, h("summary", {}, summary), body);
  details.addEventListener("toggle", () => {
    if (item.open !== details.open) {
      item.open = details.open;
      onToggle();
    }
  });
  return details;
}

/** The candidate chip on a message row, and the attributes that tie the row to its message. */
function messageCoordinates(item: Extract<TimelineItem, { kind: "text" | "reasoning" }>, run: RunView) {
  const attrs = { "data-message-id": item.messageId, ...(item.candidate !== undefined && { "data-candidate": item.candidate }) };
  const chip = item.candidate !== undefined && h("span", { class: "who" }, candidateLabel(run, item.candidate));
  return { attrs, chip };
}

function timelineItem(item: TimelineItem, run: RunView, onToggle: () => void): Node | false {
  const tree = run.pipeline;
  switch (item.kind) {
    case "text": {
      // A message opened by TEXT_MESSAGE_START holds its place in the order; shown once it says something.
      if (item.text === "") return false;
      const { attrs, chip } = messageCoordinates(item, run);
      return h("div", { class: `ev text${item.streaming ? " streaming" : ""}`, ...attrs }, h("span", { class: "tag" }, "text"), chip, h("span", { class: "body" }, item.text));
    }
    case "reasoning": {
      if (item.text === "") return false;
      const { attrs, chip } = messageCoordinates(item, run);
      const preview = item.text.length > 90 ? `${item.text.slice(0, 87)}…` : item.text;
      const details = collapsible(item, onToggle, "ev reasoning", [h("span", { class: "tag" }, "reasoning"), ...(chip ? [chip] : []), h("span", { class: "preview" }, preview)], h("pre", {}, item.text));
      for (const [name, value] of Object.entries(attrs)) details.setAttribute(name, value);
      return details;
    }
    case "tool":
      return collapsible(
        item,
        onToggle,
        `ev tool ${item.status}`,
        [h("span", { class: "tag" }, "tool"), h("code", { class: "tool-name" }, item.name), h("span", { class: "tool-state" }, item.status === "done" ? "✓ result" : item.status === "called" ? "called" : "…")],
        h(
          "div",
          { class: "tool-body" },
          item.args !== "" && h("div", {}, h("div", { class: "label" }, "arguments"), h("pre", { class: "args" }, prettyJson(item.args))),
          item.result !== undefined && h("div", {}, h("div", { class: "label" }, "result"), h("pre", { class: "result" }, item.result)),
        ),
      );
    case "badges":
      return h("div", { class: "ev badges" }, item.badges.map(badge));
    case "steps":
      return tree ? pipelineTree(tree) : h("div");
    case "activity":
      return collapsible(item, onToggle, "ev activity", [h("span", { class: "tag" }, "activity"), h("code", {}, item.activityType)], h("pre", {}, JSON.stringify(item.content, null, 2)));
    case "usage":
      return h(
        "div",
        { class: "ev usage" },
        h("span", { class: "tag" }, "usage"),
        item.entries.map((u) =>
          h(
            "span",
            { class: "usage-entry" },
            [u.provider, u.model].filter(Boolean).join(" / "),
            h("b", {}, `${u.inputTokens}`),
            " in · ",
            h("b", {}, `${u.outputTokens}`),
            " out · ",
            h("b", {}, `${u.totalTokens}`),
            " total",
            u.cachedInputTokens > 0 ? ` · ${u.cachedInputTokens} cached` : "",
          ),
        ),
      );
    case "error":
      return h("div", { class: "ev error" }, h("span", { class: "tag" }, "error"), errorCard(item.code, item.message));
  }
}

function badge(b: Badge): HTMLElement {
  return h("span", { class: `badge ${b.tone}`, title: b.detail }, b.label);
}

function pipelineTree(tree: PipelineTree): HTMLElement {
  return h(
    "div",
    { class: "ev pipeline" },
    h("div", { class: "tag" }, "pipeline"),
    h("ol", { class: "steps" }, tree.steps.map(stepNode)),
    tree.loose.length > 0 && candidates(tree.loose),
  );
}

function stepNode(step: StepNode): HTMLElement {
  return h(
    "li",
    { class: `step ${step.status}`, "data-step": step.name },
    h("span", { class: "dot" }),
    h("span", { class: "step-label" }, step.label),
    step.candidates.length > 0 && candidates(step.candidates),
  );
}

function candidates(list: CandidateNode[]): HTMLElement {
  return h(
    "div",
    { class: "candidates" },
    list.map((c) =>
      h(
        "div",
        { class: `candidate ${c.status}`, "data-candidate": c.id },
        h("div", { class: "candidate-label" }, c.label),
        h("ol", { class: "steps" }, c.steps.map(stepNode)),
      ),
    ),
  );
}
