/**
 * Why a configuration of the repository replay accepts what it accepts: for each request, whether the line being
 * written was in what the request carried at all (the local engine can only repeat text it was sent), and where
 * the engine's suggestion came from. Run in the bench on the request bodies the relay received, with the relay's
 * own engine (predictContinuation), so it explains the same suggestions (before the relay's postprocessor, which
 * only shortens them).
 */
import type { TabContext } from "@tab-relay/shared";
import { predictContinuation } from "../../relay/src/providers/local/localProvider";

/** Where the line being written appears verbatim in the request: in the code before the cursor, only in the rest of what was sent, or nowhere. */
export type LineFound = "before the cursor" | "only in surrounding_context" | "nowhere sent" | "too short";
/** Whether the engine suggested anything, and whether surrounding_context made the suggestion what it is. */
export type SuggestionSource = "none" | "from the document around the cursor" | "from surrounding_context";

export interface RequestExplanation {
  readonly line: LineFound;
  readonly source: SuggestionSource;
  /** The suggestion up to its first line break is exactly the rest of the line being written. */
  readonly rightLine: boolean;
}

/** Lines with fewer visible characters than this (`});`, `}`) say nothing about whether code was carried. */
export const MIN_LINE_CHARS = 4;

/** As the relay asks the engine (the documented maximum, docs/api.md#completions, when the request sets none). */
const MAX_TOKENS = 500;

/**
 * `line` is the whole line the cursor is on, as the file has it; `rest` is what is still to be written of it.
 */
export function explainRequest(context: TabContext, line: string, rest: string): RequestExplanation {
  const before = context.active_text_before_cursor;
  const surrounding = context.surrounding_context ?? "";
  const wanted = line.trim();
  const found: LineFound =
    wanted.replace(/\s/g, "").length < MIN_LINE_CHARS
      ? "too short"
      : before.includes(wanted)
        ? "before the cursor"
        : surrounding.includes(wanted)
          ? "only in surrounding_context"
          : "nowhere sent";
  const suggestion = predictContinuation(context, MAX_TOKENS);
  // Asked again without surrounding_context: a different answer means that context decided this one.
  const { surrounding_context: _, ...withoutSurrounding } = context;
  const source: SuggestionSource =
    suggestion === ""
      ? "none"
      : predictContinuation(withoutSurrounding, MAX_TOKENS) === suggestion
        ? "from the document around the cursor"
        : "from surrounding_context";
  const firstLine = suggestion.split("\n")[0] ?? "";
  return {
    line: found,
    source,
    rightLine: suggestion !== "" && firstLine.trimEnd() === rest.trimEnd() && rest.trim() !== "",
  };
}

/** The cursor's whole line in `target` and what is still to be written of it, for a cursor at `offset`. */
export function lineAt(target: string, offset: number): { line: string; rest: string } {
  const start = target.lastIndexOf("\n", offset - 1) + 1;
  const newline = target.indexOf("\n", offset);
  const end = newline === -1 ? target.length : newline;
  return { line: target.slice(start, end), rest: target.slice(offset, end) };
}
