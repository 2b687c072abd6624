import type { TabContext } from "@tab-relay/shared";
import { indentation } from "../text";
import type { Stage } from "./stage";

// Chat-model wrapping: "Sure! Here is the completion:", ```lang fences, and whatever follows the closing fence.

const INTERJECTION = /^(?:sure|certainly|of course|absolutely|okay|ok|alright|got it)\b/i;
const BARE_INTERJECTION = /^(?:sure|certainly|of course|absolutely|okay|ok|alright|got it)[!.]?$/i;
const PRESENTING =
  /^(?:(?:sure|certainly|of course|absolutely|okay|ok|alright|got it)[!,.]?\s+)?(?:here(?:'s| is| are)|below is|this is)\b/i;
/** Words a lead-in uses for the answer itself; everyday words ("result", "plan") would strip real prose. */
const ABOUT_THE_ANSWER = /\b(?:completion|continuation|code|snippet|suggestion|implementation|completed|rest of)\b/i;
/** Every lead-in line begins with one of these, so a line that cannot is released at once. */
const LEAD_IN_STARTS = [
  "sure",
  "certainly",
  "of course",
  "absolutely",
  "ok",
  "alright",
  "got it",
  "here",
  "below is",
  "this is",
  "completion",
  "continuation",
];
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
  return (
    lower.startsWith("```") ||
    "```".startsWith(lower) ||
    LEAD_IN_STARTS.some((start) => start.startsWith(lower) || lower.startsWith(start))
  );
}

export class ChatterFilter implements Stage {
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
    for (let lineStart = 0; ;) {
      const newline = text.indexOf("\n", lineStart);
      const complete = newline >= 0;
      const lineEnd = complete ? newline : text.length;
      const line = text.slice(lineStart, lineEnd).trim();
      const beyondWindow = lineEnd > LEAD_IN_WINDOW;

      if (!complete && !ending) {
        if (beyondWindow || (line !== "" && !couldStartLeadIn(line)))
          return this.startBody(text.slice(dropUntil), false);
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
