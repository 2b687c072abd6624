import type { TabContext } from "@tab-relay/shared";

/**
 * Control tokens of the model families a relay's prompts are written for. A repository's files are not trusted
 * text: a file that holds `<|fim_suffix|>` or `<|im_start|>` (a tokenizer's tests, a prompt template, this relay's own
 * templates.ts) would otherwise rewrite the structure of the prompt around it, since model servers tokenize the
 * control tokens written in a prompt's text as the tokens themselves. Client text has each one neutralised before
 * templating, so the prompt sent upstream holds exactly the template's own control tokens.
 *
 * Sources of the FIM and file tokens are cited at each template in providers/upstream/templates.ts; the chat and
 * end-of-text tokens are each family's tokenizer's special tokens.
 */
export const CONTROL_TOKENS = {
  /** Qwen2.5-Coder: FIM, repository and ChatML tokens (QwenLM/Qwen2.5-Coder README.md). */
  "qwen-coder": [
    "<|endoftext|>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<|im_start|>",
    "<|im_end|>",
  ],
  /** StarCoder and StarCoder2: FIM and repository tokens, and the metadata tokens of their training data. */
  starcoder2: [
    "<|endoftext|>",
    "<fim_prefix>",
    "<fim_middle>",
    "<fim_suffix>",
    "<fim_pad>",
    "<repo_name>",
    "<reponame>",
    "<file_sep>",
    "<filename>",
    "<gh_stars>",
    "<issue_start>",
    "<issue_comment>",
    "<issue_closed>",
    "<jupyter_start>",
    "<jupyter_text>",
    "<jupyter_code>",
    "<jupyter_output>",
    "<empty_output>",
    "<commit_before>",
    "<commit_msg>",
    "<commit_after>",
  ],
  /** DeepSeek-Coder: FIM and sentence tokens with U+FF5C bars and U+2581, and the instruct models' EOS. */
  "deepseek-coder": [
    "<｜fim▁begin｜>",
    "<｜fim▁hole｜>",
    "<｜fim▁end｜>",
    "<｜begin▁of▁sentence｜>",
    "<｜end▁of▁sentence｜>",
    "<|EOT|>",
  ],
  /** Code Llama: FIM tokens, sentence tokens and the Llama 2 chat markers. */
  codellama: ["<PRE>", "<SUF>", "<MID>", "<EOT>", "<s>", "</s>", "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>"],
  /** Codestral and Mistral's instruct models: FIM and instruction control tokens. */
  codestral: [
    "[PREFIX]",
    "[SUFFIX]",
    "[MIDDLE]",
    "[INST]",
    "[/INST]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_CALLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "<s>",
    "</s>",
  ],
  /** CodeGemma: FIM and file tokens, and Gemma's turn and sequence tokens. */
  codegemma: [
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|file_separator|>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<bos>",
    "<eos>",
    "<pad>",
  ],
  /** Chat templates: ChatML (Qwen, many fine-tunes), Llama 3, and the GPT tokenizers' own specials. */
  chat: [
    "<|im_start|>",
    "<|im_end|>",
    "<|im_sep|>",
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|python_tag|>",
    "<|endoftext|>",
    "<|endofprompt|>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|end|>",
  ],
} as const satisfies Record<string, readonly string[]>;

export type ControlTokenFamily = keyof typeof CONTROL_TOKENS;

/**
 * What a control token becomes: a ZERO WIDTH SPACE (U+200B) after its first character. A tokenizer matches a special
 * token only as its exact string, so `<\u200B|im_start|>` is ordinary text to every one of them, while a reader (and
 * the model, which sees the same characters around it) reads the code as it was. Nothing is removed, so no two
 * tokens can be joined into a new one.
 */
export const NEUTRALISER = "\u200B";

/**
 * The tokens listed above, and the shapes whole families of them share, so a token a list misses is still caught:
 * `<|…|>` (OpenAI, Qwen, Llama 3, Phi, CodeGemma) and `<｜…｜>` (DeepSeek), each without spaces and short.
 */
const PATTERN = new RegExp(
  [
    String.raw`<\|[^\s|<>]{1,48}\|>`,
    // U+FF5C, the fullwidth bar, written as an escape here and below: one character above U+00FF in the bundle makes
    // V8 hold all of dist/cli.js's source as two bytes per character, 0.6 MB more of an idle relay's heap (issue 23).
    String.raw`<\uFF5C[^\s\uFF5C<>]{1,48}\uFF5C>`,
    ...[...new Set(Object.values(CONTROL_TOKENS).flat())]
      .filter((token) => !/^<\|.*\|>$/.test(token) && !/^<\uFF5C.*\uFF5C>$/.test(token))
      .sort((a, b) => b.length - a.length)
      .map((token) => token.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")),
  ].join("|"),
  "g",
);

/** PATTERN without the global flag, so a test keeps no `lastIndex` between calls. */
const ANY_TOKEN = new RegExp(PATTERN.source);

/**
 * Neutralises every control token in a client's text (code, snippets, paths, chat content) before it is templated,
 * by inserting NEUTRALISER after each one's first character. `changed` says whether there was any.
 */
export function neutraliseControlTokens(text: string): { text: string; changed: boolean } {
  let changed = false;
  const out = text.replace(PATTERN, (token) => {
    changed = true;
    return `${token.slice(0, 1)}${NEUTRALISER}${token.slice(1)}`;
  });
  return { text: out, changed };
}

/**
 * The editor context with every text field neutralised: the code on both sides of the cursor, the snippets (their
 * paths and text are in surrounding_context), the file's path and names. `changed` says whether any field held a
 * control token.
 */
export function neutraliseContext(context: TabContext): { context: TabContext; changed: boolean } {
  // Nearly every context holds no control token: a test per field finds that without building a copy of it.
  let any = false;
  for (const key in context) {
    const value = context[key as keyof TabContext];
    if (typeof value === "string" && ANY_TOKEN.test(value)) {
      any = true;
      break;
    }
  }
  if (!any) return { context, changed: false };
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(context)) {
    if (typeof value !== "string") {
      out[key] = value;
      continue;
    }
    const result = neutraliseControlTokens(value);
    if (result.changed) changed = true;
    out[key] = result.text;
  }
  return { context: changed ? (out as TabContext) : context, changed };
}
