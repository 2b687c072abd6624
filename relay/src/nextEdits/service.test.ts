import assert from "node:assert/strict";
import { test } from "node:test";
import { NextEditRequest } from "@tab-relay/shared";
import { silentLogger } from "../logger";
import { createMetrics } from "../metrics";
import type { HttpPost } from "../providers/httpPost";
import { documentOf } from "./document";
import { proposeLocalNextEdit } from "./localEngine";
import { createNextEditService, WARM_UP_REQUEST } from "./service";

const neverPost: HttpPost = () => Promise.reject(new Error("the warm-up sent a request upstream"));

test("the warm-up request passes the route's schema and the local engine proposes on it, as on a first rename", () => {
  const request = NextEditRequest.parse(WARM_UP_REQUEST);
  const { kind, judgement } = proposeLocalNextEdit(documentOf(request), request.recent_edits);
  assert.equal(kind, "rename");
  assert.ok("edits" in judgement, `the engine declined: ${JSON.stringify(judgement)}`);
  assert.deepEqual(
    judgement.edits.map((edit) => edit.text),
    ["priceSum", "priceSum"],
  );
});

test("warming a next-edit service counts no next edit and sends nothing upstream", async () => {
  const metrics = createMetrics();
  const local = createNextEditService({ post: neverPost, metrics, logger: silentLogger });
  const upstream = createNextEditService({
    upstream: { url: "http://127.0.0.1:9/v1", model: "zeta", timeoutMs: 1_000, deadlineMs: 1_000 },
    post: neverPost,
    metrics,
    logger: silentLogger,
  });
  local.warm();
  upstream.warm();
  assert.doesNotMatch(await metrics.render(), /^tab_relay_next_edits_total\{/m);

  // The counter is the one a request moves, so the check above can see a warm-up that counted.
  await local.run(NextEditRequest.parse(WARM_UP_REQUEST), new AbortController().signal);
  assert.match(await metrics.render(), /^tab_relay_next_edits_total\{source="local",outcome="edits"\} 1$/m);
});
