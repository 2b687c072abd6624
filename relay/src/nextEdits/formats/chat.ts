import { joinUrl } from "../../providers/upstream/modes/mode";
import { chatText } from "../../providers/upstream/json";
import { contextLines, splitAtCursor } from "../document";
import { type FormatInput, type NextEditFormat, type ParsedReply, count, newestWithin, unifiedHunk } from "./format";
import { isNoChangeMarker } from "../guards";

/**
 * Any chat model through an OpenAI-compatible `/chat/completions`: asked, in plain instructions, to rewrite the
 * region between markers and to answer in one exact shape, which is then read strictly: `NO_CHANGE`, or one
 * `<rewrite>…</rewrite>` block and nothing around it. A chat model has no trained format, so anything else it
 * writes (an explanation, two blocks, markers) is refused rather than guessed at.
 */
export const CHAT_MARKERS = {
  regionStart: "<|editable_region_start|>",
  regionEnd: "<|editable_region_end|>",
  cursor: "<|user_cursor_is_here|>",
  open: "<rewrite>",
  close: "</rewrite>",
  noChange: "NO_CHANGE",
} as const;

export const CHAT_SYSTEM_PROMPT = `You predict the next edit a programmer will make in a file, from the edits they just made.
The user message holds their recent edits as unified diffs (oldest first) and an excerpt of the current file. In the excerpt, the editable region lies between the lines ${CHAT_MARKERS.regionStart} and ${CHAT_MARKERS.regionEnd}, and ${CHAT_MARKERS.cursor} marks the cursor.
Rewrite the editable region with the change the programmer will most likely make next there, such as finishing a rename, an added argument or a changed value they began elsewhere. Change nothing else, keep the indentation, and never remove code unless the edits show that intent.
Answer in exactly one of two ways, with nothing before or after:
- the whole editable region, rewritten, without the markers, between a line ${CHAT_MARKERS.open} and a line ${CHAT_MARKERS.close};
- the single word ${CHAT_MARKERS.noChange} when no edit is clearly needed.`;

const CONTEXT_LINES = 30;
const EDIT_CHARS = 4_000;

export function chatUserPrompt(input: FormatInput): string {
  const { doc } = input;
  const edits = newestWithin(
    input.recentEdits,
    (edit) => `--- ${edit.file_path}\n${unifiedHunk(edit)}`,
    EDIT_CHARS,
  ).join("\n");
  const { before, after } = contextLines(doc, CONTEXT_LINES);
  const cursor = splitAtCursor(doc);
  const excerpt = [
    ...before,
    CHAT_MARKERS.regionStart,
    `${cursor.before}${CHAT_MARKERS.cursor}${cursor.after}`,
    CHAT_MARKERS.regionEnd,
    ...after,
  ].join("\n");
  return `Recent edits:\n${edits === "" ? "(none)" : edits}\n\nFile ${doc.filePath}${doc.language ? ` (${doc.language})` : ""}:\n${excerpt}`;
}

export function parseChatReply(reply: string): ParsedReply {
  const trimmed = reply.trim();
  if (isNoChangeMarker(trimmed)) return { kind: "no_change" };
  if (count(trimmed, CHAT_MARKERS.open) !== 1 || count(trimmed, CHAT_MARKERS.close) !== 1)
    return { kind: "unparseable", why: `expected one ${CHAT_MARKERS.open} block or ${CHAT_MARKERS.noChange}` };
  if (!trimmed.startsWith(CHAT_MARKERS.open) || !trimmed.endsWith(CHAT_MARKERS.close))
    return { kind: "unparseable", why: `text outside the ${CHAT_MARKERS.open} block` };
  let text = trimmed.slice(CHAT_MARKERS.open.length, -CHAT_MARKERS.close.length);
  text = text.replace(/^\r?\n/, "").replace(/\r?\n$/, "");
  text = text.split(CHAT_MARKERS.cursor).join("");
  if (text.includes(CHAT_MARKERS.regionStart) || text.includes(CHAT_MARKERS.regionEnd))
    return { kind: "unparseable", why: "region markers inside the rewritten region" };
  return { kind: "rewrite", text };
}

export const chatFormat: NextEditFormat = {
  name: "chat",
  request(input: FormatInput, baseUrl: string) {
    return {
      url: joinUrl(baseUrl, "/chat/completions"),
      body: {
        model: input.model,
        messages: [
          { role: "system", content: CHAT_SYSTEM_PROMPT },
          { role: "user", content: chatUserPrompt(input) },
        ],
        temperature: 0,
        max_tokens: input.maxTokens,
        stream: false,
      },
    };
  },
  text: chatText,
  parse: parseChatReply,
};
