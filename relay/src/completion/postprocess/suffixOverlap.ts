import { isWordChar } from "@tab-relay/shared";
import { CLOSERS, OPENERS, isWhitespaceCode } from "../text";
import type { Stage } from "./stage";

// Text that is already after the cursor: stop before the output restates it.

/** Anchors are compared up to this length, and a line longer than the next line by this much is not a repeat. */
const ANCHOR_MAX = 200;
const LINE_SLACK = 64;
/** Trailing whitespace is held (it goes if the output stops right after it); a longer run is released. */
const MAX_HELD_WHITESPACE = 256;

export class SuffixOverlapStop implements Stage {
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
    for (let start = lineBreak + 1; start > 0 && start <= after.length && nextLine === "";) {
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
    // Text goes out in slices rather than a string per character (the stage's garbage, docs/benchmarks.md):
    // text[mark, passed) has been let through and is still to be added to `out`; text[passed, index) is whitespace
    // held after `heldWhitespace` (which is non-empty only while mark === passed).
    let mark = 0;
    let passed = 0;
    let index = 0;
    for (; index < text.length; index++) {
      const char = text[index] ?? "";
      if (!isWhitespaceCode(text.charCodeAt(index))) {
        const verdict = this.overlapAt(text, index, ending);
        if (verdict === "wait") break;
        if (verdict === "overlap") {
          out += text.slice(mark, passed);
          this.heldWhitespace += text.slice(passed, index);
          out += this.cutWhitespace();
          this.stopped = true;
          this.pending = "";
          return out;
        }
        if (this.heldWhitespace !== "") out += this.takeWhitespace();
        passed = index + 1;
        this.lineHasContent = true;
        if (OPENERS.includes(char)) this.depth++;
        else if (CLOSERS.includes(char)) this.depth--;
      } else {
        if (char === "\n") this.lineHasContent = false;
        if (this.heldWhitespace.length + index + 1 - passed > MAX_HELD_WHITESPACE) {
          // Past the cap, the oldest held whitespace goes out and the last MAX_HELD_WHITESPACE chars stay held.
          const held = this.heldWhitespace + text.slice(passed, index + 1);
          out += text.slice(mark, passed) + held.slice(0, -MAX_HELD_WHITESPACE);
          this.heldWhitespace = held.slice(-MAX_HELD_WHITESPACE);
          mark = passed = index + 1;
        }
      }
      this.lastChar = char;
    }
    out += text.slice(mark, passed);
    this.heldWhitespace += text.slice(passed, index);
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
    if (this.nextLine !== "" && !this.lineHasContent && char === this.nextLine[0])
      return this.nextLineAt(text, index, ending);
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
