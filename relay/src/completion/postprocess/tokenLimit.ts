import { isHighSurrogate, isWhitespaceCode } from "../text";
import type { Stage } from "./stage";

// The token budget, measured on the whole output so far.

/** Units end before a whitespace run or after this many chars, so the hold stays short on minified text. */
const MAX_UNIT = 64;

export class TokenLimit implements Stage {
  stopped = false;
  /** Output of the completed units, and the current unit with how much of it has gone out already. */
  private committed = "";
  private unit = "";
  private unitBytes = 0;
  private unitEmitted = 0;
  /**
   * An upper bound on the tokens of `committed` up to the last measurement, and the text committed since (with its
   * UTF-8 bytes). Measuring only the new text keeps the total tokenized text linear in the output; the whole
   * output is tokenized only when the bound says the budget may be exhausted.
   */
  private measuredTokens = 0;
  private sinceMeasured = "";
  private bytesSinceMeasured = 0;

  constructor(
    private readonly maxTokens: number,
    private readonly countTokens: (text: string) => number,
  ) {}

  push(text: string): string {
    let out = "";
    // The unit is `this.unit` followed by `text` from `from` up to `index`: it grows by one slice per unit rather
    // than by a string per character, which was 7.7 KB of garbage per streamed completion (docs/benchmarks.md).
    let from = 0;
    for (let index = 0; index < text.length; index++) {
      const length = this.unit.length + index - from;
      const boundary =
        length >= MAX_UNIT ||
        (length > 0 &&
          isWhitespaceCode(text.charCodeAt(index)) &&
          !isWhitespaceCode(index > from ? text.charCodeAt(index - 1) : this.unit.charCodeAt(this.unit.length - 1)));
      if (boundary) {
        this.extendUnit(text, from, index);
        from = index;
        out += this.completeUnit();
        if (this.stopped) return out;
      }
    }
    this.extendUnit(text, from, text.length);
    // What the byte bound already guarantees need not wait for the end of its unit; trailing whitespace and half a
    // surrogate pair still wait, because a cut right after them would drop them.
    if (this.withinBound(this.unitBytes)) {
      const end = trimmedEnd(this.unit, this.unitEmitted, this.unit.length);
      out += this.unit.slice(this.unitEmitted, end);
      this.unitEmitted = end;
    }
    return out;
  }

  end(): string {
    return this.unit === "" ? "" : this.completeUnit();
  }

  private extendUnit(text: string, from: number, to: number): void {
    if (to === from) return;
    const part = text.slice(from, to);
    this.unit += part;
    this.unitBytes += utf8Length(part);
  }

  /** By subadditivity, tokens(committed + new) <= measured + tokens(since + new) <= measured + their bytes. */
  private withinBound(unitBytes: number): boolean {
    return this.measuredTokens + this.bytesSinceMeasured + unitBytes <= this.maxTokens;
  }

  /** Emits the rest of the unit if the whole output still fits, else the longest prefix of it that does, and stops. */
  private completeUnit(): string {
    const { unit, unitEmitted } = this;
    const start = this.committed;
    this.unit = "";
    this.unitEmitted = 0;
    const bytes = this.unitBytes;
    this.unitBytes = 0;
    if (this.withinBound(bytes)) {
      this.bytesSinceMeasured += bytes;
      this.sinceMeasured += unit;
      this.committed += unit;
      return unit.slice(unitEmitted);
    }
    const bound = this.measuredTokens + this.countTokens(this.sinceMeasured + unit);
    const tokens = bound <= this.maxTokens ? bound : this.countTokens(start + unit);
    if (tokens <= this.maxTokens) {
      this.measuredTokens = tokens;
      this.sinceMeasured = "";
      this.bytesSinceMeasured = 0;
      this.committed += unit;
      return unit.slice(unitEmitted);
    }
    // Over budget inside this unit. The prefix the byte bound covers fits (and may be out already); beyond it,
    // binary-search with the cheap bound (tokenizing only the text since the last measurement), then confirm the
    // next char with an exact count, which usually settles it; counts are assumed to grow with the prefix.
    let safe = 0;
    for (let bytes = 0; safe < unit.length; safe++) {
      bytes += utf8Length(unit[safe] ?? "");
      if (!this.withinBound(bytes)) break;
    }
    const since = this.sinceMeasured;
    let fits = this.longestFitting(
      unit,
      safe,
      unit.length,
      (prefix) => this.measuredTokens + this.countTokens(since + prefix),
    );
    fits = this.longestFitting(unit, fits, unit.length, (prefix) => this.countTokens(start + prefix));
    // The floor is decided by content alone (unlike `unitEmitted`, which it never undercuts), so the cut is the
    // same however the text was split.
    fits = trimmedEnd(unit, trimmedEnd(unit, 0, safe), fits);
    this.stopped = true;
    this.committed += unit.slice(0, fits);
    return unit.slice(unitEmitted, fits);
  }

  /** The longest prefix length in [fits, over) whose count fits, given that `fits` does and `over` does not. */
  private longestFitting(unit: string, fits: number, over: number, count: (prefix: string) => number): number {
    let low = fits;
    let high = over;
    // Try the very next char first: with a tight bound that is the answer, found with one count.
    if (high - low > 1 && count(unit.slice(0, low + 1)) > this.maxTokens) return low;
    if (high - low > 1) low++;
    while (high - low > 1) {
      const middle = (low + high) >>> 1;
      if (count(unit.slice(0, middle)) <= this.maxTokens) low = middle;
      else high = middle;
    }
    return low;
  }
}

/** `end` moved back over trailing whitespace and a dangling high surrogate, but not below `floor`. */
function trimmedEnd(text: string, floor: number, end: number): number {
  let at = end;
  while (at > floor && (isHighSurrogate(text.charCodeAt(at - 1)) || /\s/.test(text[at - 1] ?? ""))) at--;
  return at;
}

function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    // A surrogate pair is 4 bytes in all, 2 per half.
    else if (code >= 0xd800 && code <= 0xdfff) bytes += 2;
    else bytes += 3;
  }
  return bytes;
}
