import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Member } from "../store/types";
import { findMentions } from "./mentions";

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
});
