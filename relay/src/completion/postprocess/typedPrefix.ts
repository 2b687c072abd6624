import { longestTypedRepeat, mayGrowIntoTypedRepeat, typedRepeatCandidates } from "@tab-relay/shared";
import type { Stage } from "./stage";

/**
 * Repeats of what was typed: chat models often restate the current line ("  return a" → "return a + b;"). The
 * rule is shared with the extension (`typedRepeatLength` in shared/src/protocol/text.ts); this stage applies it
 * to a stream, holding the start of the output only while more text could still make it a longer repeat.
 */
export class TypedPrefixFilter implements Stage {
  readonly stopped = false;
  private deciding: boolean;
  private held = "";
  /** Ends of the cursor line the output may restate, each starting where a restatement would. */
  private readonly candidates: string[];

  constructor(before: string) {
    this.candidates = typedRepeatCandidates(before);
    this.deciding = this.candidates.length > 0;
  }

  push(text: string): string {
    if (!this.deciding) return text;
    this.held += text;
    return this.decide(false);
  }

  end(): string {
    return this.deciding ? this.decide(true) : "";
  }

  /** Drops one repeat after another, as `typedRepeatLength` does, and releases the rest once it starts with none. */
  private decide(ending: boolean): string {
    for (;;) {
      if (!ending && mayGrowIntoTypedRepeat(this.candidates, this.held)) return "";
      const repeat = longestTypedRepeat(this.candidates, this.held);
      if (repeat === 0) break;
      this.held = this.held.slice(repeat);
    }
    const out = this.held;
    this.deciding = false;
    this.held = "";
    return out;
  }
}
