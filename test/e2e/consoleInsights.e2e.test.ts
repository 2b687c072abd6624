// The console's Insights view end to end: the real extension core (completion session, usage tracker and reporter)
// asks a real relay for suggestions and reports what became of them (accepted, typed over, dismissed); headless
// Chromium then opens Insights on the console that relay serves, and the tables, the charts' data and the CSV export
// must hold what was sent. Also: the ranges, a workspace without data, a member who sees only themselves, and no
// script error or CSP violation. Screenshots and logs go to test-output/console-insights/.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import type { Api } from "@tab-relay/shared";
import { inputAt } from "../../extension/src/core/testing/fixtures";
import { createJsonLogger } from "../../relay/src/logger";
import { realExtensionCore, type ReportedUsageEvent } from "../support/extensionCore";
import { startTestRelay, type TestRelay } from "../support/relayHarness";
import { createUser } from "../support/workspace";
import { REPO_ROOT } from "./codeServer";
import {
  byTestId as t,
  chromiumFor,
  ensureConsoleBuilt,
  keepFailedPage,
  LAPTOP,
  PHONE,
  launchChromium,
  openPersonPage,
  pngSize,
  signIn,
  type PersonPage,
} from "./console/harness";

const OUTPUT = join(REPO_ROOT, "test-output/console-insights");
const { prerequisites, skip } = chromiumFor("console-insights-e2e");

type TabUsageEvent = ReportedUsageEvent;

/** What the core reported, as the relay should count it. */
interface Sent {
  shown: number;
  accepted: number;
  typedOver: number;
  dismissed: number;
  charsAccepted: number;
}

/** The extension core of one person, against the relay: it provides suggestions and reports their fates. */
function extensionCore(relay: TestRelay, key: string) {
  const events: TabUsageEvent[] = [];
  const { session, tracker, reporter } = realExtensionCore({
    relayUrl: relay.url,
    workspaceSlug: relay.workspace.slug,
    apiKey: key,
    onEvent: (event) => events.push(event),
  });

  /** Shows the suggestion for a repeated pattern (the relay's local engine completes it), then `fate` decides. */
  async function suggest(name: string, languageId: string, fate: "accept" | "type-over" | "dismiss"): Promise<void> {
    const input = inputAt(`function ${name}(a) {\n  return a + 1;\n}\n\nfunction ${name}(a) {\n  return █`, {
      uri: `file:///work/project/${name}.${languageId}`,
      languageId,
    });
    const suggestion = await session.provide(input);
    assert.ok(suggestion, `no suggestion for ${name} (${languageId})`);
    const id = tracker.shown(suggestion);
    assert.ok(id !== undefined, `the suggestion for ${name} has no completion id`);
    if (fate === "accept") {
      tracker.edited(input.uri, [{ rangeOffset: input.offset, rangeLength: 0, text: suggestion.insertText }]);
      tracker.accepted(id);
    } else if (fate === "type-over") {
      // A character the suggestion does not start with: the person typed something else.
      const other = suggestion.insertText.startsWith("#") ? "%" : "#";
      tracker.edited(input.uri, [{ rangeOffset: input.offset, rangeLength: 0, text: other }]);
      tracker.flush();
    } else {
      tracker.dismissed();
    }
  }

  async function report(): Promise<Sent> {
    await reporter.flush();
    assert.equal(reporter.stats.dropped, 0);
    assert.equal(reporter.stats.queued, 0);
    const of = (outcome: TabUsageEvent["outcome"]) => events.filter((e) => e.outcome === outcome).length;
    return {
      shown: events.length,
      accepted: of("accepted") + of("accepted_partial"),
      typedOver: of("typed_over"),
      dismissed: of("dismissed"),
      charsAccepted: events.reduce((sum, e) => sum + e.accepted_chars, 0),
    };
  }

  return { suggest, report, events };
}

async function usage(relay: TestRelay, groupBy: string, key?: string): Promise<Api.TabUsageReport> {
  const response = await relay.request(`/api/v1/tab/usage?group_by=${groupBy}`, key ? { key } : {});
  assert.equal(response.status, 200);
  return ((await response.json()) as { data: Api.TabUsageReport }).data;
}

function today(): string {
  return new Date().toISOString().slice(0, 10);
}

describe(
  "the console's Insights view in a browser, on usage the extension core reported",
  { skip, timeout: 180_000 },
  () => {
    let relay: TestRelay;
    let empty: TestRelay;
    let browser: Browser;
    let owner: PersonPage;
    const others: PersonPage[] = [];
    let mia: { id: string; key: string };
    let oliveSent: Sent;
    let miaSent: Sent;
    const relayLog: string[] = [];

    before(async () => {
      if (!prerequisites.ready) throw new Error(`cannot run the console browser test: ${prerequisites.reason}`);
      rmSync(OUTPUT, { recursive: true, force: true });
      mkdirSync(OUTPUT, { recursive: true });
      ensureConsoleBuilt();
      const logger = createJsonLogger({ level: "info", write: (line) => relayLog.push(line), now: () => Date.now() });
      relay = await startTestRelay({ logger });
      empty = await startTestRelay({ logger });
      mia = await createUser(relay, "Mia Member", "member");

      const olive = extensionCore(relay, relay.apiKey);
      await olive.suggest("greet", "typescript", "accept");
      await olive.suggest("count", "typescript", "type-over");
      await olive.suggest("total", "python", "accept");
      await olive.suggest("notes", "markdown", "dismiss");
      oliveSent = await olive.report();
      const member = extensionCore(relay, mia.key);
      await member.suggest("parse", "typescript", "accept");
      miaSent = await member.report();
      assert.deepEqual(
        [oliveSent.shown, oliveSent.accepted, oliveSent.typedOver, oliveSent.dismissed],
        [4, 2, 1, 1],
        `the core reported other fates than the test made: ${JSON.stringify(olive.events)}`,
      );
      assert.deepEqual([miaSent.shown, miaSent.accepted], [1, 1]);
      // Next edits the owner's extension reported (two applied, one dismissed), as its next-edit tracker sends them.
      const nextEdit = (id: string, outcome: string, chars: number) => ({
        id,
        kind: "next_edit",
        outcome,
        shown_chars: chars,
        accepted_chars: outcome === "accepted" ? chars : 0,
        shown_lines: 1,
        accepted_lines: outcome === "accepted" ? 1 : 0,
        time_to_ghost_ms: 30,
        language: "typescript",
      });
      const reported = await relay.request("/api/v1/tab/events", {
        method: "POST",
        json: {
          events: [nextEdit("ne-1", "accepted", 7), nextEdit("ne-2", "accepted", 5), nextEdit("ne-3", "dismissed", 9)],
        },
      });
      assert.equal(reported.status, 202);

      browser = await launchChromium();
      owner = await openPersonPage(browser, "owner", LAPTOP);
    });

    after(async () => {
      const pages = [owner, ...others].filter((p): p is PersonPage => p !== undefined);
      if (pages.length)
        writeFileSync(join(OUTPUT, "browser-console.log"), `${pages.flatMap((p) => p.log).join("\n")}\n`);
      writeFileSync(join(OUTPUT, "relay.log"), relayLog.join(""));
      await browser?.close();
      await relay?.close();
      await empty?.close();
    });

    const step = (name: string, person: PersonPage | undefined, body: () => Promise<void>) =>
      keepFailedPage(OUTPUT, name, person, body);

    /** Records CSP violations in the page, which the browser reports as events and never as script errors. */
    async function watchCsp(person: PersonPage): Promise<void> {
      // A string, as the test's types have no DOM: it runs in every page of the context before the console's script.
      await person.page.context().addInitScript({
        content: `window.cspViolations = [];
          document.addEventListener("securitypolicyviolation", (event) =>
            window.cspViolations.push(event.violatedDirective + " " + event.blockedURI));`,
      });
    }

    async function cspViolations(page: Page): Promise<string[]> {
      return page.evaluate<string[]>('window.cspViolations ?? ["not watched"]');
    }

    async function openInsights(page: Page, base: string, state: "ready" | "empty"): Promise<void> {
      await page.locator(t("nav-insights")).click();
      await page.waitForURL(`${base}/insights`);
      await page.locator(`${t("insights")}[data-state="${state}"]`).waitFor();
    }

    async function cells(page: Page, table: string, key: string): Promise<Record<string, string>> {
      return page
        .locator(`${t(table)} tr[data-key="${key}"] [data-cell]`)
        .evaluateAll((els) =>
          Object.fromEntries(els.map((el) => [el.getAttribute("data-cell"), (el.textContent ?? "").trim()])),
        );
    }

    async function series(page: Page, chart: string): Promise<Record<string, (number | string | null)[]>> {
      const raw = await page.locator(t(chart)).getAttribute("data-series");
      assert.ok(raw, `${chart} has no data-series`);
      return JSON.parse(raw) as Record<string, (number | string | null)[]>;
    }

    test("an owner's Insights show what the extension reported: tables per language and person, and the charts' days", () =>
      step("owner", owner, async () => {
        const { page } = owner;
        await watchCsp(owner);
        await signIn(page, relay.url, relay.apiKey);
        await openInsights(page, relay.url, "ready");
        assert.equal(await page.locator(`${t("insights-range-30")}[aria-pressed="true"]`).count(), 1);
        assert.equal(await page.locator(t("insights-empty")).count(), 0);

        const shown = oliveSent.shown + miaSent.shown;
        const accepted = oliveSent.accepted + miaSent.accepted;
        assert.match(
          await page.locator(t("insights-totals")).innerText(),
          new RegExp(`^Shown: ${shown} · accepted: ${accepted} \\(${(accepted / shown) * 100}%\\)`),
        );

        const typescript = await cells(page, "insights-languages", "typescript");
        assert.deepEqual(
          [typescript.shown, typescript.accepted, typescript["typed-over"], typescript.dismissed],
          ["3", "2", "1", "0"],
        );
        assert.equal(typescript.rate, "66.7%");
        const python = await cells(page, "insights-languages", "python");
        assert.deepEqual([python.shown, python.accepted, python.rate], ["1", "1", "100%"]);
        const markdown = await cells(page, "insights-languages", "markdown");
        assert.deepEqual([markdown.shown, markdown.accepted, markdown.dismissed, markdown.rate], ["1", "0", "1", "0%"]);

        const byPerson = await usage(relay, "user");
        const olive = byPerson.rows.find((row) => row.name === "Olive Owner");
        assert.ok(olive, "the API has no row for the owner");
        const oliveCells = await cells(page, "insights-people", olive.key);
        assert.deepEqual(
          [oliveCells.key, oliveCells.shown, oliveCells.accepted, oliveCells["chars-accepted"]],
          ["Olive Owner", "4", "2", String(oliveSent.charsAccepted)],
        );
        const miaCells = await cells(page, "insights-people", mia.id);
        assert.deepEqual(
          [miaCells.key, miaCells.shown, miaCells.accepted, miaCells["chars-accepted"]],
          ["Mia Member", "1", "1", String(miaSent.charsAccepted)],
        );

        const counts = await series(page, "chart-suggestions");
        assert.equal(counts.days?.length, 30);
        assert.equal(counts.days?.at(-1), today());
        assert.equal(counts.shown?.at(-1), shown);
        assert.equal(counts.accepted?.at(-1), accepted);
        assert.equal(
          counts.shown?.reduce<number>((sum, n) => sum + Number(n), 0),
          shown,
          "a day before today has suggestions",
        );
        const rate = await series(page, "chart-rate");
        assert.equal(rate.rate?.at(-1), (accepted / shown) * 100);
        assert.equal(rate.rate?.at(0), null, "a day with nothing shown has a rate");
        const latency = await series(page, "chart-latency");
        const day = (await usage(relay, "day")).rows.find((row) => row.key === today());
        assert.ok(day?.time_to_ghost_ms.p50, "the relay has no time to ghost text for today");
        assert.deepEqual(
          [latency.p50?.at(-1), latency.p90?.at(-1)],
          [day.time_to_ghost_ms.p50, day.time_to_ghost_ms.p90],
        );
        assert.equal(await page.locator(`${t("chart-suggestions")} canvas`).count(), 1, "uPlot drew no canvas");
      }));

    test("an owner's Insights show the next edits apart from the completions", () =>
      step("next-edits", owner, async () => {
        const { page } = owner;
        assert.equal(
          await page.locator(t("insights-next-edits")).innerText(),
          "Next edits shown: 3 · applied: 2 (66.7%) · dismissed: 1 · typed over: 0 · characters applied: 12 · mean time to show: 30 ms",
        );
        const typescript = await cells(page, "insights-languages", "typescript");
        assert.deepEqual(
          [typescript.shown, typescript["next-edits"], typescript["next-edits-accepted"]],
          ["3", "3", "2"],
        );
      }));

    test("the ranges switch between 7, 30 and 90 days, with today's figures in each", () =>
      step("ranges", owner, async () => {
        const { page } = owner;
        for (const days of [7, 90, 30]) {
          await page.locator(t(`insights-range-${days}`)).click();
          await page.locator(`${t("insights")}[data-range="${days}"][data-state="ready"]`).waitFor();
          const counts = await series(page, "chart-suggestions");
          assert.equal(counts.days?.length, days);
          assert.equal(counts.days?.at(-1), today());
          assert.equal(counts.shown?.at(-1), oliveSent.shown + miaSent.shown);
          assert.equal(await page.locator(`${t(`insights-range-${days}`)}[aria-pressed="true"]`).count(), 1);
        }
      }));

    test("the CSV export downloads the tables' rows: today, each language and each person", () =>
      step("csv", owner, async () => {
        const { page } = owner;
        const [download] = await Promise.all([page.waitForEvent("download"), page.locator(t("insights-csv")).click()]);
        assert.match(download.suggestedFilename(), /^tab-usage-\d{4}-\d{2}-\d{2}-to-\d{4}-\d{2}-\d{2}\.csv$/);
        const file = join(OUTPUT, "insights.csv");
        await download.saveAs(file);
        const [header, ...lines] = readFileSync(file, "utf8").trimEnd().split("\r\n");
        const columns = (header ?? "").split(",");
        const at = (line: string, column: string) => line.split(",")[columns.indexOf(column)];
        assert.deepEqual(columns.slice(0, 5), ["group", "key", "name", "requests", "suggestions_shown"]);
        const row = (group: string, key: string) => lines.find((line) => line.startsWith(`${group},${key},`));
        const day = row("day", today());
        assert.ok(day, `no row for today in ${lines.join(" | ")}`);
        assert.equal(at(day, "suggestions_shown"), "5");
        assert.equal(at(day, "acceptances"), "3");
        assert.equal(at(day, "typed_over"), "1");
        assert.equal(at(day, "dismissals"), "1");
        assert.equal(at(day, "acceptance_rate"), "0.6");
        assert.equal(lines.filter((line) => line.startsWith("day,")).length, 1);
        for (const [language, shown] of [
          ["typescript", "3"],
          ["python", "1"],
          ["markdown", "1"],
        ] as const)
          assert.equal(at(row("language", language) ?? "", "suggestions_shown"), shown, language);
        assert.equal(at(row("person", mia.id) ?? "", "name"), "Mia Member");
        assert.equal(at(row("person", mia.id) ?? "", "chars_accepted"), String(miaSent.charsAccepted));
        assert.equal(lines.filter((line) => line.startsWith("person,")).length, 2);
      }));

    test("a member's Insights count only their own suggestions, as the API answers them", async () => {
      const person = await openPersonPage(browser, "mia", LAPTOP);
      others.push(person);
      await step("member", person, async () => {
        const { page } = person;
        await watchCsp(person);
        await signIn(page, relay.url, mia.key);
        assert.equal((await usage(relay, "user", mia.key)).scope, "self");
        await openInsights(page, relay.url, "ready");
        assert.match(await page.locator(t("insights-intro")).innerText(), /your own use/i);
        assert.deepEqual(
          await page.locator(`${t("insights-people")} tbody tr`).evaluateAll((rows) => rows.map((r) => r.dataset.key)),
          [mia.id],
        );
        assert.match(await page.locator(t("insights-totals")).innerText(), /^Shown: 1 · accepted: 1 \(100%\)/);
        assert.equal((await series(page, "chart-suggestions")).shown?.at(-1), 1);
        assert.deepEqual(Object.keys(await cells(page, "insights-languages", "python")), []);
        assert.deepEqual(await cspViolations(page), []);
      });
    });

    test("a workspace without usage shows how to get data: the extension, the key and tabRelay.reportUsage", async () => {
      const person = await openPersonPage(browser, "empty", LAPTOP);
      others.push(person);
      await step("empty", person, async () => {
        const { page } = person;
        await watchCsp(person);
        await signIn(page, empty.url, empty.apiKey);
        await openInsights(page, empty.url, "empty");
        const text = await page.locator(t("insights-empty")).innerText();
        assert.ok(
          text.includes(
            `Install this relay's extension in VS Code: curl -fsSLo tab-relay.vsix ${empty.url}/downloads/tab-relay.vsix && code --install-extension tab-relay.vsix`,
          ),
          text,
        );
        assert.match(text, /Tab Relay: Set API Key/);
        assert.match(text, /tabRelay\.reportUsage/);
        assert.equal(
          (await series(page, "chart-suggestions")).shown?.every((n) => n === 0),
          true,
        );
        await page.screenshot({ path: join(OUTPUT, "insights-empty-1280.png"), fullPage: true });
        assert.deepEqual(await cspViolations(page), []);
      });
    });

    test("screenshots at laptop and phone widths, the phone's without sideways scrolling", () =>
      step("screenshots", owner, async () => {
        const { page } = owner;
        for (const viewport of [LAPTOP, PHONE]) {
          await page.setViewportSize(viewport);
          await page.goto(`${relay.url}/insights`);
          await page.locator(`${t("insights")}[data-state="ready"]`).waitFor();
          await page.locator(`${t("chart-latency")} canvas`).waitFor();
          const overflow = await page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");
          assert.ok(overflow <= 0, `/insights scrolls sideways by ${overflow} px at ${viewport.width} px`);
          const file = join(OUTPUT, `insights-${viewport.width}.png`);
          await page.screenshot({ path: file, fullPage: true });
          assert.equal(pngSize(file).width, viewport.width, `${file} has the wrong width`);
        }
        assert.deepEqual(await cspViolations(page), []);
      }));

    test("no page raised a script error or met the CSP, and the relays logged no error", () => {
      const pages = [owner, ...others].filter((p): p is PersonPage => p !== undefined);
      assert.deepEqual(
        pages.flatMap((person) => person.scriptErrors),
        [],
      );
      assert.deepEqual(
        pages.flatMap((person) => person.log.filter((line) => /Content Security Policy/i.test(line))),
        [],
      );
      assert.deepEqual(
        relayLog.filter((line) => (JSON.parse(line) as { level: string }).level === "error"),
        [],
      );
    });
  },
);
