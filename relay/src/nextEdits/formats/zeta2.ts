import { completionText } from "../../providers/upstream/json";
import { contextLines, splitAtCursor } from "../document";
import { type FormatInput, type NextEditFormat, type ParsedReply, snippetsOf, unifiedHunk } from "./format";
import { completionsRequest, withinChars } from "./zeta";

/**
 * Zed's Zeta 2 (the `zeta-2` model, a Seed-Coder-8B fine-tune served by vLLM, llama.cpp or Ollama), asked through an
 * OpenAI-compatible `/v1/completions` as Zed's own `open_ai_compatible_api` provider asks it. Its prompt format is
 * zed-industries/zed crates/zeta_prompt `ZetaFormat::V0211SeedCoder` (the variant `#[serde(alias = "Zeta2")]`
 * names; the zed-zeta-bindings package's table says the same, "Zeta2: V0211SeedCoder"), written by the crate's
 * `seed_coder` module (`assemble_fim_prompt`, `build_suffix_section`, `build_cursor_prefix_section`):
 *
 * - SPM order: `<[fim-suffix]>` and the code after the editable region first, then `<[fim-prefix]>`;
 * - in the prefix, related files as `<filename><path>` sections, then `<filename>edit_history` with the newest edits
 *   (at most 6, `max_edit_event_count_for_format`) as `--- a/<path>` / `+++ b/<path>` diffs, oldest first, each
 *   section followed by a blank line;
 * - then `<filename><path>`, the code before the region, `<<<<<<< CURRENT`, the region with `<|user_cursor|>` at the
 *   cursor, `=======`, and `<[fim-middle]>`.
 *
 * The model answers with the region rewritten and `>>>>>>> UPDATED` (`output_end_marker_for_format`); Zed strips the
 * marker and sends no stop sequence for this format (`stop_tokens_for_format` is empty). Budgets follow the crate at
 * about 3 bytes a token (`estimate_tokens`): about 150 tokens of context each side (`editable_350_context_150`) and
 * a prompt of at most 4,096 tokens (`MAX_PROMPT_TOKENS`). Where this differs from Zed: the editable region is the
 * one the client sent rather than Zed's 350-token one; a related file's snippet is written without Zed's `...` line
 * (the request does not say whether the snippet reaches the end of its file); the request asks for temperature 0;
 * and a reply without its end marker (cut by max_tokens) is refused rather than taken as it is.
 */
export const ZETA2_MARKERS = {
  fimSuffix: "<[fim-suffix]>",
  fimPrefix: "<[fim-prefix]>",
  fimMiddle: "<[fim-middle]>",
  file: "<filename>",
  cursor: "<|user_cursor|>",
  current: "<<<<<<< CURRENT\n",
  separator: "=======\n",
  updated: ">>>>>>> UPDATED\n",
} as const;

const CONTEXT_CHARS = 450;
const PROMPT_CHARS = 4_096 * 3;
const MAX_EVENTS = 6;

/** Ends `text` with a line break, as the crate's sections do (`if !section.ends_with('\n')`). */
function endLine(text: string): string {
  return text.endsWith("\n") ? text : `${text}\n`;
}

export function zeta2Prompt(input: FormatInput): string {
  const { doc } = input;
  const { before, after } = withinChars(contextLines(doc, 64), CONTEXT_CHARS);
  const cursor = splitAtCursor(doc);
  const suffix = endLine(`${ZETA2_MARKERS.fimSuffix}${after.join("\n")}`);
  const current =
    `${ZETA2_MARKERS.file}${doc.filePath}\n` +
    before.lines.map((line) => `${line}\n`).join("") +
    ZETA2_MARKERS.current +
    endLine(`${cursor.before}${ZETA2_MARKERS.cursor}${cursor.after}`) +
    ZETA2_MARKERS.separator;
  let budget = PROMPT_CHARS - suffix.length - ZETA2_MARKERS.fimPrefix.length - current.length;

  const events: string[] = [];
  const header = `${ZETA2_MARKERS.file}edit_history\n`;
  budget -= header.length;
  for (const edit of input.recentEdits.slice(-MAX_EVENTS).reverse()) {
    const event = `--- a/${edit.file_path}\n+++ b/${edit.file_path}\n${unifiedHunk(edit)}\n`;
    if (event.length > budget) break;
    budget -= event.length;
    events.unshift(event);
  }
  const history = events.length === 0 ? "" : `${header}${events.join("")}\n`;

  let related = "";
  for (const snippet of snippetsOf(input.context)) {
    const section = endLine(`${ZETA2_MARKERS.file}${snippet.path}\n${snippet.text}`);
    if (section.length > budget) break;
    budget -= section.length;
    related += section;
  }
  if (related !== "") related += "\n";

  return `${suffix}${ZETA2_MARKERS.fimPrefix}${related}${history}${current}${ZETA2_MARKERS.fimMiddle}`;
}

/** The format's structure, which a rewritten region may not hold: its FIM tokens, and a line opening a merge marker. */
const STRUCTURE = /<\[fim-(?:suffix|prefix|middle)\]>|^(?:<<<<<<< |=======$|>>>>>>> )/m;

/**
 * The rewritten region of a Zeta 2 reply, read as the crate's `parse_zeta2_model_output` reads it for this format:
 * the end marker stripped from the end, the cursor marker removed. A reply without the end marker, or with another
 * of the format's markers in it, is refused.
 */
export function parseZeta2Reply(reply: string): ParsedReply {
  const text = reply.endsWith(ZETA2_MARKERS.updated)
    ? reply.slice(0, -ZETA2_MARKERS.updated.length)
    : reply.endsWith(ZETA2_MARKERS.updated.trimEnd())
      ? reply.slice(0, -ZETA2_MARKERS.updated.trimEnd().length)
      : undefined;
  if (text === undefined) return { kind: "unparseable", why: "no end marker: the reply was cut or is not Zeta 2's" };
  const region = text.split(ZETA2_MARKERS.cursor).join("");
  const stray = STRUCTURE.exec(region);
  if (stray !== null) return { kind: "unparseable", why: `the format's marker ${stray[0]} in the region` };
  return { kind: "rewrite", text: region.replace(/\n$/, "") };
}

/**
 * What Zeta 2 reads as its prompt's structure in the person's text, broken as control tokens are (a zero-width space
 * after the first character): its FIM tokens, and a line that starts like one of its merge markers (a file with a
 * merge conflict in it would otherwise close the region early). Zed instead declines to predict for such a file
 * (`prompt_input_contains_special_tokens`).
 */
export function neutraliseZeta2(text: string): string {
  return text
    .replace(/<\[fim-(?:suffix|prefix|middle)\]>/g, (token) => `<\u200B${token.slice(1)}`)
    .replace(/^(<<<<<<<|=======|>>>>>>>)/gm, (marker) => `${marker.slice(0, 1)}\u200B${marker.slice(1)}`);
}

export const zeta2Format: NextEditFormat = {
  name: "zeta2",
  request: (input, baseUrl) => completionsRequest(input, baseUrl, zeta2Prompt(input)),
  text: completionText,
  parse: parseZeta2Reply,
  neutralise: neutraliseZeta2,
};
