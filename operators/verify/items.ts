// Streamed items (text messages, tool calls, reasoning messages and spans): opened, continued and closed in order,
// by their owner, reopened only as they were; whichever spelling (explicit or chunk) opened an item continues it.
import { ownerName, ofOwner, type Owner } from "./rules.js";
import type { ChunkKind, ItemRecord, Items, VerifierState } from "./state.js";

export function itemsOf(v: VerifierState, kind: ChunkKind): Items {
  return kind === "text" ? v.run.text : kind === "tool" ? v.run.tools : v.run.reasoningMessages;
}

/** Mixing the two spellings within one item: the explicit event names the chunk item it has just ended. */
export function mixesForms(v: VerifierState, kind: ChunkKind, id: string): boolean {
  if (v.endedByThisEvent?.kind !== kind || v.endedByThisEvent.id !== id) return false;
  v.report("chunk-forms-do-not-mix", `${v.type} for ${id}, an item opened by a chunk; chunk items continue and close as chunks`);
  return true;
}

export function openItem(v: VerifierState, items: Items, id: string, record: ItemRecord): void {
  if (items.open.has(id)) {
    v.report("no-reopen-while-open", `${v.type} for already open ${items.noun} ${id}`);
    return;
  }
  const established = items.known.get(id);
  if (established !== undefined) {
    if (record.owner !== undefined && record.owner !== established.owner) {
      v.report("owner-agrees", `${v.type} reopens ${items.noun} ${id} under ${ownerName(record.owner)}; ${ownerName(established.owner)} owns it`);
    }
    for (const key of ["role", "name", "toolCallName", "parentMessageId"] as const) {
      if (record[key] !== established[key]) {
        v.report("reopen-agrees", `${v.type} reopens ${items.noun} ${id} with ${key} ${record[key] ?? "(absent)"}; it was ${established[key] ?? "(absent)"}`);
      }
    }
  } else {
    items.known.set(id, record);
  }
  items.open.add(id);
}

export function continueItem(v: VerifierState, items: Items, id: string, tag: Owner): void {
  if (!items.open.has(id)) {
    v.report("open-before-continue", `${v.type} for ${items.describeMissing(id)}`);
    return;
  }
  checkOwner(v, items, id, tag);
}

export function closeItem(v: VerifierState, items: Items, id: string, tag: Owner): void {
  if (!items.open.has(id)) {
    v.report("open-before-continue", `${v.type} for ${items.describeMissing(id)}`);
    return;
  }
  checkOwner(v, items, id, tag);
  items.open.delete(id);
}

function checkOwner(v: VerifierState, items: Items, id: string, tag: Owner): void {
  const owner = items.known.get(id)?.owner;
  if (tag !== undefined && tag !== owner) {
    v.report("owner-agrees", `${v.type} for ${items.noun} ${id} tagged ${ownerName(tag)}, but ${ownerName(owner)} opened it`);
  }
}

export function openTool(v: VerifierState, id: string, tag: Owner, toolCallName: string | undefined, parentMessageId: string | undefined): void {
  const parent = parentMessageId === undefined ? undefined : v.run.text.known.get(parentMessageId);
  if (parent !== undefined && tag !== undefined && tag !== parent.owner) {
    v.report(
      "owner-agrees",
      `${v.type} ${id} tagged ${ownerName(tag)}, but its parent message ${parentMessageId} belongs to ${ownerName(parent.owner)}`,
    );
  }
  // A tool call inherits the attribution of the message that holds it (subagents#ownership).
  const owner = tag ?? parent?.owner;
  if (!v.run.tools.known.has(id)) v.run.toolCallOrder.push(id);
  openItem(v, v.run.tools, id, {
    owner,
    ...(toolCallName !== undefined && { toolCallName }),
    ...(parentMessageId !== undefined && { parentMessageId }),
  });
}

/** Everything still open in the run (steps, items, subagents), named for a problem's text. */
export function openItems(v: VerifierState): string[] {
  const open: string[] = [];
  for (const [owner, names] of v.run.steps) for (const name of names) open.push(`step "${name}"${ofOwner(owner)}`);
  for (const items of [v.run.text, v.run.reasoningMessages, v.run.reasoningSpans, v.run.tools]) {
    for (const id of items.open) open.push(`${items.noun} ${id}`);
  }
  for (const id of v.run.activeSubagents) open.push(`subagent ${id}`);
  return open;
}
