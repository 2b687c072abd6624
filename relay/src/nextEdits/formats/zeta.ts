import { joinUrl } from "../../providers/upstream/modes/mode";
import { completionText } from "../../providers/upstream/json";
import { contextLines, splitAtCursor } from "../document";
import { type FormatInput, type NextEditFormat, type ParsedReply, count, newestWithin, unifiedHunk } from "./format";

/**
 * Zed's Zeta 1 (huggingface.co/zed-industries/zeta, a Qwen2.5-Coder-7B fine-tune the card serves with vLLM), asked
 * through an OpenAI-compatible `/v1/completions`. The prompt is byte for byte zed-industries/zed
 * crates/zeta_prompt/src/zeta_prompt.rs `mod zeta1` (`format_zeta1_prompt`, `format_zeta1_event`,
 * `format_zeta1_excerpt`): an instruction, the "User edited <path>:" events as diff blocks, oldest first, and the
 * excerpt in a fence named by the path, with `<|start_of_file|>` when it starts the file, the editable region
 * between its markers and the cursor marker. Budgets follow crates/zeta/src/zeta1.rs (about 150 tokens of context,
 * 500 of events, at about 3 bytes a token as `guess_token_count` counts them). Checked again against the crate's
 * `zeta1` module (`format_zeta1_prompt`, `format_zeta1_event`, `format_zeta1_excerpt`, `clean_zeta1_model_output`) and
 * Zed's self-hosted request (crates/edit_prediction, `EditPredictionPromptFormat::Zeta`): Zed sends the region end
 * marker as a stop sequence, so the server cuts it off and Zed reads to the end of the text; the relay sends no stop
 * sequence and requires the marker, so a reply cut by max_tokens is refused instead of applied short.
 */
export const ZETA_MARKERS = {
  cursor: "<|user_cursor_is_here|>",
  startOfFile: "<|start_of_file|>",
  regionStart: "<|editable_region_start|>",
  regionEnd: "<|editable_region_end|>",
} as const;

const INSTRUCTION_HEADER =
  "### Instruction:\n" +
  "You are a code completion assistant and your task is to analyze user edits and then rewrite an " +
  "excerpt that the user provides, suggesting the appropriate edits within the excerpt, taking " +
  "into account the cursor location.\n\n" +
  "### User Edits:\n\n";
const EXCERPT_HEADER = "\n\n### User Excerpt:\n\n";
const RESPONSE_HEADER = "\n\n### Response:\n";

const CONTEXT_CHARS = 450;
const EVENT_CHARS = 1_500;

export function zetaPrompt(input: FormatInput): string {
  const events = newestWithin(
    input.recentEdits,
    (edit) => `User edited ${edit.file_path}:\n\`\`\`diff\n${unifiedHunk(edit)}\n\`\`\``,
    EVENT_CHARS,
  ).join("\n\n");
  return INSTRUCTION_HEADER + events + EXCERPT_HEADER + zetaExcerpt(input) + RESPONSE_HEADER;
}

function zetaExcerpt(input: FormatInput): string {
  const { doc } = input;
  const { before, after } = withinChars(contextLines(doc, 64), CONTEXT_CHARS);
  const cursor = splitAtCursor(doc);
  let text = `\`\`\`${doc.filePath}\n`;
  if (before.startsFile) text += `${ZETA_MARKERS.startOfFile}\n`;
  for (const line of before.lines) text += `${line}\n`;
  text += `${ZETA_MARKERS.regionStart}\n${cursor.before}${ZETA_MARKERS.cursor}${cursor.after}\n${ZETA_MARKERS.regionEnd}`;
  for (const line of after) text += `\n${line}`;
  return `${text}\n\`\`\``;
}

/** The nearest context lines that fit in `budget` characters on each side. */
export function withinChars(
  context: { before: string[]; after: string[]; startsFile: boolean },
  budget: number,
): { before: { lines: string[]; startsFile: boolean }; after: string[] } {
  const before: string[] = [];
  let used = 0;
  for (let i = context.before.length - 1; i >= 0; i--) {
    const line = context.before[i] as string;
    if (used + line.length + 1 > budget) break;
    used += line.length + 1;
    before.unshift(line);
  }
  const after: string[] = [];
  used = 0;
  for (const line of context.after) {
    if (used + line.length + 1 > budget) break;
    used += line.length + 1;
    after.push(line);
  }
  return {
    before: { lines: before, startsFile: context.startsFile && before.length === context.before.length },
    after,
  };
}

/**
 * The rewritten region of a Zeta reply, read as Zed reads it (crates/zeta/src/zeta1.rs `parse_edits`): cursor
 * markers removed, exactly one start and one end marker, the region from the line after the start marker to the
 * line break before the end marker.
 */
export function parseZetaReply(reply: string): ParsedReply {
  const content = reply.split(ZETA_MARKERS.cursor).join("");
  const starts = count(content, ZETA_MARKERS.regionStart);
  const ends = count(content, ZETA_MARKERS.regionEnd);
  if (starts !== 1 || ends !== 1)
    return { kind: "unparseable", why: `expected one region start and one end marker, found ${starts} and ${ends}` };
  const afterStart = content.slice(content.indexOf(ZETA_MARKERS.regionStart) + ZETA_MARKERS.regionStart.length);
  const lineBreak = afterStart.indexOf("\n");
  if (lineBreak < 0) return { kind: "unparseable", why: "no line break after the region start marker" };
  const body = afterStart.slice(lineBreak + 1);
  if (body.startsWith(ZETA_MARKERS.regionEnd)) return { kind: "rewrite", text: "" };
  const end = body.lastIndexOf(`\n${ZETA_MARKERS.regionEnd}`);
  if (end < 0) return { kind: "unparseable", why: "the region end marker is not on a line of its own" };
  return { kind: "rewrite", text: body.slice(0, end) };
}

/**
 * A prompt sent to an OpenAI-compatible `/completions` (vLLM, llama.cpp, Ollama's /v1): greedy, as Zeta's card runs it
 * with vLLM, and with no stop sequence, since the reply's end marker is what proves it whole.
 */
export function completionsRequest(
  input: FormatInput,
  baseUrl: string,
  prompt: string,
): { url: string; body: Record<string, unknown> } {
  return {
    url: joinUrl(baseUrl, "/completions"),
    body: { model: input.model, prompt, max_tokens: input.maxTokens, temperature: 0 },
  };
}

export const zetaFormat: NextEditFormat = {
  name: "zeta",
  request: (input, baseUrl) => completionsRequest(input, baseUrl, zetaPrompt(input)),
  text: completionText,
  parse: parseZetaReply,
};
