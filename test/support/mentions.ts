import type { Member } from "../../relay/src/store/types";

/**
 * A directory of 500 people whose names share long prefixes ("Platform", "Platform Team", "Platform Team Member",
 * then "Platform Team Member 0" to "… 496", where "… 4" is a prefix of "… 42" and "… 496"), and messages at the
 * 8,000-character limit built to be as costly as possible for mention parsing, with the mentions each must yield.
 * The mention tests and `npm run bench -- --only mentions` share them.
 */
export function sharedPrefixDirectory(): Member[] {
  return [
    ...["Platform", "Platform Team", "Platform Team Member"].map((name, i): Member => ({
      id: `usr_p${i}`,
      type: "user",
      name,
    })),
    ...Array.from({ length: 497 }, (_, i): Member => ({
      id: `usr_m${i}`,
      type: "user",
      name: `Platform Team Member ${i}`,
    })),
  ];
}

const REPEATED = "@platform team member 49x ";

export interface HostileMessage {
  id: string;
  what: string;
  text: string;
  /** The names it mentions, in order. */
  expected: string[];
}

export const HOSTILE_MESSAGES: readonly HostileMessage[] = [
  {
    id: "at-signs",
    what: "8,000 @ signs",
    // Each @ starts a mention attempt; only the last one names anybody.
    text: `${"@".repeat(7975)}@Platform Team Member 42!`,
    expected: ["Platform Team Member 42"],
  },
  {
    id: "shared-prefix",
    what: "@ and a long shared name prefix, repeated",
    // Each attempt walks 24 characters into the names before failing, and settles for the shorter "Platform Team Member".
    text: `${REPEATED.repeat(Math.floor((8000 - 30) / REPEATED.length))}@PLATFORM TEAM MEMBER 496.`,
    expected: ["Platform Team Member", "Platform Team Member 496"],
  },
];

/**
 * The rule as first written, kept as a reference: every name, longest first, compared at every @. Plainly right on
 * text without the letters whose case-folding it got wrong (sigma, dotted İ, letters outside the BMP), and costing
 * (number of @) × (directory size).
 */
export function everyNameAtEveryAt(text: string, directory: readonly Member[]): Member[] {
  const word = /[\p{L}\p{M}\p{N}_]/u;
  const found = new Map<string, { member: Member; at: number }>();
  const note = (member: Member, at: number) => {
    if (!found.has(member.id)) found.set(member.id, { member, at });
  };
  for (const match of text.matchAll(/<@([A-Za-z0-9_]{1,64})>/g)) {
    const member = directory.find((candidate) => candidate.id === match[1]);
    if (member) note(member, match.index);
  }
  const byLength = [...directory].sort((a, b) => b.name.length - a.name.length);
  for (let at = text.indexOf("@"); at !== -1; at = text.indexOf("@", at + 1)) {
    if (at > 0 && (word.test(text[at - 1] as string) || text[at - 1] === "<")) continue;
    const member = byLength.find((candidate) => {
      const end = at + 1 + candidate.name.length;
      const after = text[end];
      return (
        candidate.name !== "" &&
        text.slice(at + 1, end).toLowerCase() === candidate.name.toLowerCase() &&
        !(after !== undefined && word.test(after))
      );
    });
    if (member) note(member, at);
  }
  return [...found.values()].sort((a, b) => a.at - b.at).map((entry) => entry.member);
}
