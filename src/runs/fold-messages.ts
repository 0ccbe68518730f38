// AG-UI events → the messages a client holds after reading them, folded by the rules @ag-ui/client's
// HttpAgent applies (its defaultApplyEvents): a text start on a known id continues that message, a tool
// call joins its parent assistant message (or opens one named after the parent, else after the call), a
// tool result goes right after the assistant message that made the call and the results before it. Reasoning
// is not folded: clients keep their own reasoning messages across a MESSAGES_SNAPSHOT that has none.
import { EventType, type AssistantMessage, type Message, type ToolMessage } from "@ag-ui/core";
import type { AguiEvent } from "../../operators/index.js";

/** Folds `events` into `messages` (oldest first), in place, as the client does into its own list. */
export function foldMessages(out: Message[], events: Iterable<AguiEvent>): void {
  // Indexes, not scans: a long answer is thousands of deltas.
  const byId = new Map(out.map((m) => [m.id, m]));
  const holders = new Map<string, AssistantMessage>();
  for (const m of out) if (m.role === "assistant") for (const call of m.toolCalls ?? []) holders.set(call.id, m);
  const add = (message: Message) => {
    out.push(message);
    byId.set(message.id, message);
  };
  for (const event of events) {
    switch (event.type) {
      case EventType.TEXT_MESSAGE_START:
        if (!byId.has(event.messageId)) add({ id: event.messageId, role: "assistant", content: "" });
        break;
      case EventType.TEXT_MESSAGE_CONTENT: {
        const message = byId.get(event.messageId);
        if (message?.role === "assistant") message.content = (message.content ?? "") + event.delta;
        break;
      }
      case EventType.TOOL_CALL_START: {
        if (holders.has(event.toolCallId)) break;
        const parent = event.parentMessageId !== undefined ? byId.get(event.parentMessageId) : undefined;
        let holder: AssistantMessage;
        if (parent?.role === "assistant") {
          holder = parent;
        } else {
          holder = { id: parent ? event.toolCallId : (event.parentMessageId ?? event.toolCallId), role: "assistant", toolCalls: [] };
          add(holder);
        }
        (holder.toolCalls ??= []).push({ id: event.toolCallId, type: "function", function: { name: event.toolCallName, arguments: "" } });
        holders.set(event.toolCallId, holder);
        break;
      }
      case EventType.TOOL_CALL_ARGS: {
        const call = holders.get(event.toolCallId)?.toolCalls?.find((c) => c.id === event.toolCallId);
        if (call) call.function.arguments += event.delta;
        break;
      }
      case EventType.TOOL_CALL_RESULT: {
        const result: ToolMessage = { id: event.messageId, role: "tool", content: event.content, toolCallId: event.toolCallId };
        byId.set(result.id, result);
        const holder = holders.get(event.toolCallId);
        if (!holder) {
          out.push(result);
          break;
        }
        let at = out.indexOf(holder) + 1;
        while (at < out.length && out[at]!.role === "tool") at++;
        out.splice(at, 0, result);
        break;
      }
    }
  }
}
