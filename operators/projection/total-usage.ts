// A stage of projectA2A: token usage. Every usage report adds to the run's totals, one entry per provider
// and model; after each, the totals so far travel on for mapTerminal to put on the terminal event. The
// sums saturate: a kernel reporting 1e308 tokens twice must not turn usage into Infinity (null on the wire).
import type { TokenUsage } from "@ag-ui/core";
import type { OperatorFunction } from "rxjs";
import { unprocessableFrame } from "../lib/a2a-read.js";
import { addCounts, isObject, toCount } from "../lib/json.js";
import { stageOperator, type Stage, type StageHandlers, type StageOutput } from "../lib/stage.js";
import type { UsagePart, UsageTotalsPart } from "./parts.js";

const READS: ReadonlySet<string> = new Set(["A2A_USAGE"]);

type Totals = Required<Pick<TokenUsage, "inputTokens" | "outputTokens" | "totalTokens" | "cachedInputTokens">> & TokenUsage;

/**
 * Consumes `A2A_USAGE` parts (reports that are not objects count for nothing); emits `A2A_USAGE_TOTALS`
 * after each that counts; passes everything else on.
 *
 * @example
 * parts$.pipe(totalUsage())
 * // A2A_USAGE {model: "m", inputTokens: 3}, A2A_USAGE {model: "m", inputTokens: 2}
 * // → A2A_USAGE_TOTALS [{model: "m", inputTokens: 3, …}], A2A_USAGE_TOTALS [{model: "m", inputTokens: 5, …}]
 */
export function totalUsage<T extends { type: string }>(): OperatorFunction<T, Exclude<T, UsagePart> | UsageTotalsPart> {
  return stageOperator(totalUsageStage<T>(), unprocessableFrame);
}

/** totalUsage as a Stage, for fuseStages (projectA2A runs the eight stages fused). */
export function totalUsageStage<T extends { type: string }>(): Stage<T, Exclude<T, UsagePart> | UsageTotalsPart> {
  return (out) => new UsageTotals<T>(out);
}

/** One subscription's totals. A class rather than closures over its state: a run holds it for as long as it streams. */
class UsageTotals<T extends { type: string }> implements StageHandlers<T> {
  readonly reads = READS;
  // Made on first use: an idle stream holds none (each empty Map is ~150 B).
  private totals: Map<string, Totals> | undefined;

  constructor(private readonly out: StageOutput<Exclude<T, UsagePart> | UsageTotalsPart>) {}

  next(item: T): void {
    if (item.type === "A2A_USAGE") return this.add((item as unknown as UsagePart).usage);
    this.out.next(item as Exclude<T, UsagePart>);
  }

  private add(u: unknown): void {
    if (!isObject(u)) return;
    const provider = typeof u.provider === "string" ? u.provider : undefined;
    const model = typeof u.model === "string" ? u.model : undefined;
    const key = `${provider ?? ""}\u0000${model ?? ""}`;
    const entry: Totals = this.totals?.get(key) ?? {
      inputTokens: 0,
      outputTokens: 0,
      totalTokens: 0,
      cachedInputTokens: 0,
      ...(provider !== undefined && { provider }),
      ...(model !== undefined && { model }),
    };
    // A new entry each time: the totals already passed on stay what they were.
    const totals = (this.totals ??= new Map());
    totals.set(key, {
      ...entry,
      inputTokens: addCounts(entry.inputTokens, toCount(u.inputTokens)),
      outputTokens: addCounts(entry.outputTokens, toCount(u.outputTokens)),
      totalTokens: addCounts(entry.totalTokens, toCount(u.totalTokens)),
      cachedInputTokens: addCounts(entry.cachedInputTokens, toCount(u.cachedInputTokens)),
    });
    this.out.next({ type: "A2A_USAGE_TOTALS", usage: [...totals.values()] });
  }
}
