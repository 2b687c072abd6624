import { countTokens as countGptTokens } from "gpt-tokenizer";
import type { TabContext } from "@tab-relay/shared";

/** Token counts use the o200k BPE (the GPT-4o family's tokenizer), a fair measure for any modern model. */
export function countTokens(text: string): number {
  return text === "" ? 0 : countGptTokens(text);
}

/** The prompt a provider sees is built from these fields; usage reports their token count. */
export function countPromptTokens(context: TabContext): number {
  return (
    countTokens(context.active_text_before_cursor) +
    countTokens(context.active_text_after_cursor ?? "") +
    countTokens(context.surrounding_context ?? "")
  );
}
