import { countTokens as countGptTokens } from "gpt-tokenizer";

/** Token counts use the o200k BPE (the GPT-4o family's tokenizer), a fair measure for any modern model. */
export function countTokens(text: string): number {
  return text === "" ? 0 : countGptTokens(text);
}
