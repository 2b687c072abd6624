import assert from "node:assert/strict";
import { test } from "node:test";
import { parseSnippets } from "../../shared/src/protocol/snippets";
import { RecentFiles, changeAt } from "../../extension/src/core/recentFiles";
import { startTestRelay } from "../support/relayHarness";
import { startUpstreamStandIn } from "../support/upstreamStandIn";
import { ReplayClock } from "./typingClock";
import { summarizeReplay } from "./typingReport";
import { type ReplayOptions, replayTyping } from "./typingRun";
import { DEFAULT_TYPIST } from "./typingTypist";

const TEXT = [
  "export function add(left: number, right: number): number {",
  "  return left + right;",
  "}",
  "",
  "export function subtract(left: number, right: number): number {",
  "  return left - right;",
  "}",
  "",
].join("\n");
const START = TEXT.indexOf("export function subtract");

async function replayAgainst(env: Record<string, string>, overrides: Partial<ReplayOptions> = {}) {
  const clock = new ReplayClock(Date.now());
  const relay = await startTestRelay({ env, clock });
  try {
    const options: ReplayOptions = {
      relayUrl: relay.url,
      apiKey: relay.apiKey,
      workspaceSlug: relay.workspace.slug,
      clock,
      text: TEXT,
      start: START,
      end: TEXT.length,
      path: "src/math.ts",
      languageId: "typescript",
      debounceMs: 120,
      typist: { ...DEFAULT_TYPIST, typoRate: 0.05 },
      seed: 5,
      ...overrides,
    };
    return await replayTyping(options);
  } finally {
    await relay.close();
  }
}

test("the typist types the file to the end, and every keystroke's provide call is accounted for", async () => {
  const run = await replayAgainst({});
  assert.equal(run.finalText, TEXT);
  const { stats } = run;
  assert.equal(stats.provideCalls, run.actions.length);
  assert.equal(stats.provideCalls, stats.skipped + stats.cacheHits + stats.debounceCancelled + stats.requestsStarted);
  assert.equal(run.requests.length, stats.requestsStarted);
  assert.ok(run.requests.every((r) => r.outcome !== undefined && r.endedAt !== undefined && r.endedAt >= r.startedAt));
  assert.ok(
    run.actions.some((a) => a.shown !== undefined),
    "the local engine predicts from the first function",
  );

  const figures = summarizeReplay(run, { file: "src/math.ts", start: START, seed: 5, debounceMs: 120 });
  assert.equal(figures.chars.typed + figures.chars.accepted, TEXT.length - START);
  assert.equal(figures.keystrokes.typos, figures.keystrokes.backspaces);
  assert.ok(figures.requests.maxPerPause <= 1);
  // Minutes of typing, replayed in the time the requests took.
  assert.ok(run.skippedMs > run.virtualMs / 2, `skipped ${run.skippedMs} of ${run.virtualMs} ms`);
});

test("a keystroke that arrives while a slow model is still answering aborts the request, up to the model", async () => {
  const upstream = await startUpstreamStandIn({
    behaviour: { kind: "reply", text: "/* later */", headersDelayMs: 300 },
  });
  try {
    const run = await replayAgainst(
      { TAB_RELAY_UPSTREAM_URL: upstream.url, TAB_RELAY_UPSTREAM_MODEL: "stand-in-model" },
      { end: TEXT.indexOf("\n", START) + 1 },
    );
    const superseded = run.requests.filter((r) => r.supersededInFlight);
    assert.ok(superseded.length > 0, "with a 300 ms model, some requests are still in flight at the next keystroke");
    assert.ok(superseded.every((r) => r.outcome === "aborted"));
    assert.ok(
      run.requests
        .filter((r) => r.outcome === "ok")
        .every((r) => r.endedAt !== undefined && r.endedAt - r.startedAt >= 300),
    );
    // The relay learns of each abort over HTTP and drops its own request to the model: the model answers in full
    // only the requests the typist waited for.
    const completed = run.requests.filter((r) => r.outcome === "ok").length;
    await upstream.until(
      () => upstream.requests.length - upstream.clientDisconnects() === completed,
      "the aborted requests' clients to go away",
    );
  } finally {
    await upstream.close();
  }
});

test("a RecentFiles fed every change holds the document as typed, and every request carries the other open file", async () => {
  const files = new RecentFiles({ now: () => 0 });
  const uri = "file:///work/project/src/math.ts";
  files.open(
    { uri: "file:///work/project/src/multiply.ts", path: "src/multiply.ts", scheme: "file" },
    "export function multiply(left: number, right: number): number {\n  return left * right;\n}\n",
  );
  files.open({ uri, path: "src/math.ts", scheme: "file" }, TEXT.slice(0, START));
  const bodies: string[] = [];
  let changes = 0;
  const run = await replayAgainst(
    {},
    {
      uri,
      relatedContext: files,
      onChange: (change) => {
        changes++;
        files.edit(uri, [changeAt(change.text, change.offset, change.deleted, change.inserted)]);
      },
      onRequest: (body) => bodies.push(body),
      settings: { surroundingContextChars: 1_000 },
    },
  );
  assert.equal(run.finalText, TEXT);
  assert.equal(changes, run.actions.length);
  assert.equal(files.heldText(uri), TEXT);
  assert.equal(bodies.length, run.requests.length);
  assert.ok(bodies.length > 0);
  for (const body of bodies) {
    const context =
      (JSON.parse(body) as { tab_context: { surrounding_context?: string } }).tab_context.surrounding_context ?? "";
    assert.ok(context.length <= 1_000);
    assert.ok(
      parseSnippets(context).some((snippet) => snippet.path === "src/multiply.ts"),
      context,
    );
  }
});
