// The recent-files feed is the only way text of other files reaches a request (as surrounding_context and as the
// recent edits of a next edit). These tests run the adapter itself against a stand-in for the `vscode` module and
// read what the core then puts into the completion and next-edit requests: files in a switched-off language and
// excluded files must never be in them, whether VS Code loaded them, only has them in a tab, or they are edited.
import {
  installVscodeStandIn,
  StandInTabInputText,
  StandInUri,
  VscodeStandIn,
  type StandInDocument,
} from "./testing/vscodeStandIn";
import assert from "node:assert/strict";
import { test } from "node:test";
import type * as vscode from "vscode";
import {
  DEFAULT_SETTINGS,
  NextEditSession,
  RecentFiles,
  buildRequestBody,
  buildTabContext,
  type FetchLike,
  type Settings,
} from "../core";
import { FakeClock, inputAt } from "../core/testing";
import { feedRecentFiles } from "./recentFilesFeed";

const ROOT = "/work/project";
const PRICING_TS = [
  "export const BULK_RATE = 0.85;",
  "export function applyBulkDiscount(price: number, quantity: number) {",
  "  return price * quantity * (quantity >= 10 ? BULK_RATE : 1);",
  "}",
  "",
].join("\n");
/** Each names the function the cursor is at, so ranking alone would pick it; each has a word found nowhere else. */
const MARKDOWN =
  "# Pricing\n\n```ts\nfunction applyBulkDiscount(price, quantity) {\n  return MARKDOWN_ONLY_RATE;\n}\n```\n";
const ON_DISK_MARKDOWN = "Old notes: applyBulkDiscount(price, quantity) used DISK_MARKDOWN_ONLY_RATE.\n";
const DOTENV = "# applyBulkDiscount(price, quantity) needs DOTENV_ONLY_SECRET\nBULK_TOKEN=s3cret\n";
const GENERATED =
  "export function applyBulkDiscount(price: number, quantity: number) {\n  return GENERATED_ONLY_RATE;\n}\n";
const NEVER_SENT = [
  "MARKDOWN_ONLY",
  "DISK_MARKDOWN_ONLY",
  "DOTENV_ONLY",
  "GENERATED_ONLY",
  "docs/pricing.md",
  "notes/old.md",
  ".env",
  "generated/",
];
/** `generated/**` as a person adds it (`.env` is excluded by the defaults, which core also starts from). */
const EXCLUDE_GLOBS = [...DEFAULT_SETTINGS.excludeGlobs, "generated/**"];

const quiet = { debug: () => undefined } as unknown as vscode.LogOutputChannel;

/**
 * A workspace with a TypeScript file, a Markdown file and `.env` open and edited, and a Markdown file in a tab
 * VS Code has not loaded; then an edit in `src/checkout.ts`, where the cursor is. Returns both requests' bodies.
 */
async function requestsAfterWorkingIn(settings: Settings): Promise<{ sent: string; held: string[] }> {
  const vscodeNow = new VscodeStandIn(ROOT);
  vscodeNow.languages = [
    { id: "markdown", extensions: [".md"] },
    { id: "dotenv", filenames: [".env"] },
    { id: "typescript", extensions: [".ts"] },
  ];
  installVscodeStandIn(vscodeNow);
  const clock = new FakeClock();
  const files = new RecentFiles(clock);
  const feed = feedRecentFiles(files, () => settings, quiet);
  const settle = async () => {
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
  };
  try {
    const append = (document: StandInDocument, text: string) =>
      (document as StandInDocument & { append(text: string): void }).append(text);
    const pricing = vscodeNow.document("src/pricing.ts", "typescript", PRICING_TS);
    const markdown = vscodeNow.document("docs/pricing.md", "markdown", MARKDOWN);
    const dotenv = vscodeNow.document(".env", "dotenv", DOTENV);
    const generated = vscodeNow.document("generated/pricing.ts", "typescript", GENERATED);
    vscodeNow.disk.set("notes/old.md", ON_DISK_MARKDOWN);
    vscodeNow.didChangeTabs.fire({
      opened: [{ input: new StandInTabInputText(StandInUri.file(`${ROOT}/notes/old.md`)), isActive: false }],
    });
    for (const document of [pricing, markdown, dotenv, generated]) {
      vscodeNow.show(document);
      await settle();
      await clock.advance(1_000);
      append(document, "\n// applyBulkDiscount(price, quantity) again\n");
      await settle();
    }
    append(markdown, "More MARKDOWN_ONLY_RATE notes.\n");
    append(dotenv, "DOTENV_ONLY_SECRET_2=1\n");
    const checkoutText = "import { BULK_RATE } from './pricing';\n\n";
    const checkout = vscodeNow.document("src/checkout.ts", "typescript", checkoutText);
    vscodeNow.show(checkout);
    await settle();
    await clock.advance(1_000);
    const typed = "function applyBulkDiscount(";
    append(checkout, typed);
    await settle();

    const input = inputAt(`${checkoutText}${typed}█`, {
      uri: checkout.uri.toString(),
      relativePath: "src/checkout.ts",
      title: "checkout.ts",
      cursorLine: 2,
    });
    const completion = buildRequestBody(settings, buildTabContext(input, settings, files));

    const sent: string[] = [];
    const fetch: FetchLike = (_url, init) => {
      sent.push(init.body ?? "");
      return Promise.reject(new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED") }));
    };
    const nextEdits = new NextEditSession({
      clock,
      fetch,
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
      getSettings: () => settings,
      getApiKey: () => Promise.resolve("svc_ws_key"),
      files,
    });
    await nextEdits.onPause(
      {
        uri: checkout.uri.toString(),
        path: "src/checkout.ts",
        languageId: "typescript",
        version: 2,
        lines: checkout.getText().split("\n"),
        cursor: { line: 2, character: typed.length },
      },
      new AbortController().signal,
    );
    assert.equal(sent.length, 1, "no next edit was asked for");
    const held = ["src/pricing.ts", "docs/pricing.md", "notes/old.md", ".env", "generated/pricing.ts"].filter((path) =>
      files.holds(StandInUri.file(`${ROOT}/${path}`).toString()),
    );
    return { sent: `${JSON.stringify(completion)}\n${sent.join("\n")}`, held };
  } finally {
    feed.dispose();
  }
}

test("text of a switched-off language or an excluded file is never sent as context, loaded, in a tab or edited", async () => {
  const { sent, held } = await requestsAfterWorkingIn({
    ...DEFAULT_SETTINGS,
    disabledLanguages: ["markdown"],
    excludeGlobs: EXCLUDE_GLOBS,
  });
  assert.ok(DEFAULT_SETTINGS.excludeGlobs.includes(".env*"), "the default exclusions cover .env");
  // The TypeScript file the person worked in does go out: the requests carry context at all.
  assert.match(sent, /BULK_RATE \? |BULK_RATE : 1/);
  assert.match(sent, /src\/pricing\.ts/);
  for (const text of NEVER_SENT) assert.ok(!sent.includes(text), `${text} was sent:\n${sent}`);
  assert.deepEqual(held, ["src/pricing.ts"]);
});

test("with the language on and nothing excluded, the same files go out as context (what the test above would see if the feed let them through)", async () => {
  const { sent, held } = await requestsAfterWorkingIn({
    ...DEFAULT_SETTINGS,
    disabledLanguages: [],
    excludeGlobs: ["*.pem"],
  });
  assert.deepEqual(held, ["src/pricing.ts", "docs/pricing.md", "notes/old.md", ".env", "generated/pricing.ts"]);
  // The Markdown file only in a tab is held; with no edits it stays out (windows of other language families never go).
  for (const text of ["MARKDOWN_ONLY", "DOTENV_ONLY", "GENERATED_ONLY"])
    assert.ok(sent.includes(text), `${text} was not sent:\n${sent}`);
});

test("an edit typed right after focusing a file is in the edit history, even while another tab is still being read from disk", async () => {
  const vscodeNow = new VscodeStandIn(ROOT);
  vscodeNow.languages = [
    { id: "markdown", extensions: [".md"] },
    { id: "typescript", extensions: [".ts"] },
  ];
  installVscodeStandIn(vscodeNow);
  const files = new RecentFiles(new FakeClock());
  const feed = feedRecentFiles(files, () => DEFAULT_SETTINGS, quiet);
  let readDone = () => undefined as void;
  vscodeNow.diskReads = new Promise<void>((resolve) => (readDone = resolve));
  try {
    // A tab VS Code has not loaded: the feed reads it from disk, and the read is slow.
    vscodeNow.disk.set("notes/old.md", ON_DISK_MARKDOWN);
    vscodeNow.didChangeTabs.fire({
      opened: [{ input: new StandInTabInputText(StandInUri.file(`${ROOT}/notes/old.md`)), isActive: false }],
    });
    const counts = vscodeNow.document("src/counts.ts", "typescript", "let apples = 0;\n");
    vscodeNow.show(counts);
    (counts as StandInDocument & { append(text: string): void }).append("let pears = 0;");
    readDone();
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(
      files.recentEdits().map((edit) => [edit.file_path, edit.start_line, edit.old_lines, edit.new_lines]),
      [["src/counts.ts", 1, [""], ["let pears = 0;"]]],
    );
    assert.ok(files.holds(StandInUri.file(`${ROOT}/notes/old.md`).toString()), "the slow tab is held in the end");
  } finally {
    feed.dispose();
  }
});
