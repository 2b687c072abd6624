import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { NextEditRequest, NextEditResponse, RecentEdit, systemClock } from "@tab-relay/shared";
import { buildNextEditRequest } from "./nextEditRequest";
import type { FetchLike } from "./types";
import { HEALTH_PATH, WARM_UP_ANSWER, WARM_UP_DOCUMENT, WARM_UP_EXTRA, warmUp } from "./warmUp";

const TARGET = { workspaceSlug: "acme", model: "tab-v1", timeoutMs: 5_000 };

test("the warm-up asks GET /healthz under the relay URL, with no key and no body", async () => {
  const seen: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const fetched: string[] = [];
    const recording: FetchLike = (url, init) => {
      fetched.push(url);
      return fetch(url, init);
    };
    const deps = { clock: systemClock, fetch: recording };
    assert.equal(await warmUp(deps, { ...TARGET, relayUrl: base }), "answered");
    // A relay behind a path keeps its routes under it, as the API's do.
    assert.equal(await warmUp(deps, { ...TARGET, relayUrl: `${base}/tab-relay` }), "answered");
    assert.deepEqual(fetched, [`${base}${HEALTH_PATH}`, `${base}/tab-relay${HEALTH_PATH}`]);
    assert.deepEqual(
      seen.map((request) => [request.method, request.url, request.body, request.headers.authorization]),
      [
        ["GET", "/healthz", "", undefined],
        ["GET", "/tab-relay/healthz", "", undefined],
      ],
    );
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test("a relay that is down makes the warm-up say so, never throw", async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  const deps = { clock: systemClock, fetch: ((url, init) => fetch(url, init)) satisfies FetchLike };
  assert.equal(await warmUp(deps, { ...TARGET, relayUrl: `http://127.0.0.1:${port}` }), "unreachable");
});

test("the warm-up's document and answer pass the schemas a pause's request and answer go through", () => {
  // A sample the schema refused would leave its parser compiled only partly: the warm-up would warm little.
  assert.notEqual(buildNextEditRequest(WARM_UP_DOCUMENT, { ...TARGET, ...WARM_UP_EXTRA }), undefined);
  assert.ok(NextEditResponse.safeParse(WARM_UP_ANSWER).success);
});

test("the warm-up's request holds every part a pause's request can hold, so each part's parser is compiled", () => {
  // zod compiles an object schema's parser on its first parse: a part left out (a recent edit, say) would be
  // compiled by the session's first real pause instead.
  const body = buildNextEditRequest(WARM_UP_DOCUMENT, { ...TARGET, ...WARM_UP_EXTRA });
  assert.ok(body !== undefined);
  const edit = body.recent_edits[0];
  assert.ok(edit !== undefined, "a recent edit");
  assert.deepEqual(Object.keys(edit).sort(), Object.keys(RecentEdit.shape).sort());
  assert.deepEqual(Object.keys(body).sort(), Object.keys(NextEditRequest.shape).sort());
});
