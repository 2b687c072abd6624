import type { NextEdit } from "@tab-relay/shared";

/**
 * The smallest edits that turn `oldLines` (document lines from `firstLine`) into `newText`: a line diff (longest
 * common subsequence; regions are at most a few dozen lines, so the table stays small), then each changed block
 * trimmed to the characters that differ, as Zed does with a model's rewritten region (zed-industries/zed
 * crates/zeta/src/zeta1.rs `compute_edits`: text_diff, then common prefix and suffix trimmed). Ranges are in
 * document lines and UTF-16 characters; they are sorted and never overlap.
 */
export function diffRegion(oldLines: readonly string[], newText: string, firstLine: number): NextEdit[] {
  const newLines = newText.split("\n");
  // Each line is treated as ending in a line break, so a changed block is a run of whole lines in both texts.
  const oldText = `${oldLines.join("\n")}\n`;
  const newFull = `${newText}\n`;
  const oldStarts = lineStarts(oldLines);
  const newStarts = lineStarts(newLines);
  const edits: NextEdit[] = [];
  for (const block of changedBlocks(oldLines, newLines).flatMap(lineByLine)) {
    let start = oldStarts[block.oldFrom] as number;
    let end = oldStarts[block.oldTo] as number;
    let from = newStarts[block.newFrom] as number;
    let to = newStarts[block.newTo] as number;
    while (start < end && from < to && oldText[start] === newFull[from]) {
      start++;
      from++;
    }
    while (end > start && to > from && oldText[end - 1] === newFull[to - 1]) {
      end--;
      to--;
    }
    // Deleting the region's last line(s): take the line break before them rather than the region's own last one,
    // so the range never reaches past the region's last line.
    let text = newFull.slice(from, to);
    if (end === oldText.length && from === to && start > 0 && oldText[start - 1] === "\n") {
      start--;
      end--;
    } else if (start === oldText.length && end === start) {
      // Lines added after the region's last line: written after its last character, the break first.
      start--;
      end--;
      text = `\n${text.slice(0, -1)}`;
    }
    edits.push({
      range: { start: positionOf(oldStarts, start, firstLine), end: positionOf(oldStarts, end, firstLine) },
      text,
    });
  }
  return edits;
}

/** Applies sorted, non-overlapping edits to lines that start at document line `firstLine`. */
export function applyEdits(lines: readonly string[], firstLine: number, edits: readonly NextEdit[]): string[] {
  const starts = lineStarts(lines);
  let text = lines.join("\n");
  const offset = (line: number, character: number) => (starts[line - firstLine] as number) + character;
  for (const edit of [...edits].reverse()) {
    const from = offset(edit.range.start.line, edit.range.start.character);
    const to = offset(edit.range.end.line, edit.range.end.character);
    text = text.slice(0, from) + edit.text + text.slice(to);
  }
  return text.split("\n");
}

interface Block {
  oldFrom: number;
  oldTo: number;
  newFrom: number;
  newTo: number;
}

/** A block that changes as many lines as it had is edited line by line: one small edit per changed line. */
function lineByLine(block: Block): Block[] {
  const lines = block.oldTo - block.oldFrom;
  if (lines <= 1 || lines !== block.newTo - block.newFrom) return [block];
  return Array.from({ length: lines }, (_, i) => ({
    oldFrom: block.oldFrom + i,
    oldTo: block.oldFrom + i + 1,
    newFrom: block.newFrom + i,
    newTo: block.newFrom + i + 1,
  }));
}

/** Runs of lines that differ, from a longest-common-subsequence table of whole lines. */
function changedBlocks(a: readonly string[], b: readonly string[]): Block[] {
  const n = a.length;
  const m = b.length;
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..], in one flat array.
  const width = m + 1;
  const lcs = new Uint16Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i * width + j] =
        a[i] === b[j]
          ? (lcs[(i + 1) * width + j + 1] as number) + 1
          : Math.max(lcs[(i + 1) * width + j] as number, lcs[i * width + j + 1] as number);
  const blocks: Block[] = [];
  let open: Block | undefined;
  let i = 0;
  let j = 0;
  const close = () => {
    if (open) blocks.push({ ...open, oldTo: i, newTo: j });
    open = undefined;
  };
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      close();
      i++;
      j++;
      continue;
    }
    open ??= { oldFrom: i, oldTo: i, newFrom: j, newTo: j };
    if (j < m && (i === n || (lcs[i * width + j + 1] as number) >= (lcs[(i + 1) * width + j] as number))) j++;
    else i++;
  }
  close();
  return blocks;
}

/** The offset each line starts at, plus one past the end (as if every line ended in a line break). */
function lineStarts(lines: readonly string[]): number[] {
  const starts = [0];
  let at = 0;
  for (const line of lines) {
    at += line.length + 1;
    starts.push(at);
  }
  return starts;
}

function positionOf(starts: readonly number[], offset: number, firstLine: number) {
  // The last line start at or before the offset (a binary search: regions are small, but answers are bounded anyway).
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if ((starts[mid] as number) <= offset) low = mid;
    else high = mid - 1;
  }
  return { line: firstLine + low, character: offset - (starts[low] as number) };
}
