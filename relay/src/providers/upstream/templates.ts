import type { ContextSnippet, TabContext } from "@tab-relay/shared";
import { UNNAMED_FILE, UNNAMED_SNIPPET, pathCommentContext } from "./context";

/**
 * Fill-in-the-middle prompt templates for `TAB_RELAY_UPSTREAM_API=fim`: the relay writes the model's own FIM
 * tokens into a plain `prompt`, for servers that take no `suffix` (vLLM, SGLang, TGI, llama.cpp's
 * /v1/completions). Each family cites where its template comes from; "UNVERIFIED" marks what no first-party
 * source confirms, and there the choice is the conservative one.
 */

export const FIM_FAMILIES = [
  "qwen-coder",
  "starcoder2",
  "codellama",
  "deepseek-coder",
  "codestral",
  "codegemma",
] as const;
export type FimFamily = (typeof FIM_FAMILIES)[number];

export interface FimInput {
  /** The text before the cursor. */
  prefix: string;
  /** The text after the cursor. */
  suffix: string;
  /** Context from other files, already bounded. */
  snippets: readonly ContextSnippet[];
  context: TabContext;
}

export interface FimTemplate {
  /** The family, or `custom`. */
  readonly name: FimFamily | "custom";
  render(input: FimInput): string;
  /**
   * Text that ends a completion: the family's end-of-text, file separator and FIM tokens, most important first.
   * The first few go upstream as `stop`; the postprocessor cuts the output at any of them.
   */
  readonly stops: readonly string[];
}

/**
 * Qwen2.5-Coder. File-level FIM `<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>` and the
 * repository-level layout `<|repo_name|>{repo}⏎<|file_sep|>{path}⏎{content}⏎…<|file_sep|>{current path}⏎`
 * followed by the FIM part: QwenLM/Qwen2.5-Coder README.md and examples/Qwen2.5-Coder-repolevel-fim.py @
 * d5ead97fea36bca3744e1a4c49e882f6fa2f406a. Stops: the token ids in Qwen's own examples (<|file_sep|>,
 * <|fim_pad|>, the FIM tokens, <|repo_name|>, <|im_end|>, 151643) as text; the name <|endoftext|> for 151643
 * comes from Qwen's tokenizers, not that repository (UNVERIFIED there), and the list equals Continue's
 * (continuedev/continue core/autocomplete/templating/AutocompleteTemplate.ts @ d0a3c0b6, qwenMultifileFimTemplate).
 */
const qwenCoder: FimTemplate = {
  name: "qwen-coder",
  render({ prefix, suffix, snippets, context }) {
    const fim = `<|fim_prefix|>${prefix}<|fim_suffix|>${suffix}<|fim_middle|>`;
    if (snippets.length === 0) return fim;
    let out = `<|repo_name|>${repoName(context)}\n`;
    for (const snippet of snippets) out += `<|file_sep|>${snippet.path ?? UNNAMED_SNIPPET}\n${snippet.text}\n`;
    return `${out}<|file_sep|>${context.file_path ?? UNNAMED_FILE}\n${fim}`;
  },
  stops: [
    "<|endoftext|>",
    "<|file_sep|>",
    "<|fim_prefix|>",
    "<|fim_pad|>",
    "<|fim_suffix|>",
    "<|fim_middle|>",
    "<|repo_name|>",
    "<|im_start|>",
    "<|im_end|>",
  ],
};

/**
 * StarCoder2. File-level FIM `<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>`: TabbyML/registry-tabby
 * models.json @ 7a9d54eb (StarCoder2-3B/7B) and Continue's stableCodeFimTemplate. The repository layout
 * `<repo_name>{repo}<file_sep>{path}⏎{code}…<file_sep><fim_prefix>{path}⏎{prefix}<fim_suffix>{suffix}<fim_middle>`
 * is the training format of the StarCoder2 paper (arXiv 2402.19173 §5.1) as a third-party summary quotes it:
 * UNVERIFIED against the paper, and used only when there is context from other files. Stops: Continue's
 * (AutocompleteTemplate.ts line 315 and getStopTokens.ts).
 */
const starcoder2: FimTemplate = {
  name: "starcoder2",
  render({ prefix, suffix, snippets, context }) {
    if (snippets.length === 0) return `<fim_prefix>${prefix}<fim_suffix>${suffix}<fim_middle>`;
    let out = `<repo_name>${repoName(context)}`;
    for (const snippet of snippets) out += `<file_sep>${snippet.path ?? UNNAMED_SNIPPET}\n${snippet.text}`;
    return `${out}<file_sep><fim_prefix>${context.file_path ?? UNNAMED_FILE}\n${prefix}<fim_suffix>${suffix}<fim_middle>`;
  },
  stops: ["<|endoftext|>", "<file_sep>", "<fim_prefix>", "<fim_suffix>", "<fim_middle>"],
};

/**
 * Code Llama (7B and 13B, base and Instruct, are the infilling models). `<PRE> {prefix} <SUF>{suffix} <MID>`,
 * exactly: the spaces stand for the SentencePiece "▁" of each control piece and the leading space the tokenizer
 * gives the prefix but not the suffix (meta-llama/codellama llama/generation.py infilling_prompt_tokens and
 * llama/tokenizer.py @ e81b597e44dbecc2a0dedb9949fdf84adfc22395; the same string in Ollama's docs/template.mdx).
 * Meta documents no repository-level format, so context goes in as path comments at the start of the prefix.
 * Stops: <EOT> (the generation's stop token) and the FIM tokens; </s> is left to the server (end of sequence),
 * since as text it is also HTML.
 */
const codellama: FimTemplate = {
  name: "codellama",
  render: ({ prefix, suffix, snippets, context }) =>
    `<PRE> ${pathCommentContext(snippets, context)}${prefix} <SUF>${suffix} <MID>`,
  stops: ["<EOT>", "<PRE>", "<SUF>", "<MID>"],
};

/**
 * DeepSeek-Coder. `<｜fim▁begin｜>{prefix}<｜fim▁hole｜>{suffix}<｜fim▁end｜>`, where the bars are U+FF5C and
 * "▁" is U+2581; repository-level context is plain code under path comments ("# utils.py"), with the current
 * file's path last: deepseek-ai/DeepSeek-Coder README.md @ 2f9fd85927c669dae3c0fbb2d607274023af243e. Stops:
 * <｜end▁of▁sentence｜> (id 32014, which the README says to use as EOS for completion; its name is UNVERIFIED
 * there), <|EOT|> (the instruct models' EOS) and the FIM tokens.
 */
const deepseekCoder: FimTemplate = {
  name: "deepseek-coder",
  render: ({ prefix, suffix, snippets, context }) =>
    `<｜fim▁begin｜>${pathCommentContext(snippets, context)}${prefix}<｜fim▁hole｜>${suffix}<｜fim▁end｜>`,
  stops: ["<｜end▁of▁sentence｜>", "<|EOT|>", "<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"],
};

/**
 * Codestral. Suffix first and no middle token: mistral-common's encode_fim builds
 * `[BOS, SUFFIX, *suffix, PREFIX, *prefix]`, the prefix with SentencePiece's leading "▁" and the suffix without
 * (mistralai/mistral-common src/mistral_common/tokens/tokenizers/instruct.py and tests/test_fim_tokenizer.py @
 * bc022b91aa1c3b1fb771ac70931ae0009dbf9bad); as text `[SUFFIX]{suffix}[PREFIX] {prefix}`, as Ollama's
 * docs/template.mdx writes it. The server adds BOS. Versions on the Tekken tokenizer (no "▁") are UNVERIFIED.
 * Mistral documents no repository-level format, so context goes in as path comments at the start of the prefix.
 * Stops: the control tokens ([MIDDLE] included); </s> is left to the server, since as text it is also HTML.
 */
const codestral: FimTemplate = {
  name: "codestral",
  render: ({ prefix, suffix, snippets, context }) =>
    `[SUFFIX]${suffix}[PREFIX] ${pathCommentContext(snippets, context)}${prefix}`,
  stops: ["[PREFIX]", "[SUFFIX]", "[MIDDLE]"],
};

/**
 * CodeGemma (2B and 7B). `<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>` and the file separator
 * <|file_separator|> "for multi-file contexts": https://ai.google.dev/gemma/docs/codegemma/prompt-structure.
 * The exact multi-file layout is UNVERIFIED, so context goes in as path comments at the start of the prefix and
 * <|file_separator|> only ends a completion. Stops: Continue's codegemmaFimTemplate.
 */
const codegemma: FimTemplate = {
  name: "codegemma",
  render: ({ prefix, suffix, snippets, context }) =>
    `<|fim_prefix|>${pathCommentContext(snippets, context)}${prefix}<|fim_suffix|>${suffix}<|fim_middle|>`,
  stops: ["<|file_separator|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<end_of_turn>", "<eos>"],
};

const TEMPLATES: Record<FimFamily, FimTemplate> = {
  "qwen-coder": qwenCoder,
  starcoder2,
  codellama,
  "deepseek-coder": deepseekCoder,
  codestral,
  codegemma,
};

export function fimTemplate(family: FimFamily): FimTemplate {
  return TEMPLATES[family];
}

/**
 * A family's template as a custom template string (`<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>`),
 * for the embedded engine, which tokenises the template's own markers itself. Other files' context is left out:
 * with no snippets, every family renders none.
 */
export function templateText(family: FimFamily): string {
  return TEMPLATES[family].render({
    prefix: "{prefix}",
    suffix: "{suffix}",
    snippets: [],
    context: { workspace_slug: "" } as TabContext,
  });
}

/**
 * How a model name picks its family, on the lower-cased name, first match wins. Only names a first-party source
 * ties to the template: a name that matches nothing needs TAB_RELAY_FIM_TEMPLATE rather than a guess (a wrong
 * template makes a model write nonsense, not fail). Not matched on purpose: `codeqwen` (CodeQwen1.5 uses
 * StarCoder's tokens), plain `starcoder` (v1 has no <file_sep>), `deepseek` models that are not coders.
 */
export const FAMILY_RULES: readonly { family: FimFamily; all: readonly string[]; none?: readonly string[] }[] = [
  { family: "codestral", all: ["codestral"] },
  { family: "codegemma", all: ["codegemma"] },
  { family: "codellama", all: ["codellama"] },
  { family: "codellama", all: ["code-llama"] },
  { family: "starcoder2", all: ["starcoder2"] },
  { family: "deepseek-coder", all: ["deepseek", "coder"] },
  { family: "qwen-coder", all: ["qwen", "coder"], none: ["codeqwen"] },
];

export function familyForModel(model: string): FimFamily | undefined {
  const name = model.toLowerCase();
  for (const rule of FAMILY_RULES) {
    if (rule.all.every((part) => name.includes(part)) && !(rule.none ?? []).some((part) => name.includes(part)))
      return rule.family;
  }
  return undefined;
}

export function isFimFamily(name: string): name is FimFamily {
  return (FIM_FAMILIES as readonly string[]).includes(name);
}

export const TEMPLATE_PLACEHOLDERS = ["prefix", "suffix", "context"] as const;
const PLACEHOLDER = /\{([^{}\s]*)\}/g;

/** What is wrong with a custom template string: it must hold {prefix}, and no placeholder but the three. */
export function customTemplateProblems(template: string): string[] {
  const problems: string[] = [];
  const unknown = new Set<string>();
  for (const [, name = ""] of template.matchAll(PLACEHOLDER)) {
    if (!(TEMPLATE_PLACEHOLDERS as readonly string[]).includes(name)) unknown.add(`{${name}}`);
  }
  if (!template.includes("{prefix}")) problems.push("a custom template must contain {prefix}");
  if (unknown.size > 0)
    problems.push(
      `unknown placeholder${unknown.size > 1 ? "s" : ""} ${[...unknown].join(", ")} (known: {prefix}, {suffix}, {context})`,
    );
  return problems;
}

/**
 * A template string such as `<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>`. {context} becomes the
 * context from other files as path comments (empty without any). Its stops are the template's own control
 * tokens: literal pieces between placeholders that read `<…>` or `[…]` with no whitespace (`<fim_prefix>`,
 * `[SUFFIX]`), which a model writes only when it has finished; other literals (`# `, `//`) are ordinary code.
 */
export function customTemplate(template: string): FimTemplate {
  const stops = new Set<string>();
  for (const piece of template.split(PLACEHOLDER).filter((_, index) => index % 2 === 0)) {
    const literal = piece.trim();
    if (/^(?:<[^\s<>]+>|\[[^\s[\]]+\])$/.test(literal)) stops.add(literal);
  }
  return {
    name: "custom",
    render({ prefix, suffix, snippets, context }) {
      const values: Record<string, string> = { prefix, suffix, context: pathCommentContext(snippets, context) };
      // One pass, so text inside the prefix that reads like a placeholder is left alone.
      return template.replace(PLACEHOLDER, (whole, name: string) => values[name] ?? whole);
    },
    stops: [...stops],
  };
}

/** The workspace stands for the repository in the repository-level formats that name one. */
function repoName(context: TabContext): string {
  return context.workspace_slug;
}
