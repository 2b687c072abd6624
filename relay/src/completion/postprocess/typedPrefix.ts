import type { Stage } from "./stage";

// Repeats of what was typed: chat models often restate the current line ("  return a" → "return a + b;").

/** Only this much of the cursor line is compared, which bounds the hold at the start of the stream. */
const TYPED_WINDOW = 256;
const MIN_REPEAT = 2;

export class TypedPrefixFilter implements Stage {
  readonly stopped = false;
  private deciding: boolean;
  private held = "";
  /** Suffixes of the cursor line the output may restate, each starting at a natural boundary. */
  private readonly candidates: string[];

  constructor(before: string) {
    this.candidates = repeatCandidates(before);
    this.deciding = this.candidates.length > 0;
  }

  push(text: string): string {
    if (!this.deciding) return text;
    this.held += text;
    const held = this.held;
    if (this.candidates.some((candidate) => candidate.length > held.length && candidate.startsWith(held))) return "";
    return this.decide();
  }

  end(): string {
    return this.deciding ? this.decide() : "";
  }

  private decide(): string {
    const held = this.held;
    let repeat = 0;
    for (const candidate of this.candidates) if (candidate.length > repeat && held.startsWith(candidate)) repeat = candidate.length;
    this.deciding = false;
    this.held = "";
    return held.slice(repeat);
  }
}

/**
 * The typed part of the cursor line, from its start, from after its indentation, from after each run of
 * spaces, and from the start of the word at the cursor. A repeat must start at one of these (a model restates a
 * line, a statement or a word, not an arbitrary tail), which keeps "ba" + "anana" from losing its "a".
 */
function repeatCandidates(before: string): string[] {
  const line = before.slice(before.lastIndexOf("\n") + 1).slice(-TYPED_WINDOW);
  const starts = new Set<number>([0]);
  for (let index = 1; index < line.length; index++) {
    if (/\s/.test(line[index - 1] ?? "") && !/\s/.test(line[index] ?? "")) starts.add(index);
  }
  let word = line.length;
  while (word > 0 && /[\p{L}\p{N}_$]/u.test(line[word - 1] ?? "")) word--;
  starts.add(word);
  const candidates = new Set<string>();
  for (const start of starts) {
    const candidate = line.slice(start);
    if (candidate.length >= MIN_REPEAT && /\S/.test(candidate)) candidates.add(candidate);
  }
  return [...candidates];
}
