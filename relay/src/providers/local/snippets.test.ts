import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatSnippets } from "@tab-relay/shared";
import { SnippetMap } from "./snippets";

describe("SnippetMap", () => {
  const surrounding = `free text\n${formatSnippets([
    { path: "src/a.ts", text: "alpha();\n--- file: fake.ts ---\nmore();" },
    { path: "src/b.ts", text: "beta();" },
  ])}`;
  const map = new SnippetMap(surrounding);

  it("names the file of the snippet holding a position, and none before the first header", () => {
    assert.equal(map.pathAt(surrounding.indexOf("free")), undefined);
    assert.equal(map.pathAt(surrounding.indexOf("alpha")), "src/a.ts");
    // A line of code that looks like a header was escaped by formatSnippets: it is not one.
    assert.equal(map.pathAt(surrounding.indexOf("more")), "src/a.ts");
    assert.equal(map.pathAt(surrounding.indexOf("beta")), "src/b.ts");
  });

  it("ends a snippet before the next header's line, or at the limit, whichever comes first", () => {
    const from = surrounding.indexOf("alpha");
    assert.equal(
      surrounding.slice(from, map.end(from, surrounding.length)),
      "alpha();\n --- file: fake.ts ---\nmore();",
    );
    assert.equal(map.end(from, from + 5), from + 5);
    const last = surrounding.indexOf("beta");
    assert.equal(surrounding.slice(last, map.end(last, 10_000)), "beta();\n");
  });

  it("reads headers with Windows line ends", () => {
    const crlf = "--- file: src/w.ts ---\r\nwin();\r\n--- file: src/x.ts ---\r\nx();";
    const windows = new SnippetMap(crlf);
    assert.equal(windows.pathAt(crlf.indexOf("win")), "src/w.ts");
    assert.equal(crlf.slice(crlf.indexOf("win"), windows.end(crlf.indexOf("win"), crlf.length)), "win();");
    assert.equal(windows.pathAt(crlf.indexOf("x()")), "src/x.ts");
  });
});
