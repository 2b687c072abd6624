import assert from "node:assert/strict";
import { test } from "node:test";
import { RecentFiles, WINDOW_LINES, WINDOW_STEP, changeAt, type FileDescriptor } from "./recentFiles";
import { FakeClock } from "./testing";
import { tokenSetOfLines, lineTokens } from "./tokens";

const file = (path: string, extra: Partial<FileDescriptor> = {}): FileDescriptor => ({
  uri: `file:///work/${path}`,
  path,
  scheme: "file",
  ...extra,
});
const uri = (path: string) => `file:///work/${path}`;
const code = (name: string, lines = 5) =>
  Array.from({ length: lines }, (_, i) => `export const ${name}${i} = compute${name}(${i});`).join("\n");

test("holds workspace files, and never untitled buffers or files outside the workspace", () => {
  const files = new RecentFiles(new FakeClock());
  assert.equal(files.open(file("src/a.ts"), code("a")), undefined);
  assert.equal(
    files.open({ uri: "untitled:Untitled-1", path: "Untitled-1", scheme: "untitled" }, "scratch notes"),
    "untitled",
  );
  assert.equal(
    files.open({ uri: "file:///etc/hosts", path: undefined, scheme: "file" }, "127.0.0.1 localhost"),
    "outside the workspace",
  );
  assert.deepEqual(files.paths(), ["src/a.ts"]);
  assert.equal(files.heldText(uri("src/a.ts")), code("a"));
});

test("never holds a file that tabRelay.excludeGlobs or its folder's files.exclude covers, one over 1 MB, or a binary one", () => {
  const files = new RecentFiles(new FakeClock());
  files.setExcludes({
    excludeGlobs: [".env*", "*.pem"],
    filesExclude: { "file:///work": { "**/generated": true, "**/*.js": { when: "$(basename).ts" }, "docs/**": false } },
  });
  const folder = "file:///work";
  assert.equal(files.open(file("config/.env.local", { folder }), "TOKEN=abc"), "tabRelay.excludeGlobs");
  assert.equal(files.open(file("certs/ca.pem", { folder }), "-----BEGIN CERTIFICATE-----"), "tabRelay.excludeGlobs");
  assert.equal(files.open(file("src/generated/api.ts", { folder }), code("api")), "files.exclude");
  assert.equal(files.open(file("src/app.js", { folder }), code("app")), "files.exclude");
  assert.equal(
    files.open(file("docs/guide.md", { folder }), "# Guide"),
    undefined,
    "a pattern set to false hides nothing",
  );
  assert.equal(
    files.open(file("src/generated/api.ts", { folder: "file:///other" }), code("api")),
    undefined,
    "files.exclude is per folder",
  );
  assert.equal(files.open(file("big.ts", { folder }), "x".repeat(1_048_577)), "over 1 MB");
  assert.equal(files.open(file("image.ts", { folder }), "GIF89a\u0000\u0001"), "binary");
  assert.equal(
    files.check(file("big.ts", { folder }), 2_000_000),
    "over 1 MB",
    "the size is checked before a file is read",
  );
  assert.equal(files.check(file("small.ts", { folder }), 1_048_576), undefined);
  assert.deepEqual(files.paths().sort(), ["docs/guide.md", "src/generated/api.ts"]);
});

test("new exclusions drop the files already held that they cover", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("src/a.ts"), code("a"));
  files.open(file("secrets/token.ts"), code("token"));
  files.setExcludes({ excludeGlobs: ["secrets"] });
  assert.deepEqual(files.paths(), ["src/a.ts"]);
});

test("deleting or moving a folder forgets the files held inside it, and only those", () => {
  const files = new RecentFiles(new FakeClock());
  for (const path of ["src/old/a.ts", "src/old/deep/b.ts", "src/older.ts", "src/c.ts"])
    files.open(file(path), code("x"));
  files.forgetFolder(uri("src/old"));
  assert.deepEqual(files.paths().sort(), ["src/c.ts", "src/older.ts"]);
});

test("beyond the file limit the least recently used file goes; using a file again keeps it", () => {
  const files = new RecentFiles(new FakeClock(), { maxFiles: 3 });
  for (const name of ["a", "b", "c"]) files.open(file(`${name}.ts`), code(name));
  assert.equal(files.touch(uri("a.ts")), true);
  files.open(file("d.ts"), code("d"));
  assert.deepEqual(files.paths(), ["d.ts", "a.ts", "c.ts"]);
  files.edit(uri("c.ts"), [changeAt(code("c"), 0, 0, "// edited\n")]);
  files.open(file("e.ts"), code("e"));
  assert.deepEqual(files.paths(), ["e.ts", "c.ts", "d.ts"]);
  assert.equal(files.touch(uri("b.ts")), false);
});

test("beyond the characters limit the oldest files go, and the counts follow every change", () => {
  const files = new RecentFiles(new FakeClock(), { maxChars: 1_000 });
  files.open(file("a.ts"), "a".repeat(400));
  files.open(file("b.ts"), "b".repeat(400));
  assert.equal(files.heldChars, 802);
  files.open(file("c.ts"), "c".repeat(400));
  assert.deepEqual(files.paths(), ["c.ts", "b.ts"]);
  files.edit(uri("b.ts"), [changeAt("b".repeat(400), 400, 0, "\nmore")]);
  assert.equal(files.heldChars, 802 + 5);
  files.setText(uri("c.ts"), "short");
  assert.equal(files.heldChars, 401 + 5 + 6);
  files.remove(uri("b.ts"));
  assert.equal(files.heldChars, 6);
  const alone = new RecentFiles(new FakeClock(), { maxChars: 10 });
  alone.open(file("huge.ts"), "h".repeat(100));
  assert.deepEqual(alone.paths(), ["huge.ts"], "the file just used stays even when it alone is over the limit");
});

/** A seeded generator, so a failing sequence of edits can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
}

test("applies changes one after another as VS Code's mirror does, and the windows always match the text", () => {
  const next = random(7);
  // VS Code gives every change in the document's own line ends, and never splits a CRLF; this document uses LF.
  const words = ["alpha", "beta", "gamma", "delta", "\n", "\n", "(", ")", " ", "value", "\n  nested = call(value);"];
  let text = Array.from({ length: 120 }, (_, i) => `line${i} = read(item${i % 17});`).join("\n");
  const files = new RecentFiles(new FakeClock());
  files.open(file("src/doc.ts"), text);
  for (let round = 0; round < 300; round++) {
    const changes = [];
    // Several changes in one event, each against the text the previous one left, as multi-cursor typing sends them.
    for (let k = 1 + Math.floor(next() * 3); k > 0; k--) {
      const offset = Math.floor(next() * (text.length + 1));
      const deleted = Math.floor(next() * Math.min(12, text.length - offset + 1));
      // Fresh names make every insertion visible in the token sets, so a stale window cannot pass for a rebuilt one.
      const inserted = Array.from({ length: Math.floor(next() * 5) }, () => words[Math.floor(next() * words.length)])
        .join("")
        .replace(/value/g, () => `value${round}x${k}`);
      changes.push(changeAt(text, offset, deleted, inserted));
      text = text.slice(0, offset) + inserted + text.slice(offset + deleted);
    }
    assert.equal(files.edit(uri("src/doc.ts"), changes), true);
    // Windows are rebuilt at the next request, after one keystroke or after several.
    if (next() < 0.3) {
      assert.equal(files.heldText(uri("src/doc.ts")), text, `text after round ${round}`);
      assertWindowsMatch(files, uri("src/doc.ts"), text, `after round ${round}`);
    }
  }
  assert.ok(text.split("\n").length > 100, "the edits kept a document worth windowing");
  assert.equal(files.heldText(uri("src/doc.ts")), text);
  assertWindowsMatch(files, uri("src/doc.ts"), text, "at the end");
});

/** Every window holds the tokens of the lines it spans now, spans 1 to WINDOW_LINES lines, and together they cover the text. */
function assertWindowsMatch(files: RecentFiles, at: string, text: string, when: string): void {
  const lines = text.split("\n").map(lineTokens);
  const covered = new Array<boolean>(lines.length).fill(false);
  for (const window of files.heldWindows(at)) {
    assert.ok(
      window.start >= 0 && window.end <= lines.length && window.end - window.start >= 1,
      `[${window.start}, ${window.end}) ${when}`,
    );
    assert.ok(window.end - window.start <= WINDOW_LINES, `[${window.start}, ${window.end}) is too long ${when}`);
    assert.deepEqual(
      window.tokens,
      tokenSetOfLines(lines, window.start, window.end),
      `tokens of [${window.start}, ${window.end}) ${when}`,
    );
    covered.fill(true, window.start, window.end);
  }
  assert.equal(covered.indexOf(false), -1, `line ${covered.indexOf(false)} is in no window ${when}`);
}

function freshWindows(text: string) {
  const lines = text.split("\n").map(lineTokens);
  const windows = [];
  for (let start = 0; ; start += WINDOW_STEP) {
    const end = Math.min(lines.length, start + WINDOW_LINES);
    windows.push({ start, end, tokens: tokenSetOfLines(lines, start, end) });
    if (end >= lines.length) return windows;
  }
}

const bounds = (windows: readonly { start: number; end: number; tokens: Int32Array }[]) =>
  windows.map(({ start, end, tokens }) => ({ start, end, tokens }));

test("typing within one line rebuilds the two windows over it and keeps the others", () => {
  const text = Array.from({ length: 100 }, (_, i) => `const name${i} = ${i};`).join("\n");
  const files = new RecentFiles(new FakeClock());
  files.open(file("a.ts"), text);
  const before = files.heldWindows(uri("a.ts"));
  const offset = text.indexOf("name20") + "name20".length;
  files.edit(uri("a.ts"), [changeAt(text, offset, 0, "Renamed")]);
  const after = files.heldWindows(uri("a.ts"));
  assert.deepEqual(
    after.map((window, i) => window === before[i]),
    [false, false, true, true],
    "windows [0, 40) and [20, 60) hold line 20",
  );
  assert.deepEqual(bounds(after), freshWindows(files.heldText(uri("a.ts")) ?? ""));
});

test("a file taken in has its windows cut at once, off the request path; an edit leaves its windows to the next request", () => {
  const text = Array.from({ length: 100 }, (_, i) => `const name${i} = ${i};`).join("\n");
  const files = new RecentFiles(new FakeClock());
  files.open(file("a.ts"), text);
  assert.equal(files.hasPendingWindows(uri("a.ts")), false, "opened");
  assertWindowsMatch(files, uri("a.ts"), text, "as opened");
  files.edit(uri("a.ts"), [changeAt(text, 0, 0, "x")]);
  assert.equal(files.hasPendingWindows(uri("a.ts")), true, "edited");
  files.relatedContext({
    uri: uri("b.ts"),
    path: "b.ts",
    cursorLine: 0,
    linesBefore: 0,
    linesAfter: 0,
    query: "name1",
    budget: 500,
  });
  assert.equal(files.hasPendingWindows(uri("a.ts")), false, "after a request");
  files.open(file("a.ts"), `${text}\nconst more = 1;`);
  assert.equal(files.hasPendingWindows(uri("a.ts")), false, "opened again with other text");
});

test("pressing Enter near the top of a long file rebuilds the windows there and moves the others down", () => {
  const text = Array.from({ length: 400 }, (_, i) => `const name${i} = ${i};`).join("\n");
  const files = new RecentFiles(new FakeClock());
  files.open(file("a.ts"), text);
  const before = files
    .heldWindows(uri("a.ts"))
    .map((window) => ({ window, start: window.start, tokens: window.tokens }));
  files.edit(uri("a.ts"), [changeAt(text, text.indexOf("const name5 "), 0, "\n")]);
  const after = files.heldWindows(uri("a.ts"));
  const kept = before.filter(({ window }) => after.includes(window));
  assert.equal(kept.length, before.length - 1, "only the window over line 5 is rebuilt");
  for (const { window, start, tokens } of kept) {
    assert.equal(window.start, start + 1);
    assert.equal(window.tokens, tokens);
  }
  assertWindowsMatch(files, uri("a.ts"), files.heldText(uri("a.ts")) ?? "", "after Enter");
});

test("lines inserted at the very top or bottom by a resync are covered by a window", () => {
  const files = new RecentFiles(new FakeClock());
  const text = Array.from({ length: 60 }, (_, i) => `const name${i} = ${i};`).join("\n");
  files.open(file("a.ts"), text);
  files.heldWindows(uri("a.ts"));
  const top = `const top = 1;\nconst top2 = 2;\n${text}`;
  files.setText(uri("a.ts"), top);
  assertWindowsMatch(files, uri("a.ts"), top, "after inserting at the top");
  const bottom = `${top}\nconst bottom = 3;`;
  files.setText(uri("a.ts"), bottom);
  assertWindowsMatch(files, uri("a.ts"), bottom, "after inserting at the end");
});

test("CRLF documents are held as lines, whatever line ends a change carries", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("win.ts"), "one\r\ntwo\r\nthree");
  files.edit(uri("win.ts"), [
    { range: { start: { line: 1, character: 3 }, end: { line: 2, character: 0 } }, text: "\r\ninserted\r\n" },
  ]);
  assert.equal(files.heldText(uri("win.ts")), "one\ntwo\ninserted\nthree");
});

test("a change that does not fit the held text resyncs from the document, or lets the file go", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("a.ts"), "one\ntwo");
  const missed = { range: { start: { line: 5, character: 0 }, end: { line: 5, character: 0 } }, text: "x" };
  assert.equal(
    files.edit(uri("a.ts"), [missed], () => "one\ntwo\nthree"),
    true,
  );
  assert.equal(files.heldText(uri("a.ts")), "one\ntwo\nthree");
  assert.equal(files.edit(uri("a.ts"), [missed]), false);
  assert.equal(files.holds(uri("a.ts")), false);
  assert.equal(files.edit(uri("never-held.ts"), [missed]), false);
});

test("a renamed file keeps its text under its new name, unless the new name is excluded", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("old.ts"), code("x"));
  files.rename(uri("old.ts"), file("new.ts"));
  assert.deepEqual(files.paths(), ["new.ts"]);
  assert.equal(files.heldText(uri("new.ts")), code("x"));
  files.rename(uri("new.ts"), file(".env.ts"));
  assert.deepEqual(files.paths(), []);
});

test("opening a held file again with other text updates it in place", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("a.ts"), "first\nsecond\nthird");
  files.open(file("a.ts"), "first\nchanged on disk\nthird");
  assert.equal(files.heldText(uri("a.ts")), "first\nchanged on disk\nthird");
  assert.equal(files.heldChars, "first\nchanged on disk\nthird".length + 1);
});
