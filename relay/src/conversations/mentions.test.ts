import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { describe, test } from "node:test";
import type { Member } from "../store/types";
import { HOSTILE_MESSAGES, everyNameAtEveryAt, sharedPrefixDirectory } from "../../../test/support/mentions";
import { findMentions, mentionIndex } from "./mentions";

const ada: Member = { id: "usr_ada", type: "user", name: "Ada" };
const lovelace: Member = { id: "usr_lovelace", type: "user", name: "Ada Lovelace" };
const bob: Member = { id: "usr_bob", type: "user", name: "Bob" };
const deployBot: Member = { id: "agt_deploy", type: "agent", name: "Deploy Bot" };
const jose: Member = { id: "usr_jose", type: "user", name: "José" };
const zoe: Member = { id: "usr_zoe", type: "user", name: "Zoë" };
const ilkay: Member = { id: "usr_ilkay", type: "user", name: "İlkay" };
const lei: Member = { id: "usr_lei", type: "user", name: "李雷" };

// Shorter names first, so a match that depends on directory order would pick the wrong one.
const directory: readonly Member[] = [ada, bob, lovelace, deployBot, jose, zoe, ilkay, lei];

function names(text: string): string[] {
  return findMentions(text, directory).map((member) => member.name);
}

describe("findMentions", () => {
  test("@Name matches a display name whatever its case", () => {
    assert.deepEqual(names("@Ada can you look?"), ["Ada"]);
    assert.deepEqual(names("@ada can you look?"), ["Ada"]);
    assert.deepEqual(names("@ADA can you look?"), ["Ada"]);
  });

  test("a message that names no one mentions no one", () => {
    assert.deepEqual(names("nobody here"), []);
    assert.deepEqual(names("@Carol is not in the workspace"), []);
    assert.deepEqual(names("a lone @ sign"), []);
    assert.deepEqual(findMentions("@Ada", []), []);
  });

  test("the longest matching name wins", () => {
    assert.deepEqual(names("@Ada Lovelace please review"), ["Ada Lovelace"]);
    assert.deepEqual(names("@ada lovelace please review"), ["Ada Lovelace"]);
    assert.deepEqual(names("@Ada please review"), ["Ada"]);
    assert.deepEqual(names("@Ada Lovelace and @Ada"), ["Ada Lovelace", "Ada"]);
  });

  test("a name must end at a word boundary", () => {
    assert.deepEqual(names("@Adam said hi"), []);
    assert.deepEqual(names("@Ada_x"), []);
    assert.deepEqual(names("@Ada2"), []);
    assert.deepEqual(names("@Ada, hi"), ["Ada"]);
    assert.deepEqual(names("hi @Ada."), ["Ada"]);
    assert.deepEqual(names("(@Ada)"), ["Ada"]);
    assert.deepEqual(names("@Ada"), ["Ada"]);
  });

  test("an @ inside a word, as in an e-mail address, mentions no one", () => {
    assert.deepEqual(names("write to x@ada.com"), []);
    assert.deepEqual(names("bob@Ada Lovelace"), []);
    assert.deepEqual(names("José@Ada"), []);
  });

  test("<@id> mentions the member with that id", () => {
    assert.deepEqual(findMentions("ping <@usr_ada>", directory), [ada]);
    assert.deepEqual(findMentions("<@agt_deploy> ship it", directory), [deployBot]);
    assert.deepEqual(names("<@usr_nobody> is unknown"), []);
    assert.deepEqual(names("<@Ada> is not an id"), []);
  });

  test("mentions come in order of first appearance, each member once", () => {
    assert.deepEqual(names("@Bob and <@usr_ada>, then @bob and @Ada again"), ["Bob", "Ada"]);
    assert.deepEqual(names("<@usr_bob> @Deploy Bot @bob <@usr_bob>"), ["Bob", "Deploy Bot"]);
    assert.deepEqual(
      findMentions("@deploy bot @ada", directory).map((member) => [member.id, member.type]),
      [
        ["agt_deploy", "agent"],
        ["usr_ada", "user"],
      ],
    );
  });

  test("names with non-ASCII letters match case-insensitively and end at a Unicode word boundary", () => {
    assert.deepEqual(names("@josé and @ZOË"), ["José", "Zoë"]);
    assert.deepEqual(names("@Zoëy"), []);
    assert.deepEqual(names("@李雷 你好"), ["李雷"]);
    assert.deepEqual(names("@İlkay hi"), ["İlkay"]);
  });

  test("letters whose lower case is longer do not shift the match", () => {
    // "İ" lower-cases to two code units; an index computed on a lower-cased copy would land one place off.
    assert.deepEqual(names("İİ @Ada, hi"), ["Ada"]);
    assert.deepEqual(names("İ @Adam"), []);
  });

  test("the final sigma and the other sigmas are one letter, wherever a name or the text puts them", () => {
    const nikos: Member = { id: "usr_nikos", type: "user", name: "Νίκος" };
    const odos: Member = { id: "agt_odos", type: "agent", name: "ΟΔΟΣ" };
    const greek = (text: string) => findMentions(text, [nikos, odos]).map((member) => member.name);
    assert.deepEqual(greek("@ΝΊΚΟΣ hi"), ["Νίκος"]);
    assert.deepEqual(greek("@νίκοσ hi"), ["Νίκος"]);
    assert.deepEqual(greek("@οδος and @Οδοσ"), ["ΟΔΟΣ"]);
  });

  test("a name typed with a decomposed dotted İ matches, and so does the precomposed one", () => {
    // "İ" folds to "i" + U+0307; typed as those two code points, the text is longer than the name but means the same.
    assert.deepEqual(names("@i\u0307lkay hi"), ["İlkay"]);
    assert.deepEqual(names("@İLKAY hi"), ["İlkay"]);
    assert.deepEqual(names("@ilkay hi"), []);
  });

  test("letters outside the BMP count as word characters on both sides of a mention", () => {
    // "𝒜" is one letter in two UTF-16 code units; neither half alone is a letter.
    assert.deepEqual(names("@Ada𝒜"), []);
    assert.deepEqual(names("𝒜@Ada"), []);
    assert.deepEqual(names("😀@Ada 😀"), ["Ada"]);
  });

  test("an index built once answers as the directory itself does", () => {
    const index = mentionIndex(directory);
    for (const text of ["@Ada Lovelace and <@usr_bob>", "@deploy bot, @José", "x@ada.com", "@Zoëy @李雷"]) {
      assert.deepEqual(findMentions(text, index), findMentions(text, directory), text);
    }
  });

  test("on messages of ASCII, accents and CJK it finds what trying every name at every @ finds", () => {
    const alphabet = ["a", "d", "A", "D", "b", "o", "é", "É", "李", " ", " ", "@", "<", ">", "_", "1", ".", "x"];
    // A fixed xorshift generator, so a failure reproduces.
    let state = 0x9e3779b9;
    const random = (n: number) => {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      return (state >>> 0) % n;
    };
    const pick = <T>(items: readonly T[]) => items[random(items.length)] as T;
    const word = (length: number) => Array.from({ length }, () => pick(alphabet)).join("");
    const anyCase = (name: string) =>
      [...name].map((char) => (random(2) === 0 ? char.toUpperCase() : char.toLowerCase())).join("");
    let named = 0;
    for (let round = 0; round < 500; round++) {
      const members: Member[] = Array.from({ length: 1 + random(8) }, (_, i) => ({
        id: `usr_${i}`,
        type: "user",
        name: word(1 + random(6)).trim(),
      }));
      const pieces = Array.from({ length: random(12) }, () =>
        pick([
          () => word(1 + random(4)),
          () => `@${anyCase(pick(members).name)}`,
          () => `@${anyCase(pick(members).name)}${word(1)}`,
          () => `<@usr_${random(9)}>`,
        ])(),
      );
      const text = pieces.join(pick(["", " ", "@", "x"]));
      const expected = everyNameAtEveryAt(text, members);
      assert.deepEqual(findMentions(text, members), expected, JSON.stringify({ text, members }));
      if (expected.length > 0) named++;
    }
    assert.ok(named > 100, `only ${named} of 500 messages mentioned anyone`);
  });

  describe("a hostile message against a directory of 500 names sharing prefixes", () => {
    const people = sharedPrefixDirectory();
    for (const { what, text, expected } of HOSTILE_MESSAGES) {
      test(`${what}: the right mentions, in well under 100 ms`, () => {
        assert.ok(text.length <= 8000 && text.length > 7900, String(text.length));
        let best = Infinity;
        for (let run = 0; run < 3; run++) {
          const started = performance.now();
          const found = findMentions(text, people);
          best = Math.min(best, performance.now() - started);
          assert.deepEqual(
            found.map((member) => member.name),
            expected,
          );
        }
        // Trying every name at every @ took 0.3-1.6 s on the first message; one walk per @ takes about a millisecond.
        assert.ok(best < 100, `best of 3 runs took ${best.toFixed(1)} ms`);
      });
    }
  });
});
