import { isWordChar } from "@tab-relay/shared";
import { PathMatcher } from "./globs";
import { isLanguageEnabled, type Settings } from "./settings";
import type { ActiveEditorInfo } from "./statusView";
import type { CompletionInput } from "./types";

export type SkipReason =
  "disabled" | "snoozed" | "language disabled" | "excluded file" | "inside a word" | "empty document";

/**
 * Decides, before any waiting or network, whether this cursor position should get a suggestion at all.
 * `pause` is the user's own switch (disabled or snoozed), which also silences cached suggestions.
 */
export function prefilter(
  input: CompletionInput,
  settings: Settings,
  pause: "disabled" | "snoozed" | undefined,
): SkipReason | undefined {
  if (!settings.enabled || pause === "disabled") return "disabled";
  if (pause === "snoozed") return "snoozed";
  if (!isLanguageEnabled(settings, input.languageId)) return "language disabled";
  // Completing in a file means sending its text; a file that must never be sent gets no completions.
  if (isExcludedDocument(input, settings)) return "excluded file";
  if (!/\S/.test(input.text) && input.selected === undefined) return "empty document";
  // Completing in the middle of a word would have to rewrite the word's tail, which ghost text cannot show.
  const next = input.text.charAt(input.offset);
  if (isWordChar(next) && input.selected === undefined) return "inside a word";
  return undefined;
}

const matchers = new WeakMap<readonly string[], PathMatcher>();

/** Whether `tabRelay.excludeGlobs` covers the document: its workspace path, or its name when it has none. */
export function isExcludedDocument(
  input: Pick<CompletionInput, "relativePath" | "title">,
  settings: Settings,
): boolean {
  let matcher = matchers.get(settings.excludeGlobs);
  if (matcher === undefined) {
    matcher = new PathMatcher(settings.excludeGlobs, { matchNames: true });
    matchers.set(settings.excludeGlobs, matcher);
  }
  return matcher.match(input.relativePath ?? input.title) !== undefined;
}

/** Names people use for the common language ids; any other id is shown as VS Code reports it. */
const LANGUAGE_NAMES: Readonly<Record<string, string>> = {
  typescript: "TypeScript",
  typescriptreact: "TypeScript JSX",
  javascript: "JavaScript",
  javascriptreact: "JavaScript JSX",
  python: "Python",
  markdown: "Markdown",
  plaintext: "Plain Text",
  json: "JSON",
  jsonc: "JSON with Comments",
  html: "HTML",
  css: "CSS",
  go: "Go",
  rust: "Rust",
  java: "Java",
  csharp: "C#",
  cpp: "C++",
  c: "C",
  ruby: "Ruby",
  php: "PHP",
  shellscript: "Shell Script",
  yaml: "YAML",
  dotenv: "Dotenv",
  properties: "Properties",
};

export function languageName(languageId: string): string {
  return LANGUAGE_NAMES[languageId] ?? languageId;
}

/**
 * What the status says about the file in the active editor: why it gets no suggestions although completions are on
 * (`tabRelay.excludeGlobs` covers it, or its language is switched off), or nothing.
 */
export function activeEditorInfo(
  file: Pick<CompletionInput, "relativePath" | "title" | "languageId">,
  settings: Settings,
): ActiveEditorInfo {
  const off = isExcludedDocument(file, settings)
    ? "excluded"
    : !isLanguageEnabled(settings, file.languageId)
      ? "language"
      : undefined;
  return { languageName: languageName(file.languageId), off, fileName: file.title };
}

/** A language as extensions contribute it: the file name endings and exact names that select it. */
export interface LanguageContribution {
  readonly id: string;
  readonly extensions?: readonly string[];
  readonly filenames?: readonly string[];
}

/**
 * Whether a file's text may go out as context for another file: never when `tabRelay.excludeGlobs` covers it (the
 * RecentFiles rules), nor when its language is switched off. `languageId` is VS Code's for a loaded document; for a
 * tab read from disk it is unknown, and then every language the extensions associate with its name counts, so a
 * `.md` file is held back while Markdown is off even before VS Code has opened it.
 */
export function contextLanguageAllowed(
  path: string,
  languageId: string | undefined,
  settings: Settings,
  languages: readonly LanguageContribution[],
): boolean {
  if (languageId !== undefined) return isLanguageEnabled(settings, languageId);
  const name = path.slice(path.lastIndexOf("/") + 1).toLowerCase();
  const candidates = languages.filter(
    (language) =>
      language.filenames?.some((filename) => filename.toLowerCase() === name) === true ||
      language.extensions?.some((extension) => name.endsWith(extension.toLowerCase())) === true,
  );
  return candidates.every((language) => isLanguageEnabled(settings, language.id));
}
