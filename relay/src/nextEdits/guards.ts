import type { NextEdit, NoNextEditReason } from "@tab-relay/shared";
import { NEXT_EDIT_LIMITS } from "@tab-relay/shared";
import { diffRegion } from "./diff";
import { type NextEditDocument, lineAt, regionLines } from "./document";

/**
 * What models write to say "no edit": Zed's Zeta 2 formats `NO_EDITS` (zed crates/zeta_prompt/src/zeta_prompt.rs,
 * `no_edits`), `KEEP_PREVIOUS` (seen in the editor by Zed users, zed#52770), Copilot NES's `<NO_CHANGE>`
 * (microsoft/vscode-copilot-chat src/extension/xtab), and the chat format's own `NO_CHANGE`.
 */
export const NO_CHANGE_MARKERS = ["NO_EDITS", "KEEP_PREVIOUS", "<NO_CHANGE>", "NO_CHANGE", "<|no_change|>"] as const;

/** The whole reply is a no-change marker (a Zeta 2 end marker after it, or a full stop, included). */
export function isNoChangeMarker(reply: string): boolean {
  const text = reply
    .trim()
    .replace(/(?:>>>>>>> UPDATED|<\|endoftext\|>|<\|im_end\|>|\.)\s*$/, "")
    .trim();
  return (NO_CHANGE_MARKERS as readonly string[]).includes(text);
}

/** How many no-change markers `text` holds, wherever they are. */
function markersIn(text: string): number {
  let n = 0;
  for (const marker of NO_CHANGE_MARKERS) n += text.split(marker).length - 1;
  return n;
}

export type Judgement = { edits: NextEdit[] } | { reason: NoNextEditReason };

/**
 * The edits a rewritten region stands for, or why none are given. A rewrite that brings in marker text the region
 * did not hold, repeats the lines just outside the region (it rewrote past its edges), or removes most of the
 * region's code is refused: a wrong next edit costs the person more than none (zed#52585: a wrong format deleted
 * most of a file).
 */
export function judgeRewrite(doc: NextEditDocument, rewrite: string): Judgement {
  const old = regionLines(doc);
  const oldText = old.join("\n");
  if (isNoChangeMarker(rewrite)) return { reason: "no_change" };
  if (markersIn(rewrite) > markersIn(oldText)) return { reason: "unparseable" };
  const lines = rewrite.split("\n");
  if (lines.length > old.length + NEXT_EDIT_LIMITS.regionLines) return { reason: "outside_region" };
  if (rewritesPastEdges(doc, old, lines)) return { reason: "outside_region" };
  const oldCode = codeChars(oldText);
  if (oldCode >= 12 && codeChars(rewrite) * 2 < oldCode) return { reason: "too_destructive" };
  if (rewrite === oldText) return { reason: "no_change" };
  const edits = diffRegion(old, rewrite, doc.regionStart);
  if (edits.length === 0) return { reason: "no_change" };
  if (edits.length > NEXT_EDIT_LIMITS.answerEdits) return { reason: "ambiguous" };
  return { edits };
}

/** The rewrite starts with the (non-blank) line above the region, or ends with the one below, and the region did not. */
function rewritesPastEdges(doc: NextEditDocument, old: readonly string[], lines: readonly string[]): boolean {
  const above = lineAt(doc, doc.regionStart - 1);
  const below = lineAt(doc, doc.regionEnd);
  const first = lines[0];
  const last = lines[lines.length - 1];
  if (above !== undefined && above.trim().length > 3 && first === above && old[0] !== above && lines.length > 1)
    return true;
  return (
    below !== undefined &&
    below.trim().length > 3 &&
    last === below &&
    old[old.length - 1] !== below &&
    lines.length > 1
  );
}

function codeChars(text: string): number {
  return text.replace(/\s+/g, "").length;
}
