import type { TabContext } from "@tab-relay/shared";
import type { CompletionInput, ModelProvider, TextSink } from "../types";
import type { AbortLike } from "../../aborter";
import { isWordChar } from "../../completion/text";
import { completeWord, partialWordAtEnd } from "./identifier";
import { type Continuation, agree, chooseLength } from "./consensus";
import { type MatchTexts, TopScored, forEachEarlierMatch } from "./longestMatch";
import { type Analogy, type Budget, applyRenaming, extendAcrossRenaming } from "./analogy";
import { SnippetMap } from "./snippets";
import { limitLength, stopBeforeExistingText, stopForSurface } from "./stops";

/**
 * A match shorter than this is mostly punctuation and whitespace ("; }\n") and predicts nothing useful.
 * It must also reach past the partial word at the cursor, so the prediction rests on more than that word.
 */
const MIN_MATCH_CHARS = 6;
/** A word used in the document counts this many times as much as one in the snippets of other code. */
const DOCUMENT_WORDS = 2;
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
 * `surrounding_context`. The places whose text before them matches the text before the cursor longest, exactly
 * or with one identifier read as another (analogy.ts; what followed is then renamed the same way), are weighed
 * against each other (a longer match counts more, the document more than other files, a renaming less than an
 * exact repeat), and the suggestion is what they agree on, as far as it is worth suggesting (consensus.ts);
 * else the completion of the word being typed. Then it is cut to the surface's natural unit (line, code block, paragraph), to `maxTokens`,
 * and before anything that is already after the cursor. Pure and deterministic; `temperature` does not apply.
 */
export function predictContinuation(context: TabContext, maxTokens: number): string {
  const before = context.active_text_before_cursor;
  const after = context.active_text_after_cursor ?? "";
  const surrounding = context.surrounding_context ?? "";
  const partial = isWordChar(after[0]) ? "" : partialWordAtEnd(before);

  let text = "";
  const atIndentEnd = /(?:^|\n)[ \t]*$/.test(before.slice(-MAX_INDENT_CHARS));
  const places = findPlaces(
    { before, after, surrounding },
    Math.max(MIN_MATCH_CHARS, partial.length + 1),
    partial.length + 1,
    atIndentEnd,
  );
  if (places.length > 0) {
    const snippets = places.some((place) => place.source === "surrounding") ? new SnippetMap(surrounding) : undefined;
    const ownPaths = new Set([context.file_path, context.entity_id]);
    const continuations: Continuation[] = places.map((place) => {
      const source = place.source === "before" ? before : place.source === "after" ? after : surrounding;
      const { start, renaming } = place;
      let end = Math.min(source.length, start + MAX_CONTINUATION_CHARS);
      let weight = Math.exp(EVIDENCE_RATE * place.visible);
      if (place.source === "surrounding" && snippets) {
        end = snippets.end(start, end);
        const path = snippets.pathAt(start);
        if (path !== undefined && !ownPaths.has(path)) weight *= OTHER_FILE;
      }
      if (renaming === undefined) return { text: source, start, end, weight };
      const renamed = applyRenaming(
        source.slice(start, Math.min(end, start + MAX_RENAMED_CHARS)),
        renaming.from,
        renaming.to,
      );
      return { text: renamed, start: 0, end: renamed.length, weight: weight * RENAMING_FACTOR };
    });
    const agreed = agree(continuations, Math.exp(EVIDENCE_RATE * DOUBT_CHARS));
    if (agreed) {
      const { lead, steps } = agreed;
      const full = stopForSurface(lead.text.slice(lead.start, lead.end), context.surface, before, after);
      text = finish(full.slice(0, chooseLength(full, steps)), context, maxTokens);
    }
  }
  if (text === "" && partial.length >= MIN_WORD_PREFIX && !/^\d/.test(partial)) {
    const tail = completeWord(partial, [
      { text: before, offset: 0, reversed: true, weight: DOCUMENT_WORDS },
      { text: after, offset: 0, reversed: false, weight: DOCUMENT_WORDS },
      { text: surrounding, offset: before.length + after.length, reversed: false },
    ]);
    text = finish(tail, context, maxTokens);
  }
  return text;
}

/** An earlier place that looks like the cursor: where its continuation starts, and what its match saw. */
interface Place {
  readonly source: "before" | "after" | "surrounding";
  readonly start: number;
  /** Visible characters of the match (for an analogy, the renamed identifiers not counted). */
  readonly visible: number;
  readonly renaming?: Analogy | undefined;
}

/**
 * The MATCH_CANDIDATES places that look most like the cursor: exact repeats of at least `minExact` chars of the
 * text before the cursor, and analogies (analogy.ts) that share at least `minShared` chars with it before a
 * renamed identifier; each place once, as whichever saw more. At the end of a line's indentation, a place that
 * goes on with more of it was indented deeper and is left out.
 */
function findPlaces(texts: MatchTexts, minExact: number, minShared: number, atIndentEnd: boolean): Place[] {
  const { before } = texts;
  const visible = visibleAtEnd(before);
  const best = new TopScored<Place>(MATCH_CANDIDATES);
  const budget: Budget = { chars: ANALOGY_BUDGET_CHARS };
  forEachEarlierMatch(
    texts,
    minExact,
    (name, length, start) => {
      const source = name === "before" ? before : name === "after" ? texts.after : texts.surrounding;
      if (atIndentEnd && isIndentChar(source.charCodeAt(start))) return;
      let seen = length >= minExact ? visible(length) - partialWord(before, source, start, length) : -1;
      let renaming: Analogy | undefined;
      if (budget.chars > 0 && length >= minShared) {
        const analogy = extendAcrossRenaming(source, 0, start, length, before, visible, budget);
        if (analogy && analogy.visible > seen) {
          seen = analogy.visible;
          renaming = analogy;
        }
      }
      const score = seen + (renaming ? 0 : EXACT_BONUS);
      if (seen >= 0 && best.admits(score)) best.offer(score, { source: name, start, visible: seen, renaming });
    },
    minShared,
  );
  return best.items;
}

/**
 * The visible characters a match of `length` at `start` in `source` owes to the end of a word that differs: if
 * the match starts inside a word on either side ("alph|a(" and "bet|a("), that part of a word is no agreement.
 */
function partialWord(before: string, source: string, start: number, length: number): number {
  const from = before.length - length;
  if (!isWordChar(before[from]) || !(isWordChar(before[from - 1]) || isWordChar(source[start - length - 1]))) return 0;
  let end = from;
  while (end < before.length && isWordChar(before[end])) end++;
  return end - from;
}

/**
 * A renamed continuation is a guess about more than the text: that the renaming holds. It counts this much of
 * an exact repeat that saw as much.
 */
const RENAMING_FACTOR = 0.5;
/** A renamed continuation is written out this far: some twenty lines, past what one analogy can vouch for. */
const MAX_RENAMED_CHARS = 800;
/** Characters all analogies of one prediction may compare: about 50 places that agree for a whole MAX_ANALOGY_CHARS. */
const ANALOGY_BUDGET_CHARS = 16_000;
/** Ranks an exact repeat above an analogy that saw as much, in the choice of places to weigh. */
const EXACT_BONUS = 0.5;

/** Indentation is searched for in this much of the end of the text before the cursor. */
const MAX_INDENT_CHARS = 256;

/** Reused across calls, as the match buffers are: predictions are synchronous. */
let visibleCounts = new Int32Array(0);

/**
 * visible(k): how many of the last k characters of `text` are not whitespace (what a match of k chars really
 * saw). Counted as far as asked: most matches are short, and the text before the cursor can be 16k characters.
 */
function visibleAtEnd(text: string): (length: number) => number {
  let counted = 0;
  visibleCounts[0] = 0;
  return (length) => {
    const want = Math.min(length, text.length);
    if (want > counted) {
      if (visibleCounts.length < want + 1) {
        const grown = new Int32Array(Math.max(want + 1, 2 * visibleCounts.length));
        grown.set(visibleCounts.subarray(0, counted + 1));
        visibleCounts = grown;
      }
      for (let k = counted + 1; k <= want; k++) {
        const code = text.charCodeAt(text.length - k);
        visibleCounts[k] =
          (visibleCounts[k - 1] ?? 0) + (code === 32 || code === 9 || code === 10 || code === 13 ? 0 : 1);
      }
      counted = want;
    }
    return visibleCounts[want] ?? 0;
  };
}

function isIndentChar(code: number): boolean {
  return code === 32 || code === 9;
}

function finish(text: string, context: TabContext, maxTokens: number): string {
  const stopped = stopForSurface(
    text,
    context.surface,
    context.active_text_before_cursor,
    context.active_text_after_cursor,
  );
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
    // Synchronous work behind the async interface: async turns a throw (an abort) into the rejection callers await.
    async complete(input: CompletionInput, signal: AbortLike, onText: TextSink): Promise<void> {
      signal.throwIfAborted();
      for (const fragment of splitIntoFragments(predictContinuation(input.context, input.maxTokens))) {
        signal.throwIfAborted();
        if (onText(fragment) === false) break;
      }
    },
  };
}
