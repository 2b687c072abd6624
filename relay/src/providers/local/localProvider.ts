import type { TabContext } from "@tab-relay/shared";
import type { CompletionInput, ModelProvider, TextSink } from "../types";
import { isWordChar } from "../../completion/text";
import { completeWord, partialWordAtEnd } from "./identifier";
import { type Continuation, agree, chooseLength } from "./consensus";
import { findEarlierMatches } from "./longestMatch";
import { SnippetMap } from "./snippets";
import { limitLength, stopBeforeExistingText, stopForSurface } from "./stops";

/**
 * A match shorter than this is mostly punctuation and whitespace ("; }\n") and predicts nothing useful.
 * It must also reach past the partial word at the cursor, so the prediction rests on more than that word.
 */
const MIN_MATCH_CHARS = 6;
/** One- and two-letter prefixes match half the dictionary; completing them is noise. */
const MIN_WORD_PREFIX = 2;
/** Only this much of a source is read after a match; at four chars a token it covers the 500-token maximum. */
const MAX_CONTINUATION_CHARS = 2_048;

/** How many earlier places that look like the cursor are weighed against each other. */
const MATCH_CANDIDATES = 24;
/**
 * A place counts e^(EVIDENCE_RATE × the visible characters of its match): each two more characters that agree
 * with the text before the cursor make it nearly three times as likely to be the place the cursor is at again.
 * Visible, because a match of indentation and line breaks says little.
 */
const EVIDENCE_RATE = 0.5;
/** The weight of "none of them": as much as one place matched on this many visible characters. */
const DOUBT_CHARS = 6;
/** A place in another file counts this much of a place in the document itself, for the same match. */
const OTHER_FILE = 0.8;

/**
 * Predicts the text at the cursor from text it was sent: the document around the cursor and the snippets of
 * `surrounding_context`. The places whose text before them matches the text before the cursor longest are
 * weighed against each other (a longer match counts more, the document more than other files), and the
 * suggestion is what they agree on, as far as it is worth suggesting (consensus.ts); else the completion of the
 * word being typed. Then it is cut to the surface's natural unit (line, code block, paragraph), to `maxTokens`,
 * and before anything that is already after the cursor. Pure and deterministic; `temperature` does not apply.
 */
export function predictContinuation(context: TabContext, maxTokens: number): string {
  const before = context.active_text_before_cursor;
  const after = context.active_text_after_cursor ?? "";
  const surrounding = context.surrounding_context ?? "";
  const partial = isWordChar(after[0]) ? "" : partialWordAtEnd(before);

  let text = "";
  const matches = findEarlierMatches({ before, after, surrounding }, Math.max(MIN_MATCH_CHARS, partial.length + 1), MATCH_CANDIDATES);
  if (matches.length > 0) {
    const visible = visibleCharsFromEnd(before, Math.min(before.length, matches[0]?.length ?? 0));
    const snippets = matches.some((match) => match.source === "surrounding") ? new SnippetMap(surrounding) : undefined;
    const ownPaths = new Set([context.file_path, context.entity_id]);
    const atIndentEnd = /(?:^|\n)[ \t]*$/.test(before.slice(-MAX_INDENT_CHARS));
    const continuations: Continuation[] = [];
    for (const match of matches) {
      const source = match.source === "before" ? before : match.source === "after" ? after : surrounding;
      const start = match.continuationStart;
      // At the end of a line's indentation, a place that goes on with more of it was indented deeper.
      if (atIndentEnd && isIndentChar(source.charCodeAt(start))) continue;
      let end = Math.min(source.length, start + MAX_CONTINUATION_CHARS);
      let weight = Math.exp(EVIDENCE_RATE * (visible[Math.min(match.length, before.length)] ?? 0));
      if (match.source === "surrounding" && snippets) {
        end = snippets.end(start, end);
        const path = snippets.pathAt(start);
        if (path !== undefined && !ownPaths.has(path)) weight *= OTHER_FILE;
      }
      continuations.push({ text: source, start, end, weight });
    }
    const agreed = agree(continuations, Math.exp(EVIDENCE_RATE * DOUBT_CHARS));
    if (agreed) {
      const { lead, steps } = agreed;
      const full = stopForSurface(lead.text.slice(lead.start, lead.end), context.surface, before, after);
      text = finish(full.slice(0, chooseLength(full, steps)), context, maxTokens);
    }
  }
  if (text === "" && partial.length >= MIN_WORD_PREFIX && !/^\d/.test(partial)) {
    const tail = completeWord(partial, [
      { text: before, offset: 0, reversed: true },
      { text: after, offset: 0, reversed: false },
      { text: surrounding, offset: before.length + after.length, reversed: false },
    ]);
    text = finish(tail, context, maxTokens);
  }
  return text;
}

/** Indentation is searched for in this much of the end of the text before the cursor. */
const MAX_INDENT_CHARS = 256;

/** visible[k]: how many of the last k (up to `most`) characters of `text` are not whitespace (what a match of k chars really saw). */
function visibleCharsFromEnd(text: string, most: number): Int32Array {
  const visible = new Int32Array(most + 1);
  for (let k = 1; k <= most; k++) {
    const code = text.charCodeAt(text.length - k);
    visible[k] = (visible[k - 1] ?? 0) + (code === 32 || code === 9 || code === 10 || code === 13 ? 0 : 1);
  }
  return visible;
}

function isIndentChar(code: number): boolean {
  return code === 32 || code === 9;
}

function finish(text: string, context: TabContext, maxTokens: number): string {
  const stopped = stopForSurface(text, context.surface, context.active_text_before_cursor, context.active_text_after_cursor);
  return stopBeforeExistingText(limitLength(stopped, maxTokens), context.active_text_after_cursor ?? "");
}

/** Word-sized pieces (each word with the whitespace before it), so clients see the suggestion stream in. */
export function splitIntoFragments(text: string): string[] {
  return text.match(/\s*\S+|\s+$/g) ?? [];
}

/** The built-in provider: needs no model server, answers in well under a millisecond for typical contexts. */
export function createLocalProvider(): ModelProvider {
  return {
    name: "local",
    complete(input: CompletionInput, signal: AbortSignal, onText: TextSink): Promise<void> {
      try {
        signal.throwIfAborted();
        for (const fragment of splitIntoFragments(predictContinuation(input.context, input.maxTokens))) {
          signal.throwIfAborted();
          if (onText(fragment) === false) break;
        }
        return Promise.resolve();
      } catch (error) {
        return Promise.reject(error);
      }
    },
  };
}
