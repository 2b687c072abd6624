import type { TabContext } from "@tab-relay/shared";
import type { CompletionInput, ModelProvider, TextSink } from "../types";
import { isWordChar } from "../../completion/text";
import { completeWord, partialWordAtEnd } from "./identifier";
import { findLongestEarlierMatch } from "./longestMatch";
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

/**
 * Predicts the text at the cursor from the document itself: the longest earlier repeat of what precedes the
 * cursor, else the completion of the word being typed; then cut to the surface's natural unit (line, code
 * block, paragraph), to `maxTokens`, and before anything that is already after the cursor. Pure and
 * deterministic; `temperature` does not apply.
 */
export function predictContinuation(context: TabContext, maxTokens: number): string {
  const before = context.active_text_before_cursor;
  const after = context.active_text_after_cursor ?? "";
  const surrounding = context.surrounding_context ?? "";
  const partial = isWordChar(after[0]) ? "" : partialWordAtEnd(before);

  let text = "";
  const match = findLongestEarlierMatch({ before, after, surrounding }, Math.max(MIN_MATCH_CHARS, partial.length + 1));
  if (match) {
    const source = match.source === "before" ? before : match.source === "after" ? after : surrounding;
    const limit = match.continuationStart + MAX_CONTINUATION_CHARS;
    const end = match.source === "surrounding" ? snippetEnd(surrounding, match.continuationStart, limit) : limit;
    text = finish(source.slice(match.continuationStart, end), context, maxTokens);
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

/**
 * Where the snippet holding `from` ends in `surrounding_context`: before the next snippet's header line
 * (`--- file: <path> ---`, written by formatSnippets in shared/src/protocol/snippets.ts, which escapes a line of
 * code that looks like one with a leading space). What follows a header is another file, or another part of one:
 * a continuation that ran on into it would suggest the header and code from somewhere else.
 */
function snippetEnd(surrounding: string, from: number, limit: number): number {
  HEADER_LINE.lastIndex = from;
  const header = HEADER_LINE.exec(surrounding);
  if (header === null || header.index >= limit) return limit;
  // The line break before the header ends the snippet's text.
  return Math.max(from, header.index - 1);
}

const HEADER_LINE = /^--- file: .+ ---\r?$/gm;

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
