import type { FinishReason, TabContext } from "@tab-relay/shared";
import { CLOSERS, OPENERS, SINGLE_LINE_SURFACES, indentation, isHighSurrogate, isWordChar } from "./text";

export interface PostprocessOptions {
  context: TabContext;
  maxTokens: number;
  /**
   * Tokens in `text`. Assumed no larger than its UTF-8 byte count and subadditive (count(a + b) <= count(a) +
   * count(b)), which holds for whitespace splitting and byte-level BPE; that lets most fragments pass unmeasured.
   */
  countTokens: (text: string) => number;
  /** Text that ends the output wherever it appears (a model's control tokens written as text); cut before it. */
  stops?: readonly string[];
}

export interface Postprocessor {
  /** Feed the next raw fragment; returns the text that is now safe to emit (may be ""). */
  push(fragment: string): string;
  /** No more input: returns whatever is still held back and safe to emit. */
  end(): string;
  /** True once the output is complete (suffix reached, token limit, stop rule); the caller stops the upstream. */
  readonly done: boolean;
  readonly finishReason: FinishReason;
}

/**
 * One step of the pipeline. Each stage decides from its input text alone, never from where fragments were
 * split, and holds back only a bounded tail; so the stages compose, and the concatenated output of any split
 * equals the output of the same text pushed in one piece.
 */
interface Stage {
  /** Returns what is safe to pass on. Once `stopped` is set, the return value was the stage's last output. */
  push(text: string): string;
  end(): string;
  readonly stopped: boolean;
}


/**
 * Turns a provider's raw output into the suggestion: strips chat-model wrapping (lead-in lines, code fences,
 * explanations after the fence), drops a repeat of what was already typed, stops where the output reaches text
 * that is already after the cursor, keeps single-line surfaces to one line, and caps the output at `maxTokens`.
 */
export function createPostprocessor(options: PostprocessOptions): Postprocessor {
  const { context } = options;
  const before = context.active_text_before_cursor;
  const after = context.active_text_after_cursor ?? "";
  const limit = new TokenLimit(options.maxTokens, options.countTokens);
  const stages: Stage[] = [];
  // First, on the raw output: whatever follows a stop sequence is not the model's answer at all.
  if (options.stops && options.stops.length > 0) stages.push(new StopSequenceStop(options.stops));
  stages.push(new ChatterFilter(context), new TypedPrefixFilter(before), new SuffixOverlapStop(before, after));
  if (SINGLE_LINE_SURFACES.has(context.surface)) stages.push(new SingleLineStop());
  stages.push(limit);

  let done = false;
  /** Half a surrogate pair, kept until its other half arrives so no fragment carries a broken character. */
  let carry = "";
  const run = (input: string, ending: boolean): string => {
    if (done) return "";
    let text = input;
    let finished = ending;
    for (const stage of stages) {
      text = stage.push(text);
      // A stopped stage has nothing more to give; everything after it sees the end of its input.
      if (stage.stopped) finished = true;
      else if (finished) text += stage.end();
    }
    done = finished;
    text = carry + text;
    carry = "";
    if (!finished && isHighSurrogate(text.charCodeAt(text.length - 1))) {
      carry = text.slice(-1);
      text = text.slice(0, -1);
    }
    return text;
  };

  return {
    push: (fragment) => (fragment === "" ? "" : run(fragment, false)),
    end: () => run("", true),
    get done() {
      return done;
    },
    get finishReason(): FinishReason {
      return limit.stopped ? "length" : "stop";
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Stop sequences: a server may pass a model's file separator or FIM token through as text (it was not among the
// few stops sent upstream, or the server does not match stops on special tokens); the output ends before it.

class StopSequenceStop implements Stage {
  stopped = false;
  /** The end of the text so far that could be the start of a stop sequence, held until the next text decides. */
  private held = "";
  private readonly longest: number;

  constructor(private readonly stops: readonly string[]) {
    this.longest = Math.max(...stops.map((stop) => stop.length));
  }

  push(text: string): string {
    const all = this.held + text;
    let cut = -1;
    for (const stop of this.stops) {
      const at = stop === "" ? -1 : all.indexOf(stop);
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    if (cut >= 0) {
      this.stopped = true;
      this.held = "";
      return all.slice(0, cut);
    }
    const keep = this.partialTail(all);
    this.held = all.slice(all.length - keep);
    return all.slice(0, all.length - keep);
  }

  end(): string {
    const out = this.held;
    this.held = "";
    return out;
  }

  /** The length of the longest end of `text` that begins some stop sequence. */
  private partialTail(text: string): number {
    for (let length = Math.min(text.length, this.longest - 1); length > 0; length--) {
      const tail = text.slice(text.length - length);
      if (this.stops.some((stop) => stop.startsWith(tail))) return length;
    }
    return 0;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Chat-model wrapping: "Sure! Here is the completion:", ```lang fences, and whatever follows the closing fence.

const INTERJECTION = /^(?:sure|certainly|of course|absolutely|okay|ok|alright|got it)\b/i;
const BARE_INTERJECTION = /^(?:sure|certainly|of course|absolutely|okay|ok|alright|got it)[!.]?$/i;
const PRESENTING = /^(?:(?:sure|certainly|of course|absolutely|okay|ok|alright|got it)[!,.]?\s+)?(?:here(?:'s| is| are)|below is|this is)\b/i;
/** Words a lead-in uses for the answer itself; everyday words ("result", "plan") would strip real prose. */
const ABOUT_THE_ANSWER = /\b(?:completion|continuation|code|snippet|suggestion|implementation|completed|rest of)\b/i;
/** Every lead-in line begins with one of these, so a line that cannot is released at once. */
const LEAD_IN_STARTS = ["sure", "certainly", "of course", "absolutely", "ok", "alright", "got it", "here", "below is", "this is", "completion", "continuation"];
const FENCE_OPENER = /^```[\w+#.-]*$/;
/** Lines ending past this offset are content: a lead-in is a line or two, and the hold must stay bounded. */
const LEAD_IN_WINDOW = 400;
/** A closing fence indented deeper than this is content (and the hold before deciding stays bounded). */
const MAX_FENCE_INDENT = 64;
/** Fences around prose, which a markdown note would not start its continuation with. */
const PROSE_FENCE_LANGUAGES = new Set(["", "markdown", "md", "text", "txt", "plaintext"]);

function isLeadIn(line: string): boolean {
  if (line.length > 200) return false;
  if (line.endsWith(":") && (INTERJECTION.test(line) || ABOUT_THE_ANSWER.test(line))) return startsLikeLeadIn(line);
  return PRESENTING.test(line) && ABOUT_THE_ANSWER.test(line);
}

function startsLikeLeadIn(line: string): boolean {
  const lower = line.toLowerCase();
  return LEAD_IN_STARTS.some((start) => lower.startsWith(start));
}

function couldStartLeadIn(partial: string): boolean {
  const lower = partial.toLowerCase();
  return lower.startsWith("```") || "```".startsWith(lower) || LEAD_IN_STARTS.some((start) => start.startsWith(lower) || lower.startsWith(start));
}

class ChatterFilter implements Stage {
  stopped = false;
  private mode: "lead" | "body" = "lead";
  private lead = "";
  private inFence = false;
  /** Inside a fence: unreleased body text, which starts at a line start unless `midLine`. */
  private buffer = "";
  /** The line break before `buffer`, held until its line is known not to be the closing fence. */
  private heldBreak = "";
  private midLine = false;

  constructor(private readonly context: TabContext) {}

  push(text: string): string {
    if (this.mode === "lead") {
      this.lead += text;
      return this.decideLead(false);
    }
    return this.body(text, false);
  }

  end(): string {
    return this.mode === "lead" ? this.decideLead(true) : this.body("", true);
  }

  private fenceAllowed(opener: string, afterLeadIn: boolean): boolean {
    if (afterLeadIn || this.context.surface === "code" || this.context.document_type !== "markdown") return true;
    // In a markdown note a fence naming a language is likely content the writer wants; a bare or prose fence is wrapping.
    return PROSE_FENCE_LANGUAGES.has(opener.slice(3).toLowerCase());
  }

  /** Reads whole lines at the start of the output until one is content; drops lead-in lines and an opening fence. */
  private decideLead(ending: boolean): string {
    const text = this.lead;
    let dropUntil = 0;
    let sawLeadIn = false;
    for (let lineStart = 0; ; ) {
      const newline = text.indexOf("\n", lineStart);
      const complete = newline >= 0;
      const lineEnd = complete ? newline : text.length;
      const line = text.slice(lineStart, lineEnd).trim();
      const beyondWindow = lineEnd > LEAD_IN_WINDOW;

      if (!complete && !ending) {
        if (beyondWindow || (line !== "" && !couldStartLeadIn(line))) return this.startBody(text.slice(dropUntil), false);
        return "";
      }
      if (beyondWindow) return this.startBody(text.slice(dropUntil), ending);
      const next = complete ? newline + 1 : text.length;
      if (line === "" || BARE_INTERJECTION.test(line)) {
        // Blank lines and a bare "Sure!" are wrapping only if a lead-in or fence follows; blanks after a lead-in go too.
        if (sawLeadIn && line === "" && dropUntil === lineStart) dropUntil = next;
      } else if (isLeadIn(line)) {
        sawLeadIn = true;
        dropUntil = next;
      } else if (FENCE_OPENER.test(line) && this.fenceAllowed(line, sawLeadIn)) {
        this.inFence = true;
        return this.startBody(text.slice(next), ending);
      } else {
        return this.startBody(text.slice(dropUntil), ending);
      }
      if (!complete) return this.startBody(text.slice(dropUntil), ending);
      lineStart = next;
    }
  }

  private startBody(text: string, ending: boolean): string {
    this.mode = "body";
    this.lead = "";
    return this.body(text, ending);
  }

  private body(text: string, ending: boolean): string {
    if (!this.inFence) return text;
    this.buffer += text;
    let out = "";
    for (;;) {
      if (!this.midLine) {
        const indent = indentation(this.buffer);
        const start = this.buffer.slice(indent);
        if (indent <= MAX_FENCE_INDENT && start.startsWith("```")) {
          // The closing fence: the line break before it belongs to the wrapping, what follows is explanation.
          this.stopped = true;
          this.buffer = "";
          this.heldBreak = "";
          return out;
        }
        if (!ending && indent <= MAX_FENCE_INDENT && "```".startsWith(start) && !this.buffer.includes("\n")) return out;
        out += this.heldBreak;
        this.heldBreak = "";
        this.midLine = true;
      }
      const newline = this.buffer.indexOf("\n");
      if (newline < 0) {
        // A trailing "\r" may be half of the "\r\n" before a closing fence.
        const keep = !ending && this.buffer.endsWith("\r") ? 1 : 0;
        out += this.buffer.slice(0, this.buffer.length - keep);
        this.buffer = this.buffer.slice(this.buffer.length - keep);
        return out;
      }
      const breakStart = newline > 0 && this.buffer[newline - 1] === "\r" ? newline - 1 : newline;
      out += this.buffer.slice(0, breakStart);
      this.heldBreak = this.buffer.slice(breakStart, newline + 1);
      this.buffer = this.buffer.slice(newline + 1);
      this.midLine = false;
    }
  }
}

/** Length of the run of spaces and tabs at the start of `text`. */
// ---------------------------------------------------------------------------------------------------------------
// Repeats of what was typed: chat models often restate the current line ("  return a" → "return a + b;").

/** Only this much of the cursor line is compared, which bounds the hold at the start of the stream. */
const TYPED_WINDOW = 256;
const MIN_REPEAT = 2;

class TypedPrefixFilter implements Stage {
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

// ---------------------------------------------------------------------------------------------------------------
// Text that is already after the cursor: stop before the output restates it.

/** Anchors are compared up to this length, and a line longer than the next line by this much is not a repeat. */
const ANCHOR_MAX = 200;
const LINE_SLACK = 64;
/** Trailing whitespace is held (it goes if the output stops right after it); a longer run is released. */
const MAX_HELD_WHITESPACE = 256;

class SuffixOverlapStop implements Stage {
  stopped = false;
  /** What follows the cursor on its line, trimmed ("" when the cursor is at the end of its line). */
  private readonly restOfLine: string;
  /** The first non-blank line after the cursor line, trimmed. */
  private readonly nextLine: string;
  /** A closing bracket that comes first after the cursor (possibly lines below). */
  private readonly closer: string;
  /** Whitespace the text after the cursor starts with; at a cut it stands in for the output's own. */
  private readonly afterWhitespace: string;

  private pending = "";
  private heldWhitespace = "";
  private depth = 0;
  private lineHasContent: boolean;
  private lastChar = "";

  constructor(before: string, after: string) {
    const lineBreak = after.indexOf("\n");
    this.restOfLine = (lineBreak < 0 ? after : after.slice(0, lineBreak)).trim().slice(0, ANCHOR_MAX);
    let nextLine = "";
    for (let start = lineBreak + 1; start > 0 && start <= after.length && nextLine === ""; ) {
      const end = after.indexOf("\n", start);
      nextLine = after.slice(start, end < 0 ? after.length : end).trim();
      start = end + 1;
    }
    this.nextLine = nextLine.slice(0, ANCHOR_MAX);
    const firstContent = after.search(/\S/);
    const first = firstContent < 0 ? "" : (after[firstContent] ?? "");
    this.closer = first !== "" && CLOSERS.includes(first) ? first : "";
    this.afterWhitespace = firstContent < 0 ? after : after.slice(0, firstContent);
    // Output begins a line of its own only when the cursor line is blank on both sides of the cursor.
    this.lineHasContent = /\S/.test(before.slice(before.lastIndexOf("\n") + 1)) || this.restOfLine !== "";
  }

  push(text: string): string {
    this.pending += text;
    return this.scan(false);
  }

  end(): string {
    const out = this.scan(true);
    return this.stopped ? out : out + this.takeWhitespace();
  }

  private scan(ending: boolean): string {
    const text = this.pending;
    let out = "";
    let index = 0;
    for (; index < text.length; index++) {
      const char = text[index] ?? "";
      if (!/\s/.test(char)) {
        const verdict = this.overlapAt(text, index, ending);
        if (verdict === "wait") break;
        if (verdict === "overlap") {
          out += this.cutWhitespace();
          this.stopped = true;
          this.pending = "";
          return out;
        }
        out += this.takeWhitespace() + char;
        this.lineHasContent = true;
        if (OPENERS.includes(char)) this.depth++;
        else if (CLOSERS.includes(char)) this.depth--;
      } else {
        this.heldWhitespace += char;
        if (char === "\n") this.lineHasContent = false;
        if (this.heldWhitespace.length > MAX_HELD_WHITESPACE) {
          out += this.heldWhitespace.slice(0, -MAX_HELD_WHITESPACE);
          this.heldWhitespace = this.heldWhitespace.slice(-MAX_HELD_WHITESPACE);
        }
      }
      this.lastChar = char;
    }
    this.pending = text.slice(index);
    return out;
  }

  private overlapAt(text: string, index: number, ending: boolean): "overlap" | "none" | "wait" {
    const char = text[index] ?? "";
    if (char === this.closer && this.depth === 0) return "overlap";
    const rest = this.restOfLine;
    if (rest !== "" && char === rest[0] && (!CLOSERS.includes(char) || this.depth === 0)) {
      const verdict = this.restOfLineAt(text, index, ending);
      if (verdict !== "none") return verdict;
    }
    if (this.nextLine !== "" && !this.lineHasContent && char === this.nextLine[0]) return this.nextLineAt(text, index, ending);
    return "none";
  }

  /** The output reaches what follows the cursor on its line; a word must match as a whole word. */
  private restOfLineAt(text: string, index: number, ending: boolean): "overlap" | "none" | "wait" {
    const rest = this.restOfLine;
    if (isWordChar(rest[0]) && isWordChar(this.lastChar)) return "none";
    const available = text.slice(index, index + rest.length + 1);
    if (available.length < rest.length) return !ending && rest.startsWith(available) ? "wait" : "none";
    if (!available.startsWith(rest)) return "none";
    if (!isWordChar(rest[rest.length - 1])) return "overlap";
    if (available.length === rest.length) return ending ? "overlap" : "wait";
    return isWordChar(available[rest.length]) ? "none" : "overlap";
  }

  /** A whole line of output equal to the first non-blank line after the cursor. */
  private nextLineAt(text: string, index: number, ending: boolean): "overlap" | "none" | "wait" {
    const target = this.nextLine;
    const window = text.slice(index, index + target.length + LINE_SLACK);
    const lineEnd = window.search(/\r?\n/);
    if (lineEnd >= 0) return window.slice(0, lineEnd).trimEnd() === target ? "overlap" : "none";
    if (window.length === target.length + LINE_SLACK) return "none";
    const line = window.trimEnd();
    if (ending) return line === target ? "overlap" : "none";
    return target.startsWith(line) ? "wait" : "none";
  }

  private takeWhitespace(): string {
    const held = this.heldWhitespace;
    this.heldWhitespace = "";
    return held;
  }

  /**
   * The output's whitespace right before the overlap, less what the text after the cursor already brings: on a
   * new line of output the existing text keeps its own indentation (and its own line break, if it starts with
   * one); within a line the output keeps only the whitespace the existing text does not supply.
   */
  private cutWhitespace(): string {
    const held = this.takeWhitespace();
    const existing = this.afterWhitespace;
    const lineBreak = held.lastIndexOf("\n");
    if (lineBreak >= 0) return existing.includes("\n") ? "" : held.slice(0, lineBreak + 1);
    return held.length > existing.length ? held.slice(0, held.length - existing.length) : "";
  }
}

// ---------------------------------------------------------------------------------------------------------------
// One line on surfaces where a line break would send or split the entry.

class SingleLineStop implements Stage {
  stopped = false;
  private hasContent = false;

  push(text: string): string {
    for (let index = 0; index < text.length; index++) {
      const char = text[index] ?? "";
      if (this.hasContent && (char === "\n" || char === "\r")) {
        this.stopped = true;
        return text.slice(0, index);
      }
      if (!/\s/.test(char)) this.hasContent = true;
    }
    return text;
  }

  end(): string {
    return "";
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The token budget, measured on the whole output so far.

/** Units end before a whitespace run or after this many chars, so the hold stays short on minified text. */
const MAX_UNIT = 64;

class TokenLimit implements Stage {
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
    for (let index = 0; index < text.length; index++) {
      const char = text[index] ?? "";
      const boundary = this.unit.length >= MAX_UNIT || (/\s/.test(char) && this.unit !== "" && !/\s/.test(this.unit[this.unit.length - 1] ?? ""));
      if (boundary) {
        out += this.completeUnit();
        if (this.stopped) return out;
      }
      this.unit += char;
      this.unitBytes += utf8Length(char);
    }
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
    let fits = this.longestFitting(unit, safe, unit.length, (prefix) => this.measuredTokens + this.countTokens(since + prefix));
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
