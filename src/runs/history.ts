// A thread's conversation as AG-UI messages, rebuilt from the kernel's task history (ListTasks of the
// thread's context, GetTask where a listed task carries no history). The agent's status messages are fed as
// frames through the same pipeline the live runs read, so text keeps the kernel's message ids; user messages
// keep the id the gateway sent upstream, which is the client's own. Only text and images leave: the kernel
// echoes each request's metadata (LLM keys, AccessKey secrets, STS tokens; a2a-upstream §2.3) into the
// history, and no metadata is ever copied. The gateway stores none of it.
import { EventType, type Message, type UserMessage } from "@ag-ui/core";
import { from, lastValueFrom, toArray } from "rxjs";
import { createAguiPipeline, RunError, type A2AMessage, type A2APart, type A2AStreamResponse, type A2ATask, type AguiEvent } from "../../operators/index.js";
import { isAgentRole } from "../../operators/lib/a2a-read.js";
import { isObject } from "../../operators/lib/json.js";
import { toRunError } from "../a2a/error-mapping.js";
import { invalidFrame, type PacedUpstream } from "../a2a/index.js";
import { localize, normalizeLanguage, type Language } from "../i18n/index.js";
import { NO_SPAN, type TraceSpan } from "../ops/trace.js";
import type { ThreadRecord } from "../state/thread-store.js";
import { foldMessages } from "./fold-messages.js";
import { IMAGE_MEDIA_TYPES } from "./parts.js";
import { isAnswerMessageId } from "./resume.js";
import type { RunDeps } from "./run-context.js";

export interface HistoryOptions {
  /** The most recent this many messages are returned. */
  maxMessages: number;
  /**
   * The task of a run whose own events the client is about to be given: only its messages up to its last user
   * message (the turn's prompt, or the answer that resumed it) are taken from the history, the rest comes with the run.
   */
  liveTaskId?: string;
  language: Language;
  span?: TraceSpan;
}

/** ListTasks' largest page (A2A 1.0: 1..100). */
const PAGE_SIZE = 100;
// Every text delta is a history message of its own: a long answer is thousands of them.
const HISTORY_LENGTH = 10_000;
/** A kernel that keeps handing out page tokens is not followed past this many pages. */
const MAX_PAGES = 100;

/**
 * The thread's messages, oldest first, the most recent `maxMessages` of them: what an @ag-ui/client agent that
 * watched every run holds, as far as A2A task history tells: user messages and assistant text. Tool calls, their
 * results and reasoning travel only in status-update metadata, which a task's history does not keep.
 * Fails with a RunError: A2A_UNAVAILABLE (kernel down or refusing), A2A_PROTOCOL_ERROR (an unreadable answer).
 */
export async function threadHistory(deps: RunDeps, record: ThreadRecord, options: HistoryOptions): Promise<Message[]> {
  if (options.maxMessages <= 0) return [];
  const kernel = deps.kernel.pacedBy(undefined, options.span ?? NO_SPAN);
  try {
    const listed = await contextTasks(kernel, record.contextId, options.maxMessages);
    // The execution's open task (running, or parked at interrupts) is the thread's newest, whatever its status time
    // says (a working or input-required status may carry none): no new turn starts while one is open.
    const open = record.execution.taskId;
    const tasks = [...listed.filter((t) => t.id !== open), ...listed.filter((t) => t.id === open)];
    const messages: Message[] = [];
    for (const task of tasks) {
      const history = task.history?.length ? task.history : ((await kernel.getTask(task.id!, HISTORY_LENGTH)).history ?? []);
      await foldTask(messages, { ...task, history }, record, options.language, task.id === options.liveTaskId);
    }
    return messages.slice(-options.maxMessages);
  } catch (error) {
    throw toRunError(error, "A2A_UNAVAILABLE");
  }
}

/**
 * The context's tasks, oldest first. The kernel lists newest first (by status time): paging stops once there
 * are as many tasks as messages wanted, each task holding at least its user's message.
 */
async function contextTasks(kernel: PacedUpstream, contextId: string, wanted: number): Promise<A2ATask[]> {
  const tasks: A2ATask[] = [];
  let pageToken: string | undefined;
  for (let page = 0; page < MAX_PAGES && tasks.length < wanted; page++) {
    const listed = await kernel.listTasks({ contextId, pageSize: PAGE_SIZE, historyLength: HISTORY_LENGTH, ...(pageToken && { pageToken }) });
    for (const task of listed.tasks) {
      // Another context's task, or one without an id, is not something this thread said.
      if (typeof task.id !== "string" || task.id === "" || task.contextId !== contextId) throw invalidFrame();
      tasks.push(task);
    }
    pageToken = listed.nextPageToken;
    if (!pageToken) break;
  }
  return tasks.slice(0, wanted).reverse();
}

/** One task's history folded into `messages`: its user messages as they were sent, its agent text projected. */
async function foldTask(messages: Message[], task: A2ATask, record: ThreadRecord, language: Language, live: boolean): Promise<void> {
  const agentFrames: A2AStreamResponse[] = [];
  const flush = async () => {
    foldMessages(messages, await projected(agentFrames.splice(0), task, record, language));
  };
  let shown = "";
  const deltaIds = new Set<string>();
  const all = taskMessages(task);
  const ownMessages = live ? all.slice(0, all.findLastIndex((m) => !isAgentRole(m.role)) + 1) : all;
  for (const message of ownMessages) {
    if (!isAgentRole(message.role)) {
      const user = userMessageOf(message);
      if (user === undefined) continue;
      await flush();
      messages.push(user);
      continue;
    }
    const text = textOf(message);
    if (text === "") continue;
    const id = message.messageId ?? "";
    // The kernel repeats the whole last answer under a new id once it has streamed it (a2a-upstream §3.2 frame 10);
    // live, the frame's metadata says so, and history keeps no metadata: the repeat is known by its text.
    const final = !deltaIds.has(id) && shown.endsWith(text);
    if (!final) {
      deltaIds.add(id);
      shown += text;
    }
    agentFrames.push(statusFrame(task, message, text, final));
  }
  await flush();
}

/** The task's messages in order: its history, then its last status message when the history does not end with it. */
function taskMessages(task: A2ATask): A2AMessage[] {
  const history = task.history ?? [];
  const last = task.status?.message;
  if (last === undefined) return history;
  const tail = history.at(-1);
  const repeated = tail !== undefined && tail.messageId === last.messageId && textOf(tail) === textOf(last);
  return repeated ? history : [...history, last];
}

/** A status frame carrying only the message's text (nothing of the kernel's metadata), as the live stream had it. */
function statusFrame(task: A2ATask, message: A2AMessage, text: string, final: boolean): A2AStreamResponse {
  return {
    statusUpdate: {
      taskId: task.id,
      contextId: task.contextId,
      status: {
        state: "TASK_STATE_WORKING",
        message: { ...(message.messageId && { messageId: message.messageId }), role: "ROLE_AGENT", parts: [{ text }] },
      },
      ...(final && { metadata: { iac_code: { assistantFinal: { complete: true } } } }),
    },
  };
}

/** The frames through the live pipeline as one run; its events, or its RunError when it ends in one. */
async function projected(frames: A2AStreamResponse[], task: A2ATask, record: ThreadRecord, language: Language): Promise<AguiEvent[]> {
  if (frames.length === 0) return [];
  const ending: A2AStreamResponse = { statusUpdate: { taskId: task.id, contextId: task.contextId, status: { state: "TASK_STATE_COMPLETED" } } };
  const events = await lastValueFrom(
    from([...frames, ending]).pipe(
      createAguiPipeline({
        threadId: record.threadId,
        runId: `history-${task.id}`,
        contextId: record.contextId,
        taskId: task.id,
        heartbeat: false,
        translate: (english, lang) => localize(normalizeLanguage(lang) ?? language, english),
        language,
      }),
      toArray(),
    ),
    { defaultValue: [] },
  );
  const wire = events as AguiEvent[];
  const failed = wire.find((event) => event.type === EventType.RUN_ERROR);
  if (failed) throw new RunError(failed.code === "A2A_PROTOCOL_ERROR" ? "A2A_PROTOCOL_ERROR" : "A2A_UNAVAILABLE", failed.message);
  return wire;
}

/** A user message as the client sent it (text, inline images); a resume answer is not a chat message. */
function userMessageOf(message: A2AMessage): UserMessage | undefined {
  const id = message.messageId;
  if (!id || isAnswerMessageId(id)) return undefined;
  const parts = message.parts ?? [];
  if (parts.length === 1 && typeof parts[0]!.text === "string") return { id, role: "user", content: parts[0]!.text };
  const content = parts.flatMap((part) => contentOf(part));
  if (content.length === 0) return undefined;
  return { id, role: "user", content } as UserMessage;
}

function contentOf(part: A2APart): object[] {
  if (typeof part.text === "string") return [{ type: "text", text: part.text }];
  const mediaType = part.mediaType?.toLowerCase();
  if (mediaType && IMAGE_MEDIA_TYPES.has(mediaType) && isObject(part.data) && typeof part.data.bytes === "string") {
    return [{ type: "image", source: { type: "data", value: part.data.bytes, mimeType: mediaType } }];
  }
  return [];
}

function textOf(message: A2AMessage): string {
  let text = "";
  for (const part of message.parts ?? []) if (typeof part.text === "string") text += part.text;
  return text;
}
