// The extension core's usage reports against the real relay, in process, over real HTTP: suggestions from the
// relay's local engine, their fates decided by the core's tracker, sent by its reporter, and read back as usage.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Api } from "@tab-relay/shared";
import { inputAt } from "../../extension/src/core/testing/fixtures";
import { realExtensionCore } from "../support/extensionCore";
import { startTestRelay, type TestRelay } from "../support/relayHarness";

let relay: TestRelay;
before(async () => {
  relay = await startTestRelay();
});
after(() => relay.close());

test("the relay counts the batch the core's reporter sends, tied to its completions by id", async () => {
  const { settings, session, tracker, reporter } = realExtensionCore({
    relayUrl: relay.url,
    workspaceSlug: relay.workspace.slug,
    apiKey: relay.apiKey,
  });

  const input = inputAt('function greet(name) {\n  return "Hello, " + name;\n}\n\nfunction greet(name) {\n  return █');
  const accepted = await session.provide(input);
  assert.ok(accepted);
  const acceptedId = tracker.shown(accepted);
  assert.ok(acceptedId !== undefined, "the suggestion carries the id of the relay's answer");
  tracker.edited(input.uri, [{ rangeOffset: input.offset, rangeLength: 0, text: accepted.insertText }]);
  tracker.accepted(acceptedId);

  const other = inputAt("- [ ] buy eggs\n- [ ] buy milk\n- [ ] buy eggs\n- [ ] █");
  const dismissed = await session.provide({ ...other, uri: "file:///work/project/todo.md", languageId: "markdown" });
  assert.ok(dismissed);
  assert.notEqual(tracker.shown(dismissed), acceptedId);
  tracker.dismissed();

  await reporter.flush();
  assert.deepEqual(reporter.stats, { sent: 2, dropped: 0, queued: 0 });

  const response = await relay.request("/api/v1/tab/usage?group_by=language");
  assert.equal(response.status, 200);
  const report = ((await response.json()) as { data: Api.TabUsageReport }).data;
  assert.equal(report.totals.suggestions_shown, 2);
  assert.equal(report.totals.acceptances, 1);
  assert.equal(report.totals.dismissals, 1);
  assert.equal(report.totals.chars_accepted, accepted.insertText.length);
  const shownByLanguage = report.rows.filter((row) => row.suggestions_shown > 0);
  assert.deepEqual(shownByLanguage.map((row) => [row.key, row.suggestions_shown]).sort(), [
    ["markdown", 1],
    ["typescript", 1],
  ]);
  const byModel = (
    (await (await relay.request("/api/v1/tab/usage?group_by=model")).json()) as {
      data: Api.TabUsageReport;
    }
  ).data;
  assert.ok(
    byModel.rows.some((row) => row.key === settings.model && row.suggestions_shown === 2),
    `the events took their completions' model: ${JSON.stringify(byModel.rows.map((row) => [row.key, row.suggestions_shown]))}`,
  );
});
