import { randomUUID } from "node:crypto";

/**
 * The same text as a string of its own, in one piece: a slice would keep alive the larger string it was cut from
 * (a network chunk), and a string built by concatenation is a tree of its pieces (a few hundred for a thread record)
 * until something reads it. For strings that are kept.
 */
export function flatString(text: string): string {
  return text.length > 12 ? (" " + text).slice(1) : text;
}

/** A random UUID in one piece: randomUUID builds its text by concatenation, ~0.5 KB of pieces while it is kept. */
export function flatRandomUUID(): string {
  return flatString(randomUUID());
}
