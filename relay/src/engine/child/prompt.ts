import type { PromptInput } from "../protocol";

/**
 * The infill prompt as tokens, in the model's own FIM tokens.
 *
 * With no other files it is exactly what node-llama-cpp's `generateInfillCompletion` builds
 * (`<|fim_prefix|>` prefix `<|fim_suffix|>` suffix `<|fim_middle|>`, LlamaCompletion.js in 3.21.1). With other
 * files and a model that has a file separator, it is Qwen2.5-Coder's repository-level format (its README,
 * "repository level code completion"): `<|repo_name|>name`, then `<|file_sep|>path\ntext` per file, then the current
 * file's `<|file_sep|>path` and the FIM part. node-llama-cpp's infill puts nothing before `<|fim_prefix|>`, so this
 * builds the tokens itself and hands them to `generateCompletion`.
 *
 * The user's text is tokenised with special-token parsing off (`tokenize(text, false)`, as node-llama-cpp's infill
 * does), so `<|fim_prefix|>` typed in code stays text and cannot steer the model.
 */
export interface PromptTokens {
  prefix: number;
  suffix: number;
  middle: number;
  fileSeparator: number | undefined;
  repoName: number | undefined;
}

/** Text to tokens with special-token parsing off. */
export type Tokenize = (text: string) => number[];

export interface PromptBudget {
  /** Tokens the prompt may take in all. */
  maxTokens: number;
}

/** Share of the budget the suffix may take; the rest goes to the prefix first, then to other files. */
const SUFFIX_SHARE = 0.25;

/** A prefix too long for its room loses its start in steps of this share of the room (see cutFromStart). */
const CUT_STEP_SHARE = 0.25;

/**
 * How many tokens to drop from the start of a prefix of `length` tokens so that it fits in `room`. The cut moves in
 * steps of a quarter of the room rather than token by token: the next keystroke adds a token or two at the end, and
 * a cut that followed it would shift the whole prompt, so the sequence holding the last one could reuse nothing
 * (llama.cpp's server likewise drops a block, `n_discard = n_left / 2` by default, when a slot's context is full;
 * tools/server/server.cpp). With steps, keystrokes on a long prefix keep the same start until the prefix has grown
 * by a step.
 */
export function cutFromStart(length: number, room: number): number {
  if (length <= room) return 0;
  const step = Math.max(1, Math.floor(room * CUT_STEP_SHARE));
  return Math.min(length, Math.ceil((length - room) / step) * step);
}

export function buildInfillTokens(
  input: PromptInput,
  tokens: PromptTokens,
  tokenize: Tokenize,
  budget: PromptBudget,
): number[] {
  const specials = 3;
  let left = Math.max(0, budget.maxTokens - specials);
  const suffixAll = tokenize(input.suffix);
  const suffix = suffixAll.slice(0, Math.min(suffixAll.length, Math.floor(left * SUFFIX_SHARE)));
  left -= suffix.length;
  const prefixAll = tokenize(input.prefix);
  const prefix = prefixAll.slice(cutFromStart(prefixAll.length, left));
  left -= prefix.length;
  const fim = [tokens.prefix, ...prefix, tokens.suffix, ...suffix, tokens.middle];
  if (tokens.fileSeparator === undefined || input.files.length === 0) return fim;

  const head: number[] = [];
  if (tokens.repoName !== undefined) head.push(tokens.repoName, ...tokenize(`${input.repoName}\n`));
  const current = [tokens.fileSeparator, ...tokenize(`${input.path ?? "untitled"}\n`)];
  left -= head.length + current.length;
  if (left <= 0) return fim;
  const files: number[] = [];
  for (const file of input.files) {
    const part = [tokens.fileSeparator, ...tokenize(`${file.path}\n${file.text}\n`)];
    if (part.length > left) break;
    files.push(...part);
    left -= part.length;
  }
  if (files.length === 0) return fim;
  return [...head, ...files, ...current, ...fim];
}

/** A configured FIM template, parsed: its own markers as tokens, and where the user's text goes. */
export type TemplatePart = { tokens: number[] } | { slot: "prefix" | "suffix" | "context" };

const SLOT = /\{(prefix|suffix|context)\}/;

/** Splits a template (`<PRE> {context}{prefix} <SUF>{suffix} <MID>`) into its literal text and its slots. */
export function templatePieces(template: string): ({ text: string } | { slot: "prefix" | "suffix" | "context" })[] {
  return template
    .split(SLOT)
    .map((piece, index) => (index % 2 === 1 ? { slot: piece as "prefix" | "suffix" | "context" } : { text: piece }))
    .filter((piece) => !("text" in piece) || piece.text !== "");
}

/** The markers in a template's literal text that must each be one token of the model: `<…>` and `[…]`. */
export function templateMarkers(text: string): string[] {
  return text.match(/<[^\s<>]+>|\[[^\s[\]]+\]/g) ?? [];
}

/**
 * The prompt in a configured template's layout: its markers as the model's tokens, the user's text tokenised with
 * special-token parsing off, fitted to the budget as buildInfillTokens does (the suffix a quarter at most, the
 * prefix cut at its start in steps, other files' context in what is left, cut at its start).
 */
export function buildTemplateTokens(
  input: PromptInput,
  parts: readonly TemplatePart[],
  tokenize: Tokenize,
  budget: PromptBudget,
): number[] {
  let left = budget.maxTokens;
  for (const part of parts) if ("tokens" in part) left -= part.tokens.length;
  left = Math.max(0, left);
  const uses = (slot: string) => parts.some((part) => "slot" in part && part.slot === slot);
  const suffixAll = uses("suffix") ? tokenize(input.suffix) : [];
  const suffix = suffixAll.slice(0, Math.min(suffixAll.length, Math.floor(left * SUFFIX_SHARE)));
  left -= suffix.length;
  const prefixAll = tokenize(input.prefix);
  const prefix = prefixAll.slice(cutFromStart(prefixAll.length, left));
  left -= prefix.length;
  const contextAll = uses("context") && input.contextText !== "" ? tokenize(input.contextText) : [];
  const context = contextAll.length <= left ? contextAll : [];
  const out: number[] = [];
  for (const part of parts) {
    if ("tokens" in part) out.push(...part.tokens);
    else out.push(...(part.slot === "prefix" ? prefix : part.slot === "suffix" ? suffix : context));
  }
  return out;
}
