import { NEXT_EDIT_LIMITS, type NextEdit, type RecentEdit } from "@tab-relay/shared";
import type { NextEditDocument } from "./document";
import type { Judgement } from "./guards";
import { KEYWORDS, type Token, isLiteral, tokenize } from "./tokens";

/**
 * Next edits without a model: the edit the person just made, propagated where the same change is still to make.
 * - a renamed identifier: its other occurrences in the region, else its next occurrence in the file;
 * - an argument added at one call: the other calls of that function with the arguments the call had;
 * - a literal changed in one row of a repeated pattern: the same literal in the other rows.
 * It proposes only when the pattern is unambiguous (a wrong next edit costs the person more than none), and says
 * `ambiguous` when it saw a pattern and declined.
 */
export type PropagationKind = "rename" | "argument" | "literal";

export interface LocalProposal {
  judgement: Judgement;
  kind?: PropagationKind;
}

/** Edits older than this are not "the edit just made". */
const FRESH_MS = 120_000;

export function proposeLocalNextEdit(doc: NextEditDocument, recentEdits: readonly RecentEdit[]): LocalProposal {
  const last = recentEdits[recentEdits.length - 1];
  if (!last || last.file_path !== doc.filePath) return none;
  if (last.age_ms !== undefined && last.age_ms > FRESH_MS) return none;
  if (last.old_lines.length !== last.new_lines.length || last.new_lines.length === 0) return none;
  // The edit must describe the excerpt as it stands, or its lines say nothing about where the change is to go.
  const editedAt = last.start_line - doc.firstLine;
  for (let i = 0; i < last.new_lines.length; i++) if (doc.lines[editedAt + i] !== last.new_lines[i]) return none;

  const changes: Change[] = [];
  for (let i = 0; i < last.new_lines.length; i++) {
    const before = last.old_lines[i] as string;
    const after = last.new_lines[i] as string;
    if (before === after) continue;
    const change = classify(before, after, last.start_line + i);
    if (!change) return none;
    changes.push(change);
  }
  const change = changes[0];
  if (!change || changes.some((other) => key(other) !== key(change))) return none;
  const edited = new Set(last.new_lines.map((_, i) => last.start_line + i));
  switch (change.kind) {
    case "rename":
      return { kind: "rename", judgement: propagateRename(doc, change, edited) };
    case "literal":
      return { kind: "literal", judgement: propagateLiteral(doc, change) };
    case "argument":
      return { kind: "argument", judgement: propagateArgument(doc, change, edited) };
  }
}

const none: LocalProposal = { judgement: { reason: "no_change" } };
const ambiguous: Judgement = { reason: "ambiguous" };

type Change =
  | { kind: "rename"; from: string; to: string; member: boolean }
  | { kind: "literal"; from: string; to: string; line: number; column: number; skeleton: string }
  | { kind: "argument"; callee: string; member: boolean; inserted: string; atStart: boolean; args: number };

function key(change: Change): string {
  switch (change.kind) {
    case "rename":
      return `rename\u0000${change.from}\u0000${change.to}\u0000${change.member}`;
    case "literal":
      return `literal\u0000${change.from}\u0000${change.to}\u0000${change.line}`;
    case "argument":
      return `argument\u0000${change.callee}\u0000${change.inserted}\u0000${change.atStart}\u0000${change.args}`;
  }
}

/** What changed between two versions of one line, when it is one of the three patterns; undefined otherwise. */
function classify(before: string, after: string, line: number): Change | undefined {
  const a = tokenize(before);
  const b = tokenize(after);
  if (a.length === b.length) {
    const differing: number[] = [];
    for (let i = 0; i < a.length; i++) if (a[i]?.text !== b[i]?.text) differing.push(i);
    const first = differing[0];
    if (first === undefined) return undefined;
    const from = a[first] as Token;
    const to = b[first] as Token;
    if (differing.some((i) => a[i]?.text !== from.text || b[i]?.text !== to.text)) return undefined;
    if (from.kind === "identifier" && to.kind === "identifier") {
      if (KEYWORDS.has(from.text) || KEYWORDS.has(to.text)) return undefined;
      // Some occurrences renamed and others left on the same line: a deliberate choice, not a rename.
      if (b.some((token) => token.text === from.text)) return undefined;
      const members = differing.map((i) => a[i - 1]?.text === ".");
      if (members.some((member) => member !== members[0])) return undefined;
      return { kind: "rename", from: from.text, to: to.text, member: members[0] === true };
    }
    if (isLiteral(from) && isLiteral(to) && from.kind === to.kind && differing.length === 1)
      return { kind: "literal", from: from.text, to: to.text, line, column: first, skeleton: skeletonOf(b) };
    return undefined;
  }
  return classifyInsertion(a, b);
}

/** An argument inserted first or last in the argument list of a call that is not a definition. */
function classifyInsertion(a: Token[], b: Token[]): Change | undefined {
  if (b.length <= a.length) return undefined;
  let prefix = 0;
  while (prefix < a.length && a[prefix]?.text === b[prefix]?.text) prefix++;
  let suffix = 0;
  while (suffix < a.length - prefix && a[a.length - 1 - suffix]?.text === b[b.length - 1 - suffix]?.text) suffix++;
  if (prefix + suffix !== a.length) return undefined;
  const inserted = b.slice(prefix, b.length - suffix);
  const text = inserted.map((token) => token.text).join("");
  // The call whose parentheses hold the insertion point.
  const open = enclosingParen(a, prefix);
  if (open === undefined) return undefined;
  const callee = a[open - 1];
  if (callee?.kind !== "identifier" || KEYWORDS.has(callee.text)) return undefined;
  const close = matchingParen(a, open);
  if (close === undefined || isDefinition(a, open - 1, close)) return undefined;
  const args = countArgs(a, open, close);
  const atStart = prefix === open + 1;
  const atEnd = prefix === close;
  if (atStart === atEnd && args > 0) return undefined;
  // One argument, whole: `, x` at the end, `x, ` at the start, or `x` into an empty list.
  const body =
    atEnd && args > 0 ? text.replace(/^\s*,\s*/, "") : atStart && args > 0 ? text.replace(/\s*,\s*$/, "") : text;
  if (body === text && args > 0) return undefined;
  if (body.trim() === "" || countArgs(tokenize(`(${body})`), 0, tokenize(`(${body})`).length - 1) !== 1)
    return undefined;
  return {
    kind: "argument",
    callee: callee.text,
    member: a[open - 2]?.text === ".",
    inserted: text,
    atStart: atStart && args > 0,
    args,
  };
}

function enclosingParen(tokens: Token[], at: number): number | undefined {
  let depth = 0;
  for (let i = at - 1; i >= 0; i--) {
    const text = tokens[i]?.text;
    if (text === ")" || text === "]" || text === "}") depth++;
    else if (text === "(" || text === "[" || text === "{") {
      if (depth === 0) return text === "(" ? i : undefined;
      depth--;
    }
  }
  return undefined;
}

function matchingParen(tokens: Token[], open: number): number | undefined {
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    const text = tokens[i]?.text;
    if (text === "(" || text === "[" || text === "{") depth++;
    else if (text === ")" || text === "]" || text === "}") {
      depth--;
      if (depth === 0) return text === ")" ? i : undefined;
    }
  }
  return undefined;
}

/** Top-level arguments between the parentheses at `open` and `close`. */
function countArgs(tokens: Token[], open: number, close: number): number {
  let depth = 0;
  let args = 0;
  let seen = false;
  for (let i = open + 1; i < close; i++) {
    const token = tokens[i] as Token;
    if (token.text === "(" || token.text === "[" || token.text === "{") depth++;
    else if (token.text === ")" || token.text === "]" || token.text === "}") depth--;
    if (token.kind === "space") continue;
    if (depth === 0 && token.text === ",") {
      args++;
      seen = false;
      continue;
    }
    seen = true;
  }
  return seen ? args + 1 : args;
}

/** `function f(…)`, `def f(…)`, or a method `f(…) {` / `f(…): T {` / `f = (…) =>`: a parameter list, not a call. */
function isDefinition(tokens: Token[], callee: number, close: number): boolean {
  const before = tokens
    .slice(0, callee)
    .filter((token) => token.kind !== "space")
    .map((token) => token.text);
  if (before.some((word) => ["function", "def", "fn", "func", "class", "interface", "type"].includes(word)))
    return true;
  const rest = tokens
    .slice(close + 1)
    .map((token) => token.text)
    .join("")
    .trim();
  return rest.startsWith("{") || rest.startsWith(":") || rest.startsWith("=>") || rest.startsWith("->");
}

function skeletonOf(tokens: Token[]): string {
  return tokens
    .filter((token) => token.kind !== "space")
    .map((token) => (isLiteral(token) ? `#${token.kind}` : token.text))
    .join(" ");
}

/** Whether the token at `i` is the identifier `name`, after a `.` (a member) or not as asked. */
function isOccurrence(tokens: Token[], i: number, name: string, member: boolean): boolean {
  const token = tokens[i];
  return token?.kind === "identifier" && token.text === name && (tokens[i - 1]?.text === ".") === member;
}

/** Identifier occurrences of `name` in a line: outside strings, as whole words, members or not as asked. */
function occurrences(line: string, name: string, member: boolean): Token[] {
  if (!line.includes(name)) return [];
  const tokens = tokenize(line);
  return tokens.filter((_, i) => isOccurrence(tokens, i, name, member));
}

/** Whether `name` is called on the line (`name(`), and whether a function of that name is defined there. */
function usesOf(line: string | undefined, name: string): { call: boolean; definition: boolean } {
  const uses = { call: false, definition: false };
  if (line === undefined || !line.includes(name)) return uses;
  const tokens = tokenize(line);
  tokens.forEach((_, t) => {
    if (!isOccurrence(tokens, t, name, false)) return;
    if (definedAt(tokens, t) !== undefined) uses.definition = true;
    else if (tokens[t + 1]?.text === "(") uses.call = true;
  });
  return uses;
}

function propagateRename(
  doc: NextEditDocument,
  change: Extract<Change, { kind: "rename" }>,
  edited: ReadonlySet<number>,
): Judgement {
  // A property renamed on one object says nothing about the same property name on others.
  if (change.member) return ambiguous;
  // Names whose words differ (ensureChromium -> chromiumFor, Database -> AgentsTable) are as often a switch to
  // another function or type as a rename; names that keep their words (Clock -> WallClock, AgentView -> Agent) are
  // renames. Measured on this repository's history (docs/benchmarks.md#next-edits).
  if (!wordsKept(change.from, change.to)) return ambiguous;
  // A call changed to another name, of a function this file defines: as often a switch to a function written next
  // (tail -> tailFromLineStart, record -> recordWhileHeld) as a rename. Proposed at the definition, the replay of
  // this repository's history found both such proposals wrong (docs/benchmarks.md#next-edits).
  const calledWhereEdited = [...edited].some((line) => usesOf(doc.lines[line - doc.firstLine], change.to).call);
  if (calledWhereEdited && doc.lines.some((text) => usesOf(text, change.from).definition)) return ambiguous;
  const found: { line: number; token: Token }[] = [];
  for (let i = 0; i < doc.lines.length; i++) {
    const line = doc.firstLine + i;
    const text = doc.lines[i] as string;
    // The new name already in use elsewhere: the person swapped in another name, not renamed this one.
    if (!edited.has(line) && occurrences(text, change.to, change.member).length > 0) return ambiguous;
    for (const token of occurrences(text, change.from, change.member)) found.push({ line, token });
  }
  const inRegion = found.filter((spot) => spot.line >= doc.regionStart && spot.line < doc.regionEnd);
  const after = found.filter((spot) => spot.line > doc.cursor.line);
  const chosen = inRegion.length > 0 ? inRegion : after.slice(0, 1);
  if (chosen.length === 0) return { reason: "no_change" };
  if (chosen.length > NEXT_EDIT_LIMITS.answerEdits) return ambiguous;
  return {
    edits: chosen.map(({ line, token }) => ({
      range: {
        start: { line, character: token.at },
        end: { line, character: token.at + token.text.length },
      },
      text: change.to,
    })),
  };
}

function propagateLiteral(doc: NextEditDocument, change: Extract<Change, { kind: "literal" }>): Judgement {
  const edits: NextEdit[] = [];
  const rowAt = (line: number) => {
    const text = doc.lines[line - doc.firstLine];
    if (text === undefined) return undefined;
    const tokens = tokenize(text);
    return skeletonOf(tokens) === change.skeleton ? tokens : undefined;
  };
  let rows = 0;
  for (const step of [-1, 1]) {
    for (let line = change.line + step; ; line += step) {
      const tokens = rowAt(line);
      if (!tokens) break;
      rows++;
      const token = tokens[change.column] as Token;
      if (token.text === change.to) continue;
      // The column holds other values too: the rows are a table of different values, not one value repeated.
      if (token.text !== change.from) return ambiguous;
      // A row above still holds the old value: the person passed it by and changed this row alone.
      if (step < 0) return ambiguous;
      edits.push({
        range: { start: { line, character: token.at }, end: { line, character: token.at + token.text.length } },
        text: change.to,
      });
    }
  }
  if (rows === 0 || edits.length === 0) return { reason: "no_change" };
  if (edits.length > NEXT_EDIT_LIMITS.answerEdits) return ambiguous;
  edits.sort((x, y) => x.range.start.line - y.range.start.line);
  return { edits };
}

function propagateArgument(
  doc: NextEditDocument,
  change: Extract<Change, { kind: "argument" }>,
  edited: ReadonlySet<number>,
): Judgement {
  // Only when the file defines the function with the parameter already added, and required: then every call with
  // the old arguments is now missing one. Callbacks and builders of the same name (resolve(), .addColumn()) and
  // optional parameters are left alone.
  if (change.member || !definesRequiredParameter(doc, change)) return { reason: "no_change" };
  const found: NextEdit[] = [];
  for (let i = 0; i < doc.lines.length; i++) {
    const line = doc.firstLine + i;
    if (edited.has(line)) continue;
    const text = doc.lines[i] as string;
    if (!text.includes(change.callee)) continue;
    const tokens = tokenize(text);
    for (let t = 0; t < tokens.length; t++) {
      const token = tokens[t] as Token;
      if (token.kind !== "identifier" || token.text !== change.callee || tokens[t + 1]?.text !== "(") continue;
      if ((tokens[t - 1]?.text === ".") !== change.member) continue;
      const close = matchingParen(tokens, t + 1);
      // A call spread over lines, or a definition, is left alone.
      if (close === undefined || isDefinition(tokens, t, close)) continue;
      if (countArgs(tokens, t + 1, close) !== change.args) continue;
      const at = change.atStart ? (tokens[t + 2] as Token).at : (tokens[close] as Token).at;
      found.push({ range: { start: { line, character: at }, end: { line, character: at } }, text: change.inserted });
    }
  }
  const inRegion = found.filter(
    (edit) => edit.range.start.line >= doc.regionStart && edit.range.start.line < doc.regionEnd,
  );
  const chosen =
    inRegion.length > 0 ? inRegion : found.filter((edit) => edit.range.start.line > doc.cursor.line).slice(0, 1);
  if (chosen.length === 0) return { reason: "no_change" };
  if (chosen.length > NEXT_EDIT_LIMITS.answerEdits) return ambiguous;
  return { edits: chosen };
}

/**
 * The pattern a one-line edit follows (kind, and what changed: the names, the callee and argument, or the values),
 * so a replay can tell whether two edits are the same change made twice; undefined for any other edit.
 */
export function changeSignature(
  before: string,
  after: string,
): { kind: PropagationKind; signature: string } | undefined {
  const change = classify(before, after, 0);
  if (!change) return undefined;
  const signature = change.kind === "literal" ? `literal\u0000${change.from}\u0000${change.to}` : key(change);
  return { kind: change.kind, signature };
}

/** The excerpt defines `callee` with one parameter more than the calls had, the new one (first or last) required. */
function definesRequiredParameter(doc: NextEditDocument, change: Extract<Change, { kind: "argument" }>): boolean {
  for (const text of doc.lines) {
    if (!text.includes(change.callee)) continue;
    const tokens = tokenize(text);
    for (let t = 0; t < tokens.length; t++) {
      const token = tokens[t] as Token;
      if (token.kind !== "identifier" || token.text !== change.callee) continue;
      const parameters = definedAt(tokens, t);
      if (parameters === undefined) continue;
      const { open, close } = parameters;
      if (countArgs(tokens, open, close) !== change.args + 1) return false;
      const params = splitArgs(tokens, open, close);
      const param = change.atStart ? params[0] : params[params.length - 1];
      return param !== undefined && !/[?=]/.test(param) && !param.trim().startsWith("...");
    }
  }
  return false;
}

/**
 * The parameter list's parentheses when the identifier at `t` names a function defined there: `function f(`,
 * `f(…) {`, or `f = (…) =>` / `const f = async (…) =>`; undefined for a call or anything else.
 */
function definedAt(tokens: Token[], t: number): { open: number; close: number } | undefined {
  let open = t + 1;
  while (tokens[open]?.kind === "space" || tokens[open]?.text === "=" || tokens[open]?.text === "async") open++;
  if (tokens[open]?.text !== "(") return undefined;
  const close = matchingParen(tokens, open);
  if (close === undefined) return undefined;
  const arrow = open !== t + 1;
  const rest = tokens
    .slice(close + 1)
    .map((x) => x.text)
    .join("")
    .trim();
  const defined = arrow ? rest.startsWith("=>") || /^:[^=]*=>/.test(rest) : isDefinition(tokens, t, close);
  return defined ? { open, close } : undefined;
}

/** The texts of the top-level arguments between the parentheses at `open` and `close`. */
function splitArgs(tokens: Token[], open: number, close: number): string[] {
  const out: string[] = [""];
  let depth = 0;
  for (let i = open + 1; i < close; i++) {
    const token = tokens[i] as Token;
    if (token.text === "(" || token.text === "[" || token.text === "{" || token.text === "<") depth++;
    else if (token.text === ")" || token.text === "]" || token.text === "}" || token.text === ">") depth--;
    if (depth === 0 && token.text === ",") out.push("");
    else out[out.length - 1] += token.text;
  }
  return out.filter((text) => text.trim() !== "");
}

/** The words of one name all appear in the other (camelCase and snake_case words, case ignored). */
function wordsKept(from: string, to: string): boolean {
  const a = wordsOf(from);
  const b = wordsOf(to);
  const [small, large] = a.length <= b.length ? [a, b] : [b, a];
  return small.length > 0 && small.every((word) => large.includes(word));
}

function wordsOf(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[\s_$]+/)
    .map((word) => word.toLowerCase())
    .filter((word) => word !== "");
}
