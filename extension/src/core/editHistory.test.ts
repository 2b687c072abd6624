import assert from "node:assert/strict";
import { test } from "node:test";
import { NEXT_EDIT_LIMITS, RecentEdit } from "@tab-relay/shared";
import { RecentFiles, changeAt, type FileDescriptor } from "./recentFiles";
import { FakeClock } from "./testing";

const folder = "file:///work";
const file = (path: string): FileDescriptor => ({ uri: `${folder}/${path}`, path, scheme: "file", folder });
const source = ["function area(width, height) {", "  return width * height;", "}", "area(width, height);"].join("\n");

/** Types `text` at `offset` one character at a time, as VS Code reports keystrokes; returns the new text. */
function typeAt(files: RecentFiles, uri: string, text: string, offset: number, typed: string): string {
  let current = text;
  for (const [i, char] of [...typed].entries()) {
    files.edit(uri, [changeAt(current, offset + i, 0, char)]);
    current = current.slice(0, offset + i) + char + current.slice(offset + i);
  }
  return current;
}

test("a word typed letter by letter on one line is one edit from the old line to the new one, with its path and age", async () => {
  const clock = new FakeClock();
  const files = new RecentFiles(clock);
  files.open(file("src/area.ts"), source);
  const at = source.indexOf("width,");
  let text = source;
  files.edit(`${folder}/src/area.ts`, [changeAt(text, at, "width".length, "")]);
  text = text.slice(0, at) + text.slice(at + "width".length);
  await clock.advance(100);
  typeAt(files, `${folder}/src/area.ts`, text, at, "w1");
  await clock.advance(400);
  const edits = files.recentEdits();
  assert.deepEqual(edits, [
    {
      file_path: "src/area.ts",
      start_line: 0,
      old_lines: ["function area(width, height) {"],
      new_lines: ["function area(w1, height) {"],
      age_ms: 400,
    },
  ]);
  for (const edit of edits) assert.equal(RecentEdit.safeParse(edit).success, true);
  assert.deepEqual(files.lastEdit(), { path: "src/area.ts", at: clock.now() - 400 });
});

test("edits on other lines are separate entries, oldest first, and a line typed back to what it was is no edit", () => {
  const clock = new FakeClock();
  const files = new RecentFiles(clock);
  const uri = `${folder}/src/area.ts`;
  files.open(file("src/area.ts"), source);
  let text = typeAt(files, uri, source, source.indexOf(" * height"), "!");
  text = typeAt(files, uri, text, text.indexOf("(width, height);"), "x");
  assert.deepEqual(
    files.recentEdits().map((edit) => [edit.start_line, edit.old_lines, edit.new_lines]),
    [
      [1, ["  return width * height;"], ["  return width! * height;"]],
      [3, ["area(width, height);"], ["areax(width, height);"]],
    ],
  );
  const x = text.indexOf("x(width");
  files.edit(uri, [changeAt(text, x, 1, "")]);
  assert.deepEqual(
    files.recentEdits().map((edit) => edit.start_line),
    [1],
  );
});

test("a line break typed inside an edit grows it to the lines it now spans", () => {
  const files = new RecentFiles(new FakeClock());
  const uri = `${folder}/src/area.ts`;
  files.open(file("src/area.ts"), source);
  const text = typeAt(files, uri, source, source.indexOf("return"), "x");
  typeAt(files, uri, text, text.indexOf("xreturn"), "\n");
  assert.deepEqual(files.recentEdits()[0]?.new_lines, ["  ", "xreturn width * height;"]);
  assert.deepEqual(files.recentEdits()[0]?.old_lines, ["  return width * height;"]);
});

test("never records an edit in a file that tabRelay.excludeGlobs or files.exclude covers, and forgets a file's edits once it is excluded", () => {
  const files = new RecentFiles(new FakeClock());
  files.setExcludes({ excludeGlobs: [".env*"], filesExclude: { [folder]: { "**/generated": true } } });
  for (const path of ["config/.env.local", "src/generated/api.ts"]) {
    assert.notEqual(files.open(file(path), "TOKEN=abc"), undefined);
    assert.equal(files.edit(`${folder}/${path}`, [changeAt("TOKEN=abc", 6, 3, "secret")]), false);
  }
  assert.deepEqual(files.recentEdits(), []);

  files.open(file("src/secrets.ts"), source);
  typeAt(files, `${folder}/src/secrets.ts`, source, 0, "x");
  assert.equal(files.recentEdits().length, 1);
  files.setExcludes({ excludeGlobs: ["secrets.ts"] });
  assert.deepEqual(files.recentEdits(), []);
});

test("bounded in count, in characters, and in lines per edit; the oldest edits go first", () => {
  const lines = Array.from({ length: 200 }, (_, i) => `const value${i} = ${i};`);
  const files = new RecentFiles(new FakeClock(), {}, { maxEdits: 4, maxChars: 400, maxLines: 5 });
  const uri = `${folder}/src/values.ts`;
  let text = lines.join("\n");
  files.open(file("src/values.ts"), text);
  for (let line = 0; line < 100; line += 10) {
    const offset = text.indexOf(`value${line} `);
    files.edit(uri, [changeAt(text, offset, 0, "x")]);
    text = text.slice(0, offset) + "x" + text.slice(offset);
  }
  assert.deepEqual(
    files.recentEdits().map((edit) => edit.start_line),
    [60, 70, 80, 90],
  );
  // Ten pasted lines are more than an edit may hold: left out, not cut.
  files.edit(uri, [changeAt(text, 0, 0, "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n")]);
  assert.deepEqual(
    files.recentEdits().map((edit) => edit.start_line),
    [60, 70, 80, 90],
  );
  // Long lines fill the character budget: the older edits make room.
  const long = new RecentFiles(new FakeClock(), {}, { maxChars: 400 });
  const wide = Array.from({ length: 10 }, (_, i) => `${String(i)}${"=".repeat(90)}`);
  let wideText = wide.join("\n");
  long.open(file("src/wide.ts"), wideText);
  for (let line = 0; line < 10; line += 2) {
    const offset = wideText.indexOf(`${line}=`);
    long.edit(`${folder}/src/wide.ts`, [changeAt(wideText, offset, 0, "x")]);
    wideText = wideText.slice(0, offset) + "x" + wideText.slice(offset);
  }
  const kept = long.recentEdits();
  const chars = kept.reduce((sum, e) => sum + [...e.old_lines, ...e.new_lines].join("\n").length + 2, 0);
  assert.ok(chars <= 400, `${chars} characters held`);
  assert.deepEqual(
    kept.map((edit) => edit.start_line),
    [6, 8],
  );
  assert.ok(NEXT_EDIT_LIMITS.recentEdits >= kept.length);
});
