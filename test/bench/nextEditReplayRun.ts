import { NEXT_EDIT_LIMITS, type NextEdit, type NextEditRequest, type RecentEdit } from "@tab-relay/shared";
import { applyEdits } from "../../relay/src/nextEdits/diff";
import { documentOf } from "../../relay/src/nextEdits/document";
import { type PropagationKind, changeSignature, proposeLocalNextEdit } from "../../relay/src/nextEdits/localEngine";

/**
 * The next-edit replay over one file of one commit: the commit's changes (git diff -U0 hunks, a hunk that changes
 * as many lines as it had split into one edit per line) are made one after another, top to bottom; after each, the
 * local engine is asked for a next edit, and what it proposes is compared with what the commit really did to those
 * lines. A proposal is right when every line it edits ends up exactly as the commit left it; it is "next" when its
 * first edit falls in the change that came right after.
 */

/** One change of a commit: `oldLines` at 0-based `oldStart` of the old file became `newLines` at `newStart` of the new. */
export interface Change {
  oldStart: number;
  oldLines: string[];
  newStart: number;
  newLines: string[];
}

export interface ReplayEvent {
  proposed: boolean;
  right: boolean;
  next: boolean;
  kind: PropagationKind | undefined;
  /** The kind of the opportunity: the change that came next repeats this one's pattern. */
  opportunity: PropagationKind | undefined;
  engineMs: number;
  parseMs: number;
  /** For a proposal: the change just made and the lines proposed, for reading what the engine did. */
  detail?: string;
}

/** The hunks of `git diff -U0` output for one file, as changes with 0-based starts. */
export function parseHunks(diff: string): Change[] {
  const changes: Change[] = [];
  let current: Change | undefined;
  for (const line of diff.split("\n")) {
    const header = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (header) {
      const oldCount = header[2] === undefined ? 1 : Number(header[2]);
      const newCount = header[4] === undefined ? 1 : Number(header[4]);
      // With no lines on a side, git names the line before the change; otherwise its first line (1-based).
      const oldStart = oldCount === 0 ? Number(header[1]) : Number(header[1]) - 1;
      const newStart = newCount === 0 ? Number(header[3]) : Number(header[3]) - 1;
      current = { oldStart, oldLines: [], newStart, newLines: [] };
      changes.push(current);
      continue;
    }
    if (!current || line.startsWith("\\")) continue;
    if (line.startsWith("-") && !line.startsWith("---")) current.oldLines.push(line.slice(1));
    else if (line.startsWith("+") && !line.startsWith("+++")) current.newLines.push(line.slice(1));
  }
  return changes.flatMap((change) =>
    change.oldLines.length === change.newLines.length && change.oldLines.length > 1
      ? change.oldLines.map((old, i) => ({
          oldStart: change.oldStart + i,
          oldLines: [old],
          newStart: change.newStart + i,
          newLines: [change.newLines[i] as string],
        }))
      : [change],
  );
}

export function replayFile(
  filePath: string,
  oldFile: readonly string[],
  newFile: readonly string[],
  changes: readonly Change[],
  now: () => number = () => performance.now(),
): ReplayEvent[] {
  const events: ReplayEvent[] = [];
  const recent: RecentEdit[] = [];
  for (let k = 0; k < changes.length; k++) {
    const change = changes[k] as Change;
    if (change.oldLines.length > NEXT_EDIT_LIMITS.editLines || change.newLines.length > NEXT_EDIT_LIMITS.editLines)
      continue;
    const oldEnd = change.oldStart + change.oldLines.length;
    const newEnd = change.newStart + change.newLines.length;
    // The file with this change and those above it made: the new file down to here, the old one after.
    const state = [...newFile.slice(0, newEnd), ...oldFile.slice(oldEnd)];
    recent.push({
      file_path: filePath,
      start_line: change.newStart,
      old_lines: change.oldLines,
      new_lines: change.newLines,
    });
    if (recent.length > NEXT_EDIT_LIMITS.recentEdits) recent.shift();
    const request = requestAt(filePath, state, change, recent);
    if (!request) continue;
    const parseStarted = now();
    documentOf(request);
    const parseMs = now() - parseStarted;
    const started = now();
    const proposal = proposeLocalNextEdit(documentOf(request), request.recent_edits);
    const engineMs = now() - started;
    const following = changes[k + 1];
    const opportunity = opportunityOf(change, following);
    const edits = "edits" in proposal.judgement ? proposal.judgement.edits : [];
    const verdict = edits.length > 0 ? judge(edits, state, oldFile, newFile, change, changes.slice(k + 1)) : undefined;
    events.push({
      proposed: edits.length > 0,
      right: verdict?.right ?? false,
      next: verdict?.next ?? false,
      kind: edits.length > 0 ? proposal.kind : undefined,
      opportunity,
      engineMs,
      parseMs,
      ...(edits.length > 0
        ? {
            detail: `${filePath}:${change.newStart + 1} ${JSON.stringify(change.oldLines)} -> ${JSON.stringify(change.newLines)}\n  proposed ${edits
              .map((e) => `${e.range.start.line + 1}: ${JSON.stringify(applyEdits(state, 0, [e])[e.range.start.line])}`)
              .join("; ")}`,
          }
        : {}),
    });
  }
  return events;
}

/** What the editor would send after this change: an excerpt around the cursor, the region 2 lines above to 5 below. */
function requestAt(
  filePath: string,
  state: readonly string[],
  change: Change,
  recent: readonly RecentEdit[],
): NextEditRequest | undefined {
  const cursorLine = change.newLines.length > 0 ? change.newStart + change.newLines.length - 1 : change.newStart;
  if (cursorLine >= state.length) return undefined;
  let first = Math.max(0, cursorLine - 200);
  let end = Math.min(state.length, cursorLine + 200);
  const size = () => state.slice(first, end).join("\n").length;
  while (size() > NEXT_EDIT_LIMITS.excerptChars && end - first > 16) {
    first = Math.min(cursorLine - 2, first + 10);
    end = Math.max(cursorLine + 6, end - 10);
    first = Math.max(0, first);
    end = Math.min(state.length, end);
  }
  if (size() > NEXT_EDIT_LIMITS.excerptChars) return undefined;
  const regionStart = Math.max(first, cursorLine - 2);
  const regionEnd = Math.min(end, cursorLine + 6);
  const line = state[cursorLine] as string;
  if (line.length > NEXT_EDIT_LIMITS.lineChars) return undefined;
  return {
    workspace_slug: "replay",
    file_path: filePath,
    document_version: 1,
    excerpt: { start_line: first, text: state.slice(first, end).join("\n") },
    editable_region: { start_line: regionStart, end_line: regionEnd },
    cursor: { line: cursorLine, character: change.newLines.length > 0 ? line.length : 0 },
    recent_edits: [...recent],
  };
}

/** The change that came next repeats this one's pattern (same rename, same argument to the same callee, same values). */
function opportunityOf(change: Change, following: Change | undefined): PropagationKind | undefined {
  if (!following || change.oldLines.length !== 1 || change.newLines.length !== 1) return undefined;
  if (following.oldLines.length !== 1 || following.newLines.length !== 1) return undefined;
  const mine = changeSignature(change.oldLines[0] as string, change.newLines[0] as string);
  const theirs = changeSignature(following.oldLines[0] as string, following.newLines[0] as string);
  return mine && theirs && mine.signature === theirs.signature ? mine.kind : undefined;
}

/** Whether every line the proposal edits ends up as the commit left it, and whether it starts in the next change. */
function judge(
  edits: readonly NextEdit[],
  state: readonly string[],
  oldFile: readonly string[],
  newFile: readonly string[],
  change: Change,
  pending: readonly Change[],
): { right: boolean; next: boolean } {
  const after = applyEdits(state, 0, edits);
  if (after.length !== state.length) return { right: false, next: false };
  const newEnd = change.newStart + change.newLines.length;
  const oldEnd = change.oldStart + change.oldLines.length;
  const lines = new Set<number>();
  for (const edit of edits) for (let l = edit.range.start.line; l <= edit.range.end.line; l++) lines.add(l);
  let right = true;
  for (const line of lines) {
    // Lines above (and in) the change just made are already as the commit left them.
    if (line < newEnd) {
      right &&= onTheWay(state[line] as string, after[line] as string, newFile[line] as string);
      continue;
    }
    const old = line - newEnd + oldEnd;
    const hunk = pending.find((p) => old >= p.oldStart && old < p.oldStart + p.oldLines.length);
    const final = hunk ? hunk.newLines[old - hunk.oldStart] : oldFile[old];
    right &&= final !== undefined && onTheWay(state[line] as string, after[line] as string, final);
  }
  const firstLine = edits[0]?.range.start.line ?? -1;
  const nextHunk = pending[0];
  const nextOld = firstLine - newEnd + oldEnd;
  const next =
    right &&
    nextHunk !== undefined &&
    firstLine >= newEnd &&
    nextOld >= nextHunk.oldStart &&
    nextOld < nextHunk.oldStart + nextHunk.oldLines.length;
  return { right, next };
}

/**
 * The proposed line is on a shortest way from the line to what the commit made of it: the proposal is part of what
 * the person really typed there (all of it, or a piece of a larger change), and undoes none of it.
 */
export function onTheWay(before: string, proposed: string, final: string): boolean {
  if (before === final) return false;
  return distance(before, proposed) + distance(proposed, final) === distance(before, final);
}

/** Levenshtein distance, after the common start and end are set aside. */
function distance(a: string, b: string): number {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const x = a.slice(start, endA);
  const y = b.slice(start, endB);
  let row = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const next = [i];
    for (let j = 1; j <= y.length; j++)
      next[j] = Math.min(
        (row[j] as number) + 1,
        (next[j - 1] as number) + 1,
        (row[j - 1] as number) + (x[i - 1] === y[j - 1] ? 0 : 1),
      );
    row = next;
  }
  return row[y.length] as number;
}
