import { isLanguageEnabled, type Settings } from "./settings";
import type { CompletionInput } from "./types";

export type SkipReason = "disabled" | "snoozed" | "language disabled" | "inside a word" | "empty document";

/** Letters, digits and `_`: characters that continue a word. */
export const WORD_CHAR = /[\p{L}\p{N}_]/u;

/**
 * Decides, before any waiting or network, whether this cursor position should get a suggestion at all.
 * `pause` is the user's own switch (disabled or snoozed), which also silences cached suggestions.
 */
export function prefilter(input: CompletionInput, settings: Settings, pause: "disabled" | "snoozed" | undefined): SkipReason | undefined {
  if (!settings.enabled || pause === "disabled") return "disabled";
  if (pause === "snoozed") return "snoozed";
  if (!isLanguageEnabled(settings, input.languageId)) return "language disabled";
  if (!/\S/.test(input.text) && input.selected === undefined) return "empty document";
  // Completing in the middle of a word would have to rewrite the word's tail, which ghost text cannot show.
  const next = input.text.charAt(input.offset);
  if (next !== "" && WORD_CHAR.test(next) && input.selected === undefined) return "inside a word";
  return undefined;
}
