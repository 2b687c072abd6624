import type { Member } from "../store/types";

const WORD = /[\p{L}\p{M}\p{N}_]/u;
const ID_MENTION = /<@([A-Za-z0-9_]{1,64})>/g;

/**
 * The members a message names, in order of first mention: `<@id>`, or `@Name` matched against display names
 * case-insensitively, the longest name winning ("@Ada Lovelace" is Ada Lovelace, not Ada), and only where the
 * name ends at a word boundary and the `@` does not follow a word character (so e-mail addresses mention nobody).
 */
export function findMentions(text: string, directory: readonly Member[]): Member[] {
  const found = new Map<string, { member: Member; at: number }>();
  const note = (member: Member, at: number) => {
    if (!found.has(member.id)) found.set(member.id, { member, at });
  };
  const byId = new Map(directory.map((member) => [member.id, member]));
  for (const match of text.matchAll(ID_MENTION)) {
    const member = byId.get(match[1] as string);
    if (member) note(member, match.index);
  }
  const byLength = [...directory].sort((a, b) => b.name.length - a.name.length);
  for (let at = text.indexOf("@"); at !== -1; at = text.indexOf("@", at + 1)) {
    if (at > 0 && (WORD.test(text[at - 1] as string) || text[at - 1] === "<")) continue;
    for (const member of byLength) {
      // Lower-casing can change a string's length ("İ" becomes two code units), so compare slices of the
      // original text rather than indexing into a lower-cased copy.
      const end = at + 1 + member.name.length;
      if (member.name === "" || text.slice(at + 1, end).toLowerCase() !== member.name.toLowerCase()) continue;
      const after = text[end];
      if (after !== undefined && WORD.test(after)) continue;
      note(member, at);
      break;
    }
  }
  return [...found.values()].sort((a, b) => a.at - b.at).map((entry) => entry.member);
}
