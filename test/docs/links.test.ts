import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import {
  anchorsFor,
  checkLinks,
  headingText,
  markdownUnder,
  parseMarkdown,
  placeholderReason,
  slugOf,
} from "./markdownLinks";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The Markdown people read: the README, docs/, and the READMEs of the extension, the examples and the e2e tests. */
function documentedFiles(): string[] {
  const optional = ["SECURITY.md", "CHANGELOG.md", "CONTRIBUTING.md"].filter((name) => existsSync(join(ROOT, name)));
  return [
    "README.md",
    ...optional,
    ...markdownUnder(ROOT, "docs"),
    "extension/README.md",
    ...markdownUnder(ROOT, "examples").filter((file) => file.endsWith("README.md")),
    "test/e2e/README.md",
  ];
}

describe("GitHub's heading anchors", () => {
  test("code spans keep their text and lose their backticks", () => {
    assert.equal(slugOf(headingText("`tab-relay` CLI")), "tab-relay-cli");
    assert.equal(slugOf(headingText("The `tab-relay` CLI")), "the-tab-relay-cli");
    assert.equal(slugOf(headingText("`npm run bench` (relay)")), "npm-run-bench-relay");
  });

  test("parentheses, colons and other punctuation go, hyphens and underscores stay", () => {
    assert.equal(
      slugOf("Running several relays (PostgreSQL and Redis)"),
      "running-several-relays-postgresql-and-redis",
    );
    assert.equal(slugOf("Socket Mode (agents without a public URL)"), "socket-mode-agents-without-a-public-url");
    assert.equal(slugOf("Recovery: a new owner key"), "recovery-a-new-owner-key");
    assert.equal(slugOf("What's new? 2.0, really!"), "whats-new-20-really");
    assert.equal(slugOf("snake_case and kebab-case"), "snake_case-and-kebab-case");
    assert.equal(slugOf("100% of C++ & C#"), "100-of-c--c");
  });

  test("every space becomes a hyphen, with no collapsing, so a dropped dash leaves two", () => {
    assert.equal(slugOf("Webhooks — delivery"), "webhooks--delivery");
    assert.equal(slugOf("Emoji 🚀 launch"), "emoji--launch");
    assert.equal(slugOf("a  b"), "a--b");
  });

  test("letters of any script and their marks stay, lower-cased; symbols and other numbers go", () => {
    assert.equal(slugOf("Ünïcödé Ω and 日本語"), "ünïcödé-ω-and-日本語");
    assert.equal(slugOf("x² → y ©"), "x--y-");
  });

  test("links, emphasis and HTML in a heading count by their text", () => {
    assert.equal(slugOf(headingText("[Agent API](api.md#agent-api) **reference** _now_")), "agent-api-reference-now");
    assert.equal(slugOf(headingText("Tabs <kbd>Tab</kbd> and `a|b` \\| c")), "tabs-tab-and-ab--c");
    assert.equal(slugOf(headingText("snake_case_name stays")), "snake_case_name-stays");
  });

  test("repeated headings get -1, -2, and a heading that reads like a suffixed one is counted on", () => {
    assert.deepEqual(anchorsFor(["Usage", "Usage", "Usage", "Usage 1"]), ["usage", "usage-1", "usage-2", "usage-1-1"]);
    assert.deepEqual(anchorsFor(["Notes", "Notes 1", "Notes"]), ["notes", "notes-1", "notes-2"]);
  });
});

describe("reading links and headings out of Markdown", () => {
  test("headings and links inside fenced code and code spans do not count", () => {
    const file = parseMarkdown(
      [
        "# Title",
        "",
        "```sh",
        "# not a heading [nor](a-link.md)",
        "```",
        "",
        "   ~~~~",
        "   ```",
        "   ## still code",
        "   ~~~~",
        "",
        'Text with `[code](x.md)` and a [real](real.md "title") link.',
        "",
        "Setext heading",
        "--------------",
        "",
        "## Closed ##",
      ].join("\n"),
    );
    assert.deepEqual([...file.anchors], ["title", "setext-heading", "closed"]);
    assert.deepEqual(file.links, [{ target: "real.md", line: 12 }]);
  });

  test("inline, angle-bracket, reference, autolink and HTML links are all read, with their lines", () => {
    const file = parseMarkdown(
      [
        "See [a](<docs/a b.md#x>), ![img](pic.png), and <https://example.org/x>.",
        "",
        "[ref]: ../other.md#y",
        '<a href="html.md">html</a> <a id="custom-anchor"></a>',
        "Bare https://github.com/ too, and **http://127.0.0.1:8787/** in bold.",
      ].join("\n"),
    );
    assert.deepEqual(
      file.links.map((link) => `${link.line}:${link.target}`),
      ["1:docs/a b.md#x", "1:pic.png", "3:../other.md#y", "1:https://example.org/x", "4:html.md"],
    );
    assert.deepEqual(
      file.bareUrls.map((link) => link.target),
      ["https://github.com/", "http://127.0.0.1:8787/"],
    );
    assert.ok(file.anchors.has("custom-anchor"));
  });

  test("placeholders are told apart from real hosts", () => {
    for (const url of [
      "https://example.com/x",
      "https://relay.example.org",
      "https://github.com/",
      "https://github.com/your-org/tab-relay",
      "https://git.invalid/a",
      "https://github.com/OWNER",
    ]) {
      assert.ok(placeholderReason(url), url);
    }
    for (const url of [
      "https://github.com/Flet/github-slugger",
      "http://127.0.0.1:8787/",
      "https://api.mistral.ai/v1",
      "https://ai.google.dev/gemma/docs",
    ]) {
      assert.equal(placeholderReason(url), undefined, url);
    }
  });
});

describe("the link check on a folder of its own", () => {
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), "tab-relay-links-"));
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    };
    write(
      "README.md",
      "# Project\n\n[good](docs/a.md#the-tab-relay-cli) [gone](docs/missing.md) [dead](docs/a.md#nowhere) [out](../shared/spec.md)\n[self](#project) [code](src/x.ts#L3) [bad line](src/x.ts#top) [home](https://github.com/)\n",
    );
    write("docs/a.md", "# A\n\n## The `tab-relay` CLI\n\nBack to [the readme](../README.md#project).\n");
    write("src/x.ts", "export {};\n");
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  test("names each dead file, dead anchor, link out of the repository and placeholder, with its line", () => {
    const { problems } = checkLinks(root, ["README.md", "docs/a.md"]);
    assert.deepEqual(
      problems.map((p) => `${p.file}:${p.line} ${p.target}: ${p.problem.replace(/ \(it has.*$/, "")}`),
      [
        "README.md:3 docs/missing.md: no such file: docs/missing.md",
        "README.md:3 docs/a.md#nowhere: no heading with the anchor #nowhere in docs/a.md",
        "README.md:3 ../shared/spec.md: leaves the repository",
        "README.md:4 src/x.ts#top: an anchor other than a line (#L12) on a file that is not Markdown",
        "README.md:4 https://github.com/: placeholder URL: github.com without an owner and repository",
      ],
    );
  });
});

describe("the repository's documentation", () => {
  test("every Markdown file people read is checked", () => {
    const files = documentedFiles();
    for (const expected of [
      "README.md",
      "docs/api.md",
      "docs/configuration.md",
      "docs/agents.md",
      "docs/operating.md",
      "extension/README.md",
      "examples/echo-agent/README.md",
    ]) {
      assert.ok(files.includes(expected), `${expected} is not among ${files.join(", ")}`);
    }
  });

  test("has no dead relative link, no dead anchor, no link out of the repository and no placeholder URL", (t) => {
    const { problems, external } = checkLinks(ROOT, documentedFiles());
    for (const { file, line, url } of external) t.diagnostic(`external: ${file}:${line} ${url}`);
    assert.deepEqual(
      problems.map((p) => `${p.file}:${p.line} ${p.target}: ${p.problem}`),
      [],
    );
  });
});
