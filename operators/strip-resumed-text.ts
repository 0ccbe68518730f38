// The resume-text rule (reference-adapter §5.4 "Resume prefix stripping"). After an interrupt a kernel
// may replay, in the first status text of a message, everything that message already said before it
// went on. Segments of text that were shown are known only by digest (the state keeps no text): the
// first text seen for a message id in a run loses its longest prefix whose SHA-256 is known, and only
// the rest is emitted. A segment ends when a tool starts or its input completes (for the current
// message), when its message ends, and for every message at the run's terminal event (the interrupt
// commit included); each new digest travels on as a TextSegmentDigest item, before the terminal event.
import { createHash, type Hash } from "node:crypto";
import { EventType } from "@ag-ui/core";
import type { OperatorFunction } from "rxjs";
import { stageOperator, type Stage, type StageHandlers, type StageOutput } from "./lib/stage.js";
import type { TextSegmentDigest } from "./types.js";

export interface StripResumedTextOptions {
  /** Digests of segments earlier runs of this execution showed (64 lowercase hex). */
  knownDigests?: Iterable<string>;
}

type TextItem = { type: string; messageId?: string; delta?: string; parentMessageId?: string };

// Pipeline text is a stream of deltas with event ids (deduplicated upstream of here), never a replay.
const PIPELINE_MESSAGE = "pipeline-message:";
// The prefix search hashes every prefix; beyond this many code points a replay is emitted unstripped.
const MAX_CHECKED_CODE_POINTS = 131_072;
// Deltas are hashed in batches of about this many UTF-16 units: one hash update per delta cost more than
// the rest of the pipeline, and a batch keeps a segment's memory bounded all the same.
const HASH_BATCH = 16_384;

/** The running digest of one message's current segment: hashed text plus a short unhashed tail. */
interface Segment {
  /** Made when the first batch is hashed: a short segment (an idle stream's open message) holds only its tail. */
  hash: Hash | undefined;
  tail: string;
}

const READS: ReadonlySet<string> = new Set([
  EventType.TEXT_MESSAGE_START, EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_END, EventType.TOOL_CALL_START,
  EventType.TOOL_CALL_ARGS, EventType.RUN_FINISHED, EventType.RUN_ERROR,
]);

/**
 * Drops the replayed prefix of each message's first text and emits a TextSegmentDigest per new segment.
 *
 * @example
 * events$.pipe(stripResumedText({ knownDigests: [sha256("Checking the VPC. ")] }))
 * // TEXT_MESSAGE_CONTENT m "Checking the VPC. Done." → TEXT_MESSAGE_CONTENT m "Done."
 * // … RUN_FINISHED → {type: "IAC_CODE_TEXT_SEGMENT", digest: sha256("Checking the VPC. Done.")}, RUN_FINISHED
 */
export function stripResumedText<T extends { type: string }>(
  options: StripResumedTextOptions = {},
): OperatorFunction<T, T | TextSegmentDigest> {
  return stageOperator(stripResumedTextStage<T>(options));
}

/** stripResumedText as a Stage, for fuseStages (createAguiPipeline runs it fused with the projection). */
export function stripResumedTextStage<T extends { type: string }>(options: StripResumedTextOptions = {}): Stage<T, T | TextSegmentDigest> {
  return (out) => new TextStripper<T>(options.knownDigests, out);
}

/** One subscription's segments: a class, since an idle run holds it (its methods on the prototype, not closures). */
class TextStripper<T extends { type: string }> implements StageHandlers<T> {
  readonly reads = READS;
  // The collections are made on first use: an idle stream holds few of them (an empty Set is ~150 B).
  private known: Set<string> | undefined;
  /** The running digest of each message's current segment (the text itself is not kept). */
  private segments: Map<string, Segment> | undefined;
  /** Message ids whose first text was already checked in this run. */
  private checked: Set<string> | undefined;
  /** TEXT_MESSAGE_START held until the message has something to show (a fully replayed text has not). */
  private heldStarts: Map<string, T> | undefined;
  private current: string | undefined;
  // The message the last delta went to and its segment, while it lasts: the usual stream of deltas to one
  // message then costs no lookup (shown already, so no start is held for it).
  private lastId: string | undefined;
  private lastSegment: Segment | undefined;

  constructor(
    knownDigests: Iterable<string> | undefined,
    private readonly out: StageOutput<T | TextSegmentDigest>,
  ) {
    for (const digest of knownDigests ?? []) (this.known ??= new Set()).add(digest);
  }

  next(item: T): void {
    const e = item as unknown as TextItem;
    switch (e.type) {
      case EventType.TEXT_MESSAGE_START:
        if (e.messageId !== undefined && !e.messageId.startsWith(PIPELINE_MESSAGE) && !this.checked?.has(e.messageId)) {
          (this.heldStarts ??= new Map()).set(e.messageId, item);
          return;
        }
        break;
      case EventType.TEXT_MESSAGE_CONTENT:
        if (e.messageId !== undefined && typeof e.delta === "string") return this.content(item, e.messageId, e.delta);
        break;
      case EventType.TEXT_MESSAGE_END:
        if (e.messageId === undefined) break;
        this.finish(e.messageId);
        if (this.current === e.messageId) this.current = undefined;
        // Never opened for the client: its only text was a replay.
        if (this.heldStarts?.delete(e.messageId)) return;
        break;
      case EventType.TOOL_CALL_START:
        if (this.current !== undefined) this.finish(this.current);
        if (e.parentMessageId !== undefined && this.heldStarts?.has(e.parentMessageId)) {
          const { parentMessageId: _unopened, ...rest } = e;
          return this.out.next(rest as unknown as T);
        }
        break;
      case EventType.TOOL_CALL_ARGS:
        // The tool's input is complete (TOOL_CALL_ARGS is emitted only then).
        if (this.current !== undefined) this.finish(this.current);
        break;
      case EventType.RUN_FINISHED:
      case EventType.RUN_ERROR:
        if (this.segments) for (const messageId of [...this.segments.keys()]) this.finish(messageId);
        this.heldStarts?.clear();
        break;
    }
    this.out.next(item);
  }

  private segmentOf(messageId: string): Segment {
    let segment = this.segments?.get(messageId);
    if (segment === undefined) {
      segment = { hash: undefined, tail: "" };
      (this.segments ??= new Map()).set(messageId, segment);
    }
    return segment;
  }

  private finish(messageId: string): void {
    const segment = this.segments?.get(messageId);
    if (segment === undefined) return;
    this.segments!.delete(messageId);
    if (messageId === this.lastId) this.lastId = this.lastSegment = undefined;
    const digest = (segment.hash ?? createHash("sha256")).update(segment.tail, "utf8").digest("hex");
    if (this.known?.has(digest)) return;
    (this.known ??= new Set()).add(digest);
    this.out.next({ type: "IAC_CODE_TEXT_SEGMENT", digest });
  }

  private show(item: T, messageId: string, delta: string): void {
    const start = this.heldStarts?.get(messageId);
    if (start !== undefined) {
      this.heldStarts!.delete(messageId);
      this.out.next(start);
    }
    this.out.next(delta === (item as unknown as TextItem).delta ? item : ({ ...item, delta } as T));
  }

  private content(item: T, messageId: string, delta: string): void {
    this.current = messageId;
    if (messageId === this.lastId) {
      append(this.lastSegment!, delta);
      return this.out.next(item);
    }
    if (messageId.startsWith(PIPELINE_MESSAGE) || this.checked?.has(messageId)) {
      this.lastSegment = append(this.segmentOf(messageId), delta);
      this.lastId = messageId;
      return this.show(item, messageId, delta);
    }
    (this.checked ??= new Set()).add(messageId);
    const replayed = this.known === undefined ? 0 : replayedPrefixLength(delta, this.known);
    if (replayed === 0) {
      this.lastSegment = append(this.segmentOf(messageId), delta);
      this.lastId = messageId;
      return this.show(item, messageId, delta);
    }
    // The whole replay is this message's text so far: the next segment digest covers all of it.
    append(this.segmentOf(messageId), delta);
    const rest = delta.slice(replayed);
    if (rest !== "") this.show(item, messageId, rest);
  }
}

function append(segment: Segment, delta: string): Segment {
  segment.tail += delta;
  // Never flush half a surrogate pair: hashed alone it would encode as U+FFFD, not as its character.
  if (segment.tail.length >= HASH_BATCH && !isHighSurrogate(segment.tail.charCodeAt(segment.tail.length - 1))) {
    (segment.hash ??= createHash("sha256")).update(segment.tail, "utf8");
    segment.tail = "";
  }
  return segment;
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

/** Length (UTF-16 units) of the longest prefix of `text`, whole code points, whose digest is known. */
function replayedPrefixLength(text: string, known: ReadonlySet<string>): number {
  if (text === "" || known.size === 0) return 0;
  const hash = createHash("sha256");
  let longest = 0;
  let offset = 0;
  let points = 0;
  for (const point of text) {
    if (++points > MAX_CHECKED_CODE_POINTS) break;
    hash.update(point, "utf8");
    offset += point.length;
    if (known.has(hash.copy().digest("hex"))) longest = offset;
  }
  return longest;
}
