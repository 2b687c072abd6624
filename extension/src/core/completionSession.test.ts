import assert from "node:assert/strict";
import { test } from "node:test";
import { parseSnippets } from "@tab-relay/shared";
import { CompletionSession, type SessionEvent } from "./completionSession";
import { DEFAULT_SETTINGS, type Settings } from "./settings";
import { RecentFiles } from "./recentFiles";
import type { RelatedContextSource } from "./relatedContext";
import { StatusController, initialStatus, type Notice } from "./status";
import { FakeClock, FakeFetch, inputAt, typeAt, type FetchStep } from "./testing";

const KEY = "svc_ws_0123456789abcdefghijklmnopqrstABCDEF";

function harness(
  steps: FetchStep[] = [],
  settings: Partial<Settings> = {},
  getApiKey = (): Promise<string | undefined> => Promise.resolve(KEY),
  relatedContext?: RelatedContextSource,
) {
  const clock = new FakeClock();
  const fake = new FakeFetch(clock, steps);
  const status = new StatusController(clock, initialStatus(true, []));
  const logs: string[] = [];
  const notices: Notice[] = [];
  const events: SessionEvent[] = [];
  status.onNotice((notice) => notices.push(notice));
  const session = new CompletionSession({
    clock,
    fetch: fake.fetch,
    logger: {
      info: (m) => logs.push(`info ${m}`),
      warn: (m) => logs.push(`warn ${m}`),
      error: (m) => logs.push(`error ${m}`),
    },
    getSettings: () => ({ ...DEFAULT_SETTINGS, workspaceSlug: "acme", ...settings }),
    getApiKey,
    status,
    onEvent: (event) => events.push(event),
    ...(relatedContext ? { relatedContext } : {}),
  });
  /** Starts a provide call and lets the clock run `ms`; returns the settled result. */
  const provide = async (input: ReturnType<typeof inputAt>, ms = 1_000, signal?: AbortSignal) => {
    const pending = session.provide(input, signal);
    await clock.advance(ms);
    return pending;
  };
  return { clock, fake, status, session, logs, notices, events, provide };
}

const sse = (content: string, delayMs = 0): FetchStep => ({ kind: "sse", chunks: [{ content, delayMs }] });

test("waits out the debounce after the last keystroke before asking the relay", async () => {
  const { clock, fake, session } = harness([sse("items.length;")]);
  const first = session.provide(inputAt("const n = █"));
  await clock.advance(119);
  assert.equal(fake.calls.length, 0);
  const second = session.provide(inputAt("const n = █"));
  assert.equal(await first, undefined);
  await clock.advance(119);
  assert.equal(fake.calls.length, 0);
  await clock.advance(1);
  assert.equal(fake.calls.length, 1);
  assert.deepEqual(await second, { insertText: "items.length;", start: 10, end: 10, fromCache: false });
  assert.equal(session.stats.debounceCancelled, 1);
  fake.assertDone();
});

test("the debounce follows the setting", async () => {
  const { clock, fake, session } = harness([sse("ok then")], { debounceMs: 300 });
  void session.provide(inputAt("x = █"));
  await clock.advance(299);
  assert.equal(fake.calls.length, 0);
  await clock.advance(1);
  assert.equal(fake.calls.length, 1);
});

test("a newer keystroke aborts the request in flight", async () => {
  const { clock, fake, session } = harness([{ kind: "hang" }, sse("done();")]);
  const first = session.provide(inputAt("a█"));
  await clock.advance(120);
  assert.equal(fake.calls.length, 1);
  const second = session.provide(inputAt("ab█"));
  assert.equal(await first, undefined);
  assert.equal(fake.calls[0]?.signal.aborted, true);
  await clock.advance(120);
  assert.equal((await second)?.insertText, "done();");
  assert.equal(session.stats.requestsAborted, 1);
  assert.equal(session.stats.requestsStarted, 2);
  fake.assertDone();
});

test("VS Code's cancellation aborts the request too", async () => {
  const { clock, fake, session } = harness([{ kind: "hang" }]);
  const token = new AbortController();
  const pending = session.provide(inputAt("a█"), token.signal);
  await clock.advance(150);
  token.abort();
  assert.equal(await pending, undefined);
  assert.equal(fake.calls[0]?.signal.aborted, true);
  assert.equal(session.stats.requestsAborted, 1);
});

test("typing along a visible suggestion is served from the cache with no request, backspace included", async () => {
  const { fake, session, provide } = harness([sse("items.length;")]);
  const start = inputAt("const n = █\n");
  assert.equal((await provide(start))?.insertText, "items.length;");
  assert.deepEqual(await provide(typeAt(start, "i"), 0), {
    insertText: "tems.length;",
    start: 11,
    end: 11,
    fromCache: true,
  });
  assert.equal((await provide(typeAt(start, "ite"), 0))?.insertText, "ms.length;");
  assert.equal((await provide(typeAt(start, "ite\b"), 0))?.insertText, "ems.length;");
  assert.equal((await provide(typeAt(start, "ite\b\b\bi"), 0))?.insertText, "tems.length;");
  assert.equal(fake.calls.length, 1);
  assert.equal(session.stats.cacheHits, 4);
  fake.assertDone();
});

test("a remainder shorter than 2 visible characters is hidden without asking again", async () => {
  const { fake, provide } = harness([sse("x1;")]);
  const start = inputAt("let y = █\n");
  await provide(start);
  assert.equal(await provide(typeAt(start, "x1"), 0), undefined);
  fake.assertDone();
});

test("the suggestion is postprocessed before it is shown", async () => {
  const { provide } = harness([sse("  const total = sum(a);\nnext")]);
  const shown = await provide(inputAt("function f(a) {\n  const tot█\n}"));
  assert.equal(shown?.insertText, "al = sum(a);\nnext");
});

test("a single-line context shows the first line without waiting for the stream to end", async () => {
  const { clock, session } = harness([
    {
      kind: "sse",
      chunks: [
        { content: "a, b", delayMs: 10 },
        { content: ")\nmore", delayMs: 10 },
        { content: "x", delayMs: 5_000 },
      ],
    },
  ]);
  let shownAt = 0;
  const pending = session.provide(inputAt("call(█);\n")).then((value) => ((shownAt = clock.now()), value));
  await clock.advance(200);
  assert.equal((await pending)?.insertText, "a, b");
  assert.equal(shownAt - 1_700_000_000_000, 140);
});

test("with an IntelliSense item selected, the ghost text extends it over the same range", async () => {
  const { fake, provide } = harness([sse("(message);")]);
  const shown = await provide(inputAt("console.l█", { selected: { start: 8, end: 9, text: "log" } }));
  assert.deepEqual(shown, { insertText: "log(message);", start: 8, end: 9, fromCache: false });
  assert.equal(
    (fake.calls[0]?.body as { tab_context: { active_text_before_cursor: string } }).tab_context
      .active_text_before_cursor,
    "console.log",
  );
});

test("a 429 stops requests for Retry-After, then they resume by themselves", async () => {
  const { clock, fake, status, provide } = harness([
    { kind: "error", status: 429, code: "RATE_LIMIT_EXCEEDED", message: "slow down", headers: { "Retry-After": "2" } },
    sse("back again"),
  ]);
  assert.equal(await provide(inputAt("a = █")), undefined);
  assert.equal(status.kind, "rateLimited");
  assert.equal(await provide(inputAt("a = 1█"), 500), undefined);
  assert.equal(fake.calls.length, 1);
  await clock.advance(1_000);
  assert.equal(status.kind, "ready");
  assert.equal((await provide(inputAt("a = 1█"), 200))?.insertText, "back again");
  fake.assertDone();
});

test("a rejected key is reported once and stops further requests", async () => {
  const { fake, status, notices, logs, provide } = harness([
    { kind: "error", status: 401, code: "UNAUTHORIZED", message: "Invalid API key" },
    // GET /me, asked whether the key is bad or of another workspace: the relay refuses it too.
    { kind: "error", status: 401, code: "UNAUTHORIZED", message: "Invalid API key" },
  ]);
  await provide(inputAt("a = █"));
  await provide(inputAt("a = b█"));
  await provide(inputAt("a = bc█"));
  assert.equal(status.kind, "unauthorized");
  assert.deepEqual(notices, [{ kind: "unauthorized", message: "Invalid API key" }]);
  assert.deepEqual(
    fake.calls.map((call) => `${call.method} ${new URL(call.url).pathname}`),
    ["POST /api/v1/tab/chat/completions", "GET /api/v1/me"],
  );
  assert.equal(logs.filter((line) => line.startsWith("warn")).length, 1);
  fake.assertDone();
});

test("an unreachable relay is retried after a back-off, not on every keystroke", async () => {
  const { clock, fake, status, notices, provide } = harness([
    { kind: "network", message: "ECONNREFUSED" },
    sse("fine now"),
  ]);
  await provide(inputAt("a = █"), 200);
  assert.equal(status.kind, "unreachable");
  await provide(inputAt("a = 1█"), 200);
  assert.equal(fake.calls.length, 1);
  await clock.advance(1_000);
  assert.equal((await provide(inputAt("a = 1█"), 200))?.insertText, "fine now");
  assert.equal(status.kind, "ready");
  assert.equal(notices.length, 1);
  fake.assertDone();
});

test("each request is logged with its timing and outcome, never with the key", async () => {
  const { logs, provide } = harness([{ kind: "sse", latencyMs: 40, chunks: [{ content: "value", delayMs: 10 }] }]);
  await provide(inputAt("x = █"));
  assert.equal(logs.length, 1);
  assert.match(
    logs[0] ?? "",
    /^info code src\/app\.ts: 200 in 50 ms, first chunk 50 ms, 5 chars; showing 5 chars, 170 ms after the keystroke$/,
  );
  assert.equal(
    logs.some((line) => line.includes(KEY)),
    false,
  );
});

test("code from the files the user worked in goes out as surrounding context, and the log names those files", async () => {
  const files = new RecentFiles(new FakeClock());
  const helper =
    "export function formatPrice(amount: number, currency: string) {\n  return `${currency} ${amount.toFixed(2)}`;\n}";
  files.open({ uri: "file:///work/project/src/price.ts", path: "src/price.ts", scheme: "file" }, helper);
  files.open(
    { uri: "file:///work/project/.env", path: ".env", scheme: "file" },
    "PRICE_API_KEY=formatPrice amount currency",
  );
  const { fake, logs, provide } = harness([sse("amount, currency);")], {}, undefined, files);
  await provide(inputAt("const label = formatPrice(█"));
  const body = fake.calls[0]?.body as { tab_context: { surrounding_context?: string } };
  assert.deepEqual(parseSnippets(body.tab_context.surrounding_context ?? ""), [{ path: "src/price.ts", text: helper }]);
  assert.match(logs[0] ?? "", /\(context \d+ chars from src\/price\.ts\)/);
  fake.assertDone();
});

test("no key, no request", async () => {
  const { fake, provide, session } = harness([], {}, () => Promise.resolve(undefined));
  assert.equal(await provide(inputAt("x = █")), undefined);
  assert.equal(session.stats.requestsStarted, 0);
  fake.assertDone();
});

test("snoozing hides even cached suggestions, and nothing is requested", async () => {
  const { clock, fake, status, provide } = harness([sse("items.length;")]);
  const start = inputAt("n = █\n");
  await provide(start);
  status.dispatch({ type: "snoozed", until: clock.now() + 60_000 });
  assert.equal(await provide(typeAt(start, "i"), 0), undefined);
  assert.equal(await provide(inputAt("m = █\n")), undefined);
  fake.assertDone();
});

test("while rate limited, typing through a visible suggestion still works from the cache", async () => {
  const { status, clock, provide } = harness([sse("items.length;")]);
  const start = inputAt("n = █\n");
  await provide(start);
  status.dispatch({ type: "requestStarted" });
  status.dispatch({
    type: "requestEnded",
    outcome: {
      kind: "failed",
      status: 429,
      code: "RATE_LIMIT_EXCEEDED",
      message: "",
      retryAfterMs: 60_000,
      durationMs: 1,
    },
  });
  assert.equal((await provide(typeAt(start, "it"), 0))?.insertText, "ems.length;");
  assert.ok(clock.pendingTimers > 0);
});

test("reports what a benchmark needs: requests, aborts, cache hits, and when each thing happened", async () => {
  const { session, events, provide } = harness([sse("abc();")]);
  const start = inputAt("x█\n");
  await provide(start);
  await provide(typeAt(start, "a"), 0);
  assert.deepEqual(
    events.map((event) => event.type),
    ["requestStarted", "requestEnded", "shown", "cacheHit", "shown"],
  );
  assert.equal(session.stats.requestsStarted, 1);
  assert.equal(session.stats.cacheHits, 1);
  assert.equal(session.stats.suggestionsShown, 2);
});

test("with adaptiveDebounce on, a slow typist's pause is waited out a little longer, so mid-word gaps send nothing", async () => {
  // Until four gaps are known the floor applies, so the first four keystrokes each start a request.
  const learning: FetchStep[] = Array.from({ length: 4 }, () => ({ kind: "hang" }));
  const { clock, fake, session } = harness([...learning, sse("items.length;")], { adaptiveDebounce: true });
  const text = "const total = values.reduce((sum, v) => sum + v, 0);";
  // Keystrokes 150 ms apart: longer than the 120 ms floor, so a fixed debounce would fire on every one.
  for (let i = 1; i <= 30; i++) {
    void session.provide(inputAt(`${text.slice(0, i)}█`));
    await clock.advance(150);
  }
  assert.equal(fake.calls.length, 4);
  const last = session.provide(inputAt(`${text.slice(0, 31)}█`));
  await clock.advance(187);
  assert.equal(fake.calls.length, 4);
  await clock.advance(1);
  assert.equal(fake.calls.length, 5);
  assert.equal((await last)?.insertText, "items.length;");
});

test("with adaptiveDebounce off, the debounce is exactly the setting whatever the rhythm", async () => {
  const { clock, fake, session } = harness([sse("a"), sse("items.length;")], { adaptiveDebounce: false });
  for (let i = 1; i <= 12; i++) {
    void session.provide(inputAt(`${"abcdefghijklmnop".slice(0, i)}█`));
    await clock.advance(100);
  }
  assert.equal(fake.calls.length, 0);
  void session.provide(inputAt("abcdefghijklm█"));
  await clock.advance(120);
  assert.equal(fake.calls.length, 1);
});

test("the debounce counts from the keystroke the adapter saw, not from VS Code's later call", async () => {
  const { clock, fake, session, logs } = harness([sse("items.length;")]);
  const editedAt = clock.now();
  // VS Code asks 50 ms after the keystroke (its own debounce); 70 ms of the 120 are left.
  await clock.advance(50);
  const pending = session.provide({ ...inputAt("const n = █"), editedAt });
  await clock.advance(69);
  assert.equal(fake.calls.length, 0);
  await clock.advance(1);
  assert.equal(fake.calls.length, 1);
  assert.equal((await pending)?.insertText, "items.length;");
  assert.match(logs.at(-1) ?? "", /, 120 ms after the keystroke$/);
});

/** A session whose pauses tell `onPause`, as the next-edit presenter is told; `keySet` false: no API key is set. */
function pausingSession(
  clock: FakeClock,
  fake: FakeFetch,
  onPause: (input: unknown, signal: AbortSignal, debouncedAt: number) => void,
  keySet = true,
) {
  return new CompletionSession({
    clock,
    fetch: fake.fetch,
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
    getSettings: () => ({ ...DEFAULT_SETTINGS, workspaceSlug: "acme" }),
    getApiKey: () => Promise.resolve(keySet ? KEY : undefined),
    status: new StatusController(clock, initialStatus(true, [])),
    onPause,
  });
}

test("a pause asks for the completion before it tells the next edit, so the ghost text's request reaches the relay first", async () => {
  const clock = new FakeClock();
  const fake = new FakeFetch(clock, [sse("items.length;")]);
  const requestsBeforePause: number[] = [];
  // The next-edit session sends its own request from here; what matters is what was sent before.
  const session = pausingSession(clock, fake, () => requestsBeforePause.push(fake.calls.length));
  const pending = session.provide(inputAt("const n = █"));
  await clock.advance(1_000);
  assert.equal((await pending)?.insertText, "items.length;");
  assert.deepEqual(requestsBeforePause, [1]);
  assert.match(fake.calls[0]?.url ?? "", /\/tab\/chat\/completions$/);
});

test("the next edit is told when the debounce ran out, so the time to its decoration counts from there", async () => {
  const clock = new FakeClock();
  const fake = new FakeFetch(clock, [sse("items.length;")]);
  const told: number[] = [];
  const session = pausingSession(clock, fake, (_input, _signal, debouncedAt) => told.push(debouncedAt));
  const editedAt = clock.now();
  await clock.advance(50);
  const pending = session.provide({ ...inputAt("const n = █"), editedAt });
  await clock.advance(1_000);
  assert.equal((await pending)?.insertText, "items.length;");
  assert.deepEqual(told, [editedAt + DEFAULT_SETTINGS.debounceMs]);
});

test("a pause without an API key tells no next edit either", async () => {
  const clock = new FakeClock();
  const fake = new FakeFetch(clock, []);
  let pauses = 0;
  const session = pausingSession(clock, fake, () => pauses++, false);
  const pending = session.provide(inputAt("const n = █"));
  await clock.advance(1_000);
  assert.equal(await pending, undefined);
  assert.equal(pauses, 0);
  assert.equal(fake.calls.length, 0);
});
