import assert from "node:assert/strict";
import { test } from "node:test";
import { contextLanguageAllowed, prefilter } from "./prefilter";
import { DEFAULT_SETTINGS } from "./settings";
import { inputAt } from "./testing";

const settings = { ...DEFAULT_SETTINGS, workspaceSlug: "acme" };

test("lets an ordinary cursor position through", () => {
  assert.equal(prefilter(inputAt("const x = █"), settings, undefined), undefined);
  assert.equal(prefilter(inputAt("call(█)"), settings, undefined), undefined);
});

test("skips when the user disabled or snoozed completions", () => {
  assert.equal(prefilter(inputAt("x█"), { ...settings, enabled: false }, undefined), "disabled");
  assert.equal(prefilter(inputAt("x█"), settings, "disabled"), "disabled");
  assert.equal(prefilter(inputAt("x█"), settings, "snoozed"), "snoozed");
});

test("skips languages that are not enabled", () => {
  assert.equal(
    prefilter(inputAt("x█"), { ...settings, disabledLanguages: ["typescript"] }, undefined),
    "language disabled",
  );
});

test("skips the middle of a word, where ghost text cannot fit", () => {
  assert.equal(prefilter(inputAt("cons█t x"), settings, undefined), "inside a word");
  assert.equal(prefilter(inputAt("const █x"), settings, undefined), "inside a word");
});

test("takes $ and combining marks for word characters, as the relay does", () => {
  assert.equal(prefilter(inputAt("const el = █$scope"), settings, undefined), "inside a word");
  assert.equal(prefilter(inputAt("const cafe█\u0301 = 1"), settings, undefined), "inside a word");
  assert.equal(prefilter(inputAt("const el = █ $scope"), settings, undefined), undefined);
});

test("skips an empty document", () => {
  assert.equal(prefilter(inputAt("  █\n"), settings, undefined), "empty document");
});

test("skips a document that tabRelay.excludeGlobs covers, by workspace path or, outside the workspace, by name", () => {
  assert.equal(
    prefilter(inputAt("API_KEY=█", { relativePath: "config/.env.local", title: ".env.local" }), settings, undefined),
    "excluded file",
  );
  assert.equal(
    prefilter(
      inputAt("-----BEGIN █", { relativePath: undefined, title: "id_rsa", uri: "file:///home/me/.ssh/id_rsa" }),
      settings,
      undefined,
    ),
    "excluded file",
  );
  assert.equal(
    prefilter(
      inputAt("x = █", { relativePath: "secrets/a.ts" }),
      { ...settings, excludeGlobs: ["secrets"] },
      undefined,
    ),
    "excluded file",
  );
  assert.equal(prefilter(inputAt("x = █", { relativePath: "src/env.ts" }), settings, undefined), undefined);
  assert.equal(
    prefilter(
      inputAt("API_KEY=█", { relativePath: "config/.env.local" }),
      { ...settings, excludeGlobs: [] },
      undefined,
    ),
    undefined,
  );
});

test("text of a switched-off language never goes out as context, by VS Code's language or by the file's name", () => {
  const settings = { ...DEFAULT_SETTINGS, disabledLanguages: ["markdown"] };
  const languages = [
    { id: "markdown", extensions: [".md", ".markdown"] },
    { id: "typescript", extensions: [".ts"] },
    { id: "dockerfile", filenames: ["Dockerfile"] },
  ];
  assert.equal(contextLanguageAllowed("docs/notes.txt", "markdown", settings, languages), false);
  assert.equal(contextLanguageAllowed("docs/README.MD", undefined, settings, languages), false);
  assert.equal(contextLanguageAllowed("src/app.ts", undefined, settings, languages), true);
  assert.equal(contextLanguageAllowed("src/app.ts", "typescript", settings, languages), true);
  const onlyTs = { ...DEFAULT_SETTINGS, enabledLanguages: ["typescript"] };
  assert.equal(contextLanguageAllowed("Dockerfile", undefined, onlyTs, languages), false);
  assert.equal(contextLanguageAllowed("unknown.xyz", undefined, onlyTs, languages), true);
});
