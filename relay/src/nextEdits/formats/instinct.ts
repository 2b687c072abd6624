import { field } from "../../providers/upstream/json";
import { splitAtCursor } from "../document";
import {
  type FormatInput,
  type NextEditFormat,
  type ParsedReply,
  count,
  newestWithin,
  snippetsOf,
  unfence,
  unifiedHunk,
} from "./format";

/**
 * Continue's Instinct (huggingface.co/continuedev/instinct, served through Ollama), with the messages Continue sends
 * it: continuedev/continue core/nextEdit/providers/InstinctNextEditProvider.ts (a system message, then the user
 * template), core/nextEdit/constants.ts (`INSTINCT_SYSTEM_PROMPT`, `INSTINCT_USER_PROMPT_PREFIX`, the tokens),
 * core/nextEdit/templating/NextEditPromptEngine.ts (the `instinct` template) and core/nextEdit/templating/instinct.ts
 * (context as `<|context_file|>: <path>` then `<|snippet|>`, edits as `User edited file "<path>"` diff blocks,
 * newest first, and the excerpt with the cursor token in its line and the region tokens on lines of their own).
 * Continue asks up to 25 lines either side of the cursor. The model answers with the region rewritten and nothing
 * else (`extractCompletion` returns the message as is).
 */
export const INSTINCT_TOKENS = {
  cursor: "<|user_cursor_is_here|>",
  regionStart: "<|editable_region_start|>",
  regionEnd: "<|editable_region_end|>",
  contextFile: "<|context_file|>",
  snippet: "<|snippet|>",
} as const;

export const INSTINCT_SYSTEM_PROMPT = `You are Instinct, an intelligent next-edit predictor developed by Continue.dev. Your role as an AI agent is to help developers complete their code tasks by predicting the next edit that they will make within the section of code marked by <|editable_region_start|> and <|editable_region_end|> tags.

You have access to the following information to help you make informed suggestions:

- Context: In the section marked "### Context", there are context items from potentially relevant files in the developer's codebase. Each context item consists of a <|context_file|> marker, the filepath, a <|snippet|> marker, and then some content from that file, in that order. Keep in mind that not all of the context information may be relevant to the task, so use your judgement to determine which parts to consider.
- User Edits: In the section marked "### User Edits:", there is a record of the most recent changes made to the code, helping you understand the evolution of the code and the developer's intentions. These changes are listed from most recent to least recent. It's possible that some of the edit diff history is entirely irrelevant to the developer's change. The changes are provided in a unified line-diff format, i.e. with pluses and minuses for additions and deletions to the code.
- User Excerpt: In the section marked "### User Excerpt:", there is a filepath to the developer's current file, and then an excerpt from that file. The <|editable_region_start|> and <|editable_region_end|> markers are within this excerpt. Your job is to rewrite only this editable region, not the whole excerpt. The excerpt provides additional context on the surroundings of the developer's edit.
- Cursor Position: Within the user excerpt's editable region, the <|user_cursor_is_here|> flag indicates where the developer's cursor is currently located, which can be crucial for understanding what part of the code they are focusing on. Do not produce this marker in your output; simply take it into account.

Your task is to predict and complete the changes the developer would have made next in the editable region. The developer may have stopped in the middle of typing. Your goal is to keep the developer on the path that you think they're following. Some examples include further implementing a class, method, or variable, or improving the quality of the code. Make sure the developer doesn't get distracted by ensuring your suggestion is relevant. Consider what changes need to be made next, if any. If you think changes should be made, ask yourself if this is truly what needs to happen. If you are confident about it, then proceed with the changes.

# Steps

1. **Review Context**: Analyze the context from the resources provided, such as recently viewed snippets, edit history, surrounding code, and cursor location.
2. **Evaluate Current Code**: Determine if the current code within the tags requires any corrections or enhancements.
3. **Suggest Edits**: If changes are required, ensure they align with the developer's patterns and improve code quality.
4. **Maintain Consistency**: Ensure indentation and formatting follow the existing code style.

# Output Format

- Provide only the revised code within the tags. Do not include the tags in your output.
- Ensure that you do not output duplicate code that exists outside of these tags.
- Avoid undoing or reverting the developer's last change unless there are obvious typos or errors.`;

const USER_PROMPT_PREFIX =
  "Reference the user excerpt, user edits, and the snippets to understand the developer's intent. Update the editable region of the user excerpt by predicting and completing the changes they would have made next. This may be a deletion, addition, or modification of code.";

const WINDOW_LINES = 25;
const EDIT_CHARS = 4_000;

export function instinctUserPrompt(input: FormatInput): string {
  const context = snippetsOf(input.context)
    .map((snippet) => `${INSTINCT_TOKENS.contextFile}: ${snippet.path}\n${INSTINCT_TOKENS.snippet}\n${snippet.text}`)
    .join("\n");
  const edits = newestWithin(
    input.recentEdits,
    (edit) => `User edited file "${edit.file_path}"\n\n\`\`\`diff\n${unifiedHunk(edit)}\n\`\`\``,
    EDIT_CHARS,
  )
    .reverse()
    .join("\n");
  return `${USER_PROMPT_PREFIX}\n\n### Context:\n${context}\n\n### User Edits:\n\n${edits}\n\n### User Excerpt:\n${input.doc.filePath}\n\n${instinctExcerpt(input)}\`\`\`\n### Response:`;
}

function instinctExcerpt(input: FormatInput): string {
  const { doc } = input;
  const at = (line: number) => line - doc.firstLine;
  const from = Math.max(0, at(doc.cursor.line) - WINDOW_LINES);
  const to = Math.min(doc.lines.length, at(doc.cursor.line) + WINDOW_LINES + 1);
  const cursor = splitAtCursor(doc);
  return [
    ...doc.lines.slice(from, at(doc.regionStart)),
    INSTINCT_TOKENS.regionStart,
    `${cursor.before}${INSTINCT_TOKENS.cursor}${cursor.after}`,
    INSTINCT_TOKENS.regionEnd,
    ...doc.lines.slice(at(doc.regionEnd), to),
  ].join("\n");
}

/**
 * The rewritten region: the reply as is, with any cursor token removed; a reply that wraps the region in its
 * tokens, or in one code fence, is unwrapped; a token anywhere else makes it unreadable.
 */
export function parseInstinctReply(reply: string): ParsedReply {
  let text = unfence(reply.split(INSTINCT_TOKENS.cursor).join(""));
  const starts = count(text, INSTINCT_TOKENS.regionStart);
  const ends = count(text, INSTINCT_TOKENS.regionEnd);
  if (starts + ends > 0) {
    const wrapped = new RegExp(
      `^\\s*${escape(INSTINCT_TOKENS.regionStart)}\\n?([\\s\\S]*?)\\n?${escape(INSTINCT_TOKENS.regionEnd)}\\s*$`,
    ).exec(text);
    if (starts !== 1 || ends !== 1 || !wrapped)
      return { kind: "unparseable", why: "region tokens inside the rewritten region" };
    text = wrapped[1] as string;
  }
  return { kind: "rewrite", text: text.replace(/\n$/, "") };
}

function escape(text: string): string {
  return text.replace(/[|\\^$.*+?()[\]{}]/g, "\\$&");
}

/** Ollama's native chat route (ollama/ollama docs/api.md, "Generate a chat completion"), as Continue's Ollama class uses it. */
export const instinctFormat: NextEditFormat = {
  name: "instinct",
  request(input, baseUrl) {
    // The upstream URL may be Ollama's OpenAI-compatible base (…/v1); the native API is at the server's root.
    const root = new URL(baseUrl);
    const url = `${root.origin}${root.pathname.replace(/\/+$/, "").replace(/\/v1$/, "")}/api/chat`;
    return {
      url,
      body: {
        model: input.model,
        messages: [
          { role: "system", content: INSTINCT_SYSTEM_PROMPT },
          { role: "user", content: instinctUserPrompt(input) },
        ],
        stream: false,
        options: { temperature: 0, num_predict: input.maxTokens },
      },
    };
  },
  text(json) {
    const content = field(field(json, "message"), "content");
    return typeof content === "string" ? content : undefined;
  },
  parse: parseInstinctReply,
};
