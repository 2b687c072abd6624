import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { NextEditRequest, systemClock, type NextEditResponse } from "@tab-relay/shared";
import { NEXT_EDITS_PATH, buildNextEditRequest, editsProblem, requestNextEdit } from "./nextEditRequest";
import { NextEditSession } from "./nextEditSession";
import { isStale, nextEditHint, pickNextEdit, viewOfNextEdit } from "./nextEditView";
import { RecentFiles, changeAt } from "./recentFiles";
import { DEFAULT_SETTINGS, type Settings } from "./settings";

const source = [
  "function area(width, height) {",
  "  const w = width;",
  "  return w * height;",
  "}",
  "console.log(area(width, height));",
].join("\n");

/** A relay stand-in over real HTTP: checks the body against the shared schema as the relay does, then answers. */
async function relay(answer: (body: NextEditRequest, req: IncomingMessage, res: ServerResponse) => void) {
  const bodies: NextEditRequest[] = [];
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => (raw += chunk.toString()));
    req.on("end", () => {
      const parsed = NextEditRequest.safeParse(JSON.parse(raw));
      if (req.url !== NEXT_EDITS_PATH || req.headers.authorization !== "Bearer tr_key" || !parsed.success) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { code: "VALIDATION_ERROR", message: parsed.error?.message ?? req.url } }));
        return;
      }
      bodies.push(parsed.data);
      answer(parsed.data, req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, bodies, close: () => new Promise((resolve) => server.close(resolve)) };
}

const answerWith =
  (edits: NextEditResponse["edits"], extra: Partial<NextEditResponse> = {}) =>
  (body: NextEditRequest, _req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: "ne_1",
        object: "tab.next_edit",
        created: 1,
        model: "local",
        document_version: body.document_version,
        edits,
        ...extra,
      }),
    );
  };

const doc = (lines: string[], line: number, character: number) => ({
  path: "src/area.ts",
  languageId: "typescript",
  version: 7,
  lines,
  cursor: { line, character },
});

test("the request carries an excerpt centred on the cursor, an editable region a few lines around it, and the recent edits; the relay's own schema accepts it", () => {
  const lines = Array.from({ length: 400 }, (_, i) => `const v${i} = ${i};`);
  const body = buildNextEditRequest(doc(lines, 200, 4), { workspaceSlug: "acme", model: "m", recentEdits: [] });
  assert.ok(body);
  assert.equal(NextEditRequest.safeParse(body).success, true);
  assert.deepEqual(body.editable_region, { start_line: 197, end_line: 209 });
  assert.equal(body.excerpt.start_line, 80);
  assert.equal(body.excerpt.text.split("\n").length, 241);
  assert.deepEqual(body.cursor, { line: 200, character: 4 });
  // At the top of a file the region starts at line 0; huge lines are cut off the excerpt, never the cursor's line.
  const top = buildNextEditRequest(doc(["a", "x".repeat(40_000), "b"], 0, 1), {
    workspaceSlug: "acme",
    model: "m",
    recentEdits: [],
  });
  assert.deepEqual(top?.excerpt, { start_line: 0, text: "a" });
  assert.deepEqual(top?.editable_region, { start_line: 0, end_line: 1 });
  assert.equal(
    buildNextEditRequest(doc(["x".repeat(3_000)], 0, 1), { workspaceSlug: "a", model: "m", recentEdits: [] }),
    undefined,
  );
});

test("an answer whose edits leave the excerpt, overlap, or name another document version is refused, never shown", async () => {
  const lines = source.split("\n");
  const body = buildNextEditRequest(doc(lines, 1, 8), { workspaceSlug: "acme", model: "m", recentEdits: [] });
  assert.ok(body);
  const range = (l: number, a: number, b: number) => ({
    start: { line: l, character: a },
    end: { line: l, character: b },
  });
  assert.equal(editsProblem([{ range: range(9, 0, 1), text: "x" }], body), "edits[0].range is outside the excerpt");
  assert.equal(editsProblem([{ range: range(1, 0, 400), text: "x" }], body), "edits[0].range is outside the excerpt");
  assert.equal(
    editsProblem(
      [
        { range: range(1, 0, 5), text: "x" },
        { range: range(1, 3, 6), text: "y" },
      ],
      body,
    ),
    "edits[1] overlaps the edit before it",
  );
  const server = await relay(answerWith([{ range: range(2, 9, 10), text: "w1" }], { document_version: 3 }));
  try {
    const outcome = await requestNextEdit(
      { fetch: (url, init) => fetch(url, init), clock: systemClock },
      { relayUrl: server.url, apiKey: "tr_key", body, timeoutMs: 5_000, signal: new AbortController().signal },
    );
    assert.equal(outcome.kind, "failed");
    assert.match(outcome.kind === "failed" ? outcome.message : "", /another document version/);
  } finally {
    await server.close();
  }
});

/** A session over `files` asking the relay at `relayUrl`, with the settings `settings()` gives and a stored key. */
function sessionOver(
  files: RecentFiles,
  settings: () => Settings,
  getApiKey: () => Promise<string | undefined> = () => Promise.resolve("tr_key"),
): NextEditSession {
  return new NextEditSession({
    clock: systemClock,
    fetch: (url, init) => fetch(url, init),
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
    getSettings: settings,
    getApiKey,
    files,
  });
}

/** RecentFiles holding src/area.ts (the `source` above), under the workspace folder /work. */
function areaFiles(): { files: RecentFiles; uri: string } {
  const files = new RecentFiles(systemClock);
  const uri = "file:///work/src/area.ts";
  files.open({ uri, path: "src/area.ts", scheme: "file", folder: "file:///work" }, source);
  return { files, uri };
}

test("after a pause that follows a rename, the session asks once with the edit history and returns the relay's edit; a second pause without an edit asks nothing", async () => {
  const range = { start: { line: 2, character: 9 }, end: { line: 2, character: 10 } };
  const server = await relay(answerWith([{ range, text: "w1" }]));
  const { files, uri } = areaFiles();
  const settings: Settings = { ...DEFAULT_SETTINGS, relayUrl: server.url, workspaceSlug: "acme" };
  const session = sessionOver(files, () => settings);
  try {
    const at = source.indexOf("w = width");
    files.edit(uri, [changeAt(source, at, 1, "w1")]);
    const text = source.slice(0, at) + "w1" + source.slice(at + 1);
    const input = { uri, ...doc(text.split("\n"), 1, 10) };
    // The pause's end, as the completion session tells it: the proposal is timed from there, not from its own start.
    const debouncedAt = Date.now() - 3;
    const proposal = await session.onPause(input, new AbortController().signal, debouncedAt);
    assert.deepEqual(proposal?.edits, [{ range, text: "w1" }]);
    assert.equal(proposal?.version, 7);
    assert.equal(proposal?.pausedAt, debouncedAt);
    assert.equal(server.bodies.length, 1);
    assert.deepEqual(
      server.bodies[0]?.recent_edits.map((e) => [e.file_path, e.old_lines, e.new_lines]),
      [["src/area.ts", ["  const w = width;"], ["  const w1 = width;"]]],
    );
    assert.equal(await session.onPause(input, new AbortController().signal), undefined);
    assert.equal(server.bodies.length, 1, "one request per pause");
  } finally {
    await server.close();
  }
});

test("a pause cancelled before its answer came leaves the edit unasked: the next pause for the same text asks, once", async () => {
  const range = { start: { line: 2, character: 9 }, end: { line: 2, character: 10 } };
  const server = await relay(answerWith([{ range, text: "w1" }]));
  const { files, uri } = areaFiles();
  const settings: Settings = { ...DEFAULT_SETTINGS, relayUrl: server.url, workspaceSlug: "acme" };
  let keyAsked: () => void = () => undefined;
  const keyWanted = new Promise<void>((resolve) => (keyAsked = resolve));
  let slowKey = true;
  // The first pause waits on the key store, and VS Code's next call for the same text ends that pause meanwhile.
  const session = sessionOver(
    files,
    () => settings,
    () => {
      if (!slowKey) return Promise.resolve("tr_key");
      keyAsked();
      return new Promise((resolve) => setTimeout(() => resolve("tr_key"), 50));
    },
  );
  try {
    const at = source.indexOf("w = width");
    files.edit(uri, [changeAt(source, at, 1, "w1")]);
    const text = source.slice(0, at) + "w1" + source.slice(at + 1);
    const input = { uri, ...doc(text.split("\n"), 1, 10) };
    const first = new AbortController();
    const cancelled = session.onPause(input, first.signal);
    await keyWanted;
    first.abort();
    assert.equal(await cancelled, undefined);
    assert.equal(server.bodies.length, 0, "the cancelled pause sent nothing");
    slowKey = false;
    const proposal = await session.onPause(input, new AbortController().signal);
    assert.deepEqual(proposal?.edits, [{ range, text: "w1" }]);
    assert.equal(await session.onPause(input, new AbortController().signal), undefined);
    assert.equal(server.bodies.length, 1, "one request for the edit, from the pause that was not cancelled");
  } finally {
    await server.close();
  }
});

test("no next edit is asked for a file that is excluded or not held, nor when tabRelay.nextEdits.enabled is off, nor once the pause is cancelled", async () => {
  const server = await relay(answerWith([]));
  const files = new RecentFiles(systemClock);
  files.setExcludes({ excludeGlobs: ["secret*"] });
  const folder = "file:///work";
  let settings: Settings = { ...DEFAULT_SETTINGS, relayUrl: server.url, workspaceSlug: "acme" };
  const session = sessionOver(files, () => settings);
  try {
    const secret = `${folder}/src/secrets.ts`;
    files.open({ uri: secret, path: "src/secrets.ts", scheme: "file", folder }, source);
    files.edit(secret, [changeAt(source, 0, 0, "x")]);
    const lines = ("x" + source).split("\n");
    assert.equal(await session.onPause({ uri: secret, ...doc(lines, 0, 1) }, new AbortController().signal), undefined);

    const open = `${folder}/src/area.ts`;
    files.open({ uri: open, path: "src/area.ts", scheme: "file", folder }, source);
    files.edit(open, [changeAt(source, 0, 0, "x")]);
    settings = { ...settings, "nextEdits.enabled": false };
    assert.equal(await session.onPause({ uri: open, ...doc(lines, 0, 1) }, new AbortController().signal), undefined);
    settings = { ...settings, "nextEdits.enabled": true };
    const cancelled = new AbortController();
    cancelled.abort();
    assert.equal(await session.onPause({ uri: open, ...doc(lines, 0, 1) }, cancelled.signal), undefined);
    assert.equal(server.bodies.length, 0);
  } finally {
    await server.close();
  }
});

test("an insertion at or after the cursor on its line is ghost text; any other edit is a decoration with the line as it would read", () => {
  const lines = ["foo(a);", "bar(a);"];
  const lineAt = (line: number) => lines[line] ?? "";
  const at = (line: number, character: number) => ({ line, character });
  assert.deepEqual(viewOfNextEdit({ range: { start: at(0, 5), end: at(0, 5) }, text: ", b" }, at(0, 5), lineAt), {
    kind: "ghost",
    at: at(0, 5),
    text: ", b",
  });
  assert.deepEqual(viewOfNextEdit({ range: { start: at(1, 5), end: at(1, 5) }, text: ", b" }, at(0, 5), lineAt), {
    kind: "decoration",
    removed: { start: at(1, 5), end: at(1, 5) },
    line: 1,
    preview: "bar(a, b);",
  });
  // Before the cursor on its own line: not ghost text, which VS Code only draws after the cursor.
  assert.equal(
    viewOfNextEdit({ range: { start: at(0, 0), end: at(0, 3) }, text: "baz" }, at(0, 5), lineAt).kind,
    "decoration",
  );
  const edits = [
    { range: { start: at(0, 0), end: at(0, 3) }, text: "x" },
    { range: { start: at(1, 0), end: at(1, 3) }, text: "y" },
  ];
  assert.equal(pickNextEdit(edits, at(0, 5)), edits[1]);
  assert.equal(pickNextEdit(edits, at(1, 5)), edits[1]);
  assert.equal(nextEditHint(edits[1] as (typeof edits)[number], at(0, 5)), "Tab to jump");
  assert.equal(nextEditHint(edits[1] as (typeof edits)[number], at(1, 0)), "Tab to apply");
  assert.equal(isStale(3, 3), false);
  assert.equal(isStale(3, 4), true);
});
