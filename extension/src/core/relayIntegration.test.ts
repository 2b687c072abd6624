// The pipeline against a relay over real HTTP. `startRelay` is the only place that knows what serves the API:
// today a stand-in speaking the relay's wire format, later the real relay started in-process.
/* eslint-disable no-restricted-imports -- tests run under Node; the platform-free rule is for the pipeline itself */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, test } from "node:test";
import { CompletionRequest } from "@tab-relay/shared";
import { CompletionSession } from "./completionSession";
import { DEFAULT_SETTINGS, type Settings } from "./settings";
import { StatusController, initialStatus } from "./status";
import { DONE_FRAME, chunkFrame, inputAt } from "./testing";
import type { Clock } from "./types";

interface RelayHandle {
  readonly url: string;
  readonly apiKey: string;
  /** A key the relay knows but has revoked: every request with it gets a 401. */
  readonly revokedKey: string;
  readonly workspaceSlug: string;
  /** A document (cursor at `█`) whose continuation the relay's engine makes predictable, and that continuation. */
  readonly sample: { readonly marked: string; readonly expected: string };
  /** Present for the stand-in only: lets tests script slow streams and failures. */
  readonly standIn?: StandIn;
  close(): Promise<void>;
}

type Behaviour =
  | { readonly kind: "slow"; readonly chunks: readonly string[]; readonly delayMs: number }
  | { readonly kind: "status"; readonly status: number; readonly code: string; readonly message: string; readonly headers?: Record<string, string> }
  | { readonly kind: "midStreamError"; readonly code: string };

interface StandIn {
  readonly received: CompletionRequest[];
  /** Responses whose connection the client closed before the stream ended. */
  closedEarly: number;
  readonly script: Behaviour[];
  /** Resolves when the next response's connection closes (finished or not). */
  nextClose(): Promise<void>;
}

async function startRelay(): Promise<RelayHandle> {
  const apiKey = "svc_ws_standInKey0000000000000000000000";
  const revokedKey = "svc_ws_revokedKey000000000000000000000";
  const standIn: StandIn = { received: [], closedEarly: 0, script: [], nextClose: () => closed };
  let signalClose: () => void = () => undefined;
  let closed = new Promise<void>((resolve) => (signalClose = resolve));

  const server = createServer((req, res) => {
    void handle(req, res).catch(() => res.destroy());
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const fail = (status: number, code: string, message: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify({ error: { code, message } }));
    };
    if (req.method !== "POST" || req.url !== "/api/v1/tab/chat/completions") return fail(404, "NOT_FOUND", "Not found");
    const auth = req.headers.authorization ?? "";
    if (auth !== `Bearer ${apiKey}`) return fail(401, "UNAUTHORIZED", auth === `Bearer ${revokedKey}` ? "API key revoked" : "Invalid API key");
    let raw = "";
    for await (const chunk of req) raw += String(chunk);
    const parsed = CompletionRequest.safeParse(JSON.parse(raw));
    if (!parsed.success) return fail(400, "VALIDATION_ERROR", parsed.error.message);
    standIn.received.push(parsed.data);
    const behaviour = standIn.script.shift();
    if (behaviour?.kind === "status") return fail(behaviour.status, behaviour.code, behaviour.message, behaviour.headers);

    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    let finished = false;
    res.on("close", () => {
      if (!finished) standIn.closedEarly++;
      signalClose();
      closed = new Promise<void>((resolve) => (signalClose = resolve));
    });
    if (behaviour?.kind === "midStreamError") {
      res.write(chunkFrame("par"));
      res.end(`event: error\ndata: ${JSON.stringify({ error: { code: behaviour.code, message: "model failed" } })}\n\n`);
      finished = true;
      return;
    }
    const chunks = behaviour?.kind === "slow" ? behaviour.chunks : engine(parsed.data.tab_context.active_text_before_cursor).match(/[\s\S]{1,3}/g) ?? [];
    for (const chunk of chunks) {
      if (res.destroyed) return;
      res.write(chunkFrame(chunk));
      if (behaviour?.kind === "slow") await new Promise((resolve) => setTimeout(resolve, behaviour.delayMs));
    }
    if (res.destroyed) return;
    finished = true;
    res.end(chunkFrame(undefined, "stop") + DONE_FRAME);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    revokedKey,
    workspaceSlug: "acme",
    sample: { marked: "function greet(name) {\n  return █\n}\n", expected: "`Hello, ${name}!`;" },
    standIn,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The stand-in's engine: a fixed continuation for the sample, else a short generic line. */
function engine(before: string): string {
  return before.endsWith("return ") ? "`Hello, ${name}!`;\n}" : "done();";
}

const realClock: Clock = { now: () => Date.now(), setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) };

let relay: RelayHandle;
before(async () => {
  relay = await startRelay();
});
after(async () => {
  await relay.close();
});
beforeEach(() => {
  if (relay.standIn) relay.standIn.script.length = 0;
});

function pipeline(overrides: Partial<Settings> = {}, apiKey = relay.apiKey) {
  const status = new StatusController(realClock, initialStatus(true, []));
  const logs: string[] = [];
  const session = new CompletionSession({
    clock: realClock,
    fetch: (url, init) => fetch(url, init),
    logger: { info: (m) => logs.push(m), warn: (m) => logs.push(m), error: (m) => logs.push(m) },
    getSettings: () => ({ ...DEFAULT_SETTINGS, relayUrl: relay.url, workspaceSlug: relay.workspaceSlug, debounceMs: 5, ...overrides }),
    getApiKey: () => Promise.resolve(apiKey),
    status,
  });
  return { session, status, logs };
}

test("streams a completion from the relay and shows it as ghost text", async () => {
  const { session, status, logs } = pipeline();
  const input = inputAt(relay.sample.marked);
  const shown = await session.provide(input);
  assert.deepEqual(shown, { insertText: relay.sample.expected, start: input.offset, end: input.offset, fromCache: false });
  assert.equal(status.kind, "ready");
  assert.match(logs[0] ?? "", /^code src\/app\.ts: 200 in \d+ ms/);
  const sent = relay.standIn?.received.at(-1);
  if (sent) {
    assert.equal(sent.stream, true);
    assert.equal(sent.tab_context.surface, "code");
    assert.equal(sent.tab_context.active_text_before_cursor, "function greet(name) {\n  return ");
  }
});

test("a single-line context shows its first line while the relay is still streaming, and closes the stream", async (t) => {
  const standIn = relay.standIn;
  if (!standIn) return t.skip("needs the stand-in's slow stream");
  standIn.script.push({ kind: "slow", chunks: ["a, ", "b", ")\nnext line", " and more", " and more"], delayMs: 150 });
  const { session } = pipeline();
  const closedBefore = standIn.closedEarly;
  const closed = standIn.nextClose();
  const shown = await session.provide(inputAt("call(█);\n"));
  assert.equal(shown?.insertText, "a, b");
  await closed;
  // The client hung up before the relay could finish: the line was shown without waiting for the rest.
  assert.equal(standIn.closedEarly, closedBefore + 1);
});

test("a newer keystroke aborts the HTTP request in flight", async (t) => {
  const standIn = relay.standIn;
  if (!standIn) return t.skip("needs the stand-in's slow stream");
  standIn.script.push({ kind: "slow", chunks: ["slo", "w", " stream"], delayMs: 300 });
  const { session } = pipeline();
  const closedBefore = standIn.closedEarly;
  const closed = standIn.nextClose();
  const first = session.provide(inputAt("let a = █\n"));
  await new Promise((resolve) => setTimeout(resolve, 100));
  const second = session.provide(inputAt("let a = 1█\n"));
  assert.equal(await first, undefined);
  await closed;
  assert.equal(standIn.closedEarly, closedBefore + 1);
  assert.equal((await second)?.insertText, "done();");
  assert.equal(session.stats.requestsAborted, 1);
});

test("a revoked key puts the status in unauthorized and stops asking", async () => {
  const { session, status } = pipeline({}, relay.revokedKey);
  assert.equal(await session.provide(inputAt(relay.sample.marked)), undefined);
  assert.equal(status.kind, "unauthorized");
  assert.equal(await session.provide(inputAt(relay.sample.marked)), undefined);
  assert.equal(session.stats.requestsStarted, 1);
});

test("a 429 backs off for Retry-After and then resumes by itself", async (t) => {
  const standIn = relay.standIn;
  if (!standIn) return t.skip("needs the stand-in's scripted 429");
  standIn.script.push({ kind: "status", status: 429, code: "RATE_LIMIT_EXCEEDED", message: "Rate limit exceeded", headers: { "Retry-After": "1" } });
  const { session, status } = pipeline();
  assert.equal(await session.provide(inputAt("x = █\n")), undefined);
  assert.equal(status.kind, "rateLimited");
  assert.equal(await session.provide(inputAt("x = █\n")), undefined);
  assert.equal(session.stats.requestsStarted, 1);
  await new Promise((resolve) => setTimeout(resolve, 1_050));
  assert.equal(status.kind, "ready");
  assert.equal((await session.provide(inputAt("x = █\n")))?.insertText, "done();");
  status.dispose();
});

test("an error frame in the middle of the stream is logged and shows nothing", async (t) => {
  const standIn = relay.standIn;
  if (!standIn) return t.skip("needs the stand-in's scripted error frame");
  standIn.script.push({ kind: "midStreamError", code: "UPSTREAM_ERROR" });
  const { session, status, logs } = pipeline();
  assert.equal(await session.provide(inputAt("x = █\n")), undefined);
  assert.equal(status.kind, "ready");
  assert.match(logs[0] ?? "", /UPSTREAM_ERROR .*model failed/);
});

test("a relay that is not listening shows as unreachable", async () => {
  const spare = createServer();
  await new Promise<void>((resolve) => spare.listen(0, "127.0.0.1", resolve));
  const { port } = spare.address() as AddressInfo;
  await new Promise<void>((resolve) => spare.close(() => resolve()));
  const { session, status } = pipeline({ relayUrl: `http://127.0.0.1:${port}` });
  assert.equal(await session.provide(inputAt("x = █\n")), undefined);
  assert.equal(status.kind, "unreachable");
});
