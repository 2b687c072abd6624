import type { Member } from "../store/types";

const WORD = /[\p{L}\p{M}\p{N}_]/u;
const ID_MENTION = /<@([A-Za-z0-9_]{1,64})>/g;

interface TrieNode {
  /** Children by the next UTF-16 code unit of a folded name. */
  readonly next: Map<number, TrieNode>;
  /** The member whose folded name ends here; the first in directory order when several names fold alike. */
  member: Member | undefined;
}

/** The directory arranged for `findMentions`: built once per directory version, then shared by every message. */
export interface MentionIndex {
  readonly byId: ReadonlyMap<string, Member>;
  readonly names: TrieNode;
}

/**
 * The case-insensitive form of one code point, the same on both sides: its lower case, with the final sigma "ς"
 * taken as "σ". Lower-casing a whole string is per code point except for one rule, Final_Sigma ("Σ" becomes "ς" at
 * the end of a word, which depends on its neighbours); folding each code point alone and equating the two sigmas
 * makes the comparison independent of where a slice of the text happens to end, and never rejects a pair that
 * whole-string lower-casing would accept. Lower case can be longer than its code point ("İ" becomes "i" and a
 * combining dot), so names and text are both compared as sequences of folded code points, never by index.
 */
function fold(codePoint: number): string {
  const lower = String.fromCodePoint(codePoint).toLowerCase();
  return lower === "ς" ? "σ" : lower;
}

const A = 0x41;
const Z = 0x5a;
const CASE_OFFSET = 0x20;

function codePointWidth(codePoint: number): number {
  return codePoint > 0xffff ? 2 : 1;
}

function isWord(codePoint: number | undefined): boolean {
  return codePoint !== undefined && WORD.test(String.fromCodePoint(codePoint));
}

/** The code point that ends just before `index`, a surrogate pair read whole. */
function codePointBefore(text: string, index: number): number | undefined {
  if (index <= 0) return undefined;
  const low = text.charCodeAt(index - 1);
  if (low >= 0xdc00 && low <= 0xdfff && index >= 2) {
    const high = text.charCodeAt(index - 2);
    if (high >= 0xd800 && high <= 0xdbff) return text.codePointAt(index - 2);
  }
  return low;
}

/** Follows the folded form of one code point from `node`; undefined when no name continues that way. */
function step(node: TrieNode, codePoint: number): TrieNode | undefined {
  if (codePoint < 0x80) return node.next.get(codePoint >= A && codePoint <= Z ? codePoint + CASE_OFFSET : codePoint);
  const folded = fold(codePoint);
  let at: TrieNode | undefined = node;
  for (let i = 0; at !== undefined && i < folded.length; i++) at = at.next.get(folded.charCodeAt(i));
  return at;
}

export function mentionIndex(directory: readonly Member[]): MentionIndex {
  const names: TrieNode = { next: new Map(), member: undefined };
  for (const member of directory) {
    if (member.name === "") continue;
    let node = names;
    for (const char of member.name) {
      const folded = fold(char.codePointAt(0) as number);
      for (let i = 0; i < folded.length; i++) {
        const unit = folded.charCodeAt(i);
        let child = node.next.get(unit);
        if (child === undefined) {
          child = { next: new Map(), member: undefined };
          node.next.set(unit, child);
        }
        node = child;
      }
    }
    node.member ??= member;
  }
  return { byId: new Map(directory.map((member) => [member.id, member])), names };
}

/**
 * The members a message names, in order of first mention: `<@id>`, or `@Name` matched against display names
 * case-insensitively, the longest name winning ("@Ada Lovelace" is Ada Lovelace, not Ada), and only where the
 * name ends at a word boundary and the `@` does not follow a word character (so e-mail addresses mention nobody).
 *
 * The text is read once: from each `@`, one walk down a trie of folded names, which stops at the first code point
 * no name continues with. A walk is never longer than the longest name, whatever the directory's size, where
 * trying every name at every `@` cost (number of `@`) × (directory size).
 */
export function findMentions(text: string, directory: MentionIndex | readonly Member[]): Member[] {
  const index = "names" in directory ? directory : mentionIndex(directory);
  const found = new Map<string, { member: Member; at: number }>();
  const note = (member: Member, at: number) => {
    if (!found.has(member.id)) found.set(member.id, { member, at });
  };
  for (const match of text.matchAll(ID_MENTION)) {
    const member = index.byId.get(match[1] as string);
    if (member) note(member, match.index);
  }
  for (let at = text.indexOf("@"); at !== -1; at = text.indexOf("@", at + 1)) {
    const before = codePointBefore(text, at);
    if (before === 0x3c /* < */ || isWord(before)) continue;
    let node: TrieNode | undefined = index.names;
    let longest: Member | undefined;
    for (let i = at + 1; i < text.length;) {
      const codePoint = text.codePointAt(i) as number;
      node = step(node, codePoint);
      if (node === undefined) break;
      i += codePointWidth(codePoint);
      if (node.member !== undefined && !isWord(text.codePointAt(i))) longest = node.member;
    }
    if (longest) note(longest, at);
  }
  return [...found.values()].sort((a, b) => a.at - b.at).map((entry) => entry.member);
}
