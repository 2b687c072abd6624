import { NextEditResponse } from "@tab-relay/shared";
import { buildNextEditRequest } from "./nextEditRequest";
import type { Clock, FetchLike } from "./types";

/** The relay's liveness route: no key, no rate limit, no body. Relative to the relay URL, as the API prefix is. */
export const HEALTH_PATH = "/healthz";

/** A document just after a rename, as a pause reads it; only ever parsed here, never sent. */
export const WARM_UP_DOCUMENT = {
  path: "warm-up.js",
  languageId: "javascript",
  version: 1,
  lines: ["function total(items) {", "  let priceSum = 0;", "  return sum;", "}"],
  cursor: { line: 1, character: 14 },
};
/**
 * What a pause sends beside its document, never empty in a real request (a next edit is asked only after an edit):
 * zod compiles the parser of each object schema on its first parse (zod's `v4/core/schemas.js`, `$ZodObjectJIT`: its
 * `fastpass` is generated then), so a sample without a recent edit leaves the `RecentEdit` parser for the session's
 * first real pause to compile (outside VS Code under load: a first build with one recent edit took a median of 1.7 ms
 * after a warm-up without one, 0.6 ms after one with it, 10 runs each).
 */
export const WARM_UP_EXTRA = {
  recentEdits: [
    {
      file_path: "warm-up.js",
      start_line: 1,
      old_lines: ["  let sum = 0;"],
      new_lines: ["  let priceSum = 0;"],
      age_ms: 0,
    },
  ],
  surroundingContext: "--- file: warm-up-helpers.js ---\nfunction price(item) {\n  return item.price;\n}",
};
export const WARM_UP_ANSWER = {
  id: "nextedit-warm-up",
  object: "tab.next_edit",
  created: 0,
  model: "local",
  document_version: 1,
  edits: [{ range: { start: { line: 2, character: 9 }, end: { line: 2, character: 12 } }, text: "priceSum" }],
};

/**
 * Pays, once and off the typing path, what the session's first pause would otherwise pay on its way to the screen.
 * In the real VS Code e2e that first pause's completion waited 1,016 ms for its answer's headers (later ones 14 to
 * 50 ms) and its next edit 77 ms to be built (later ones 1 to 2 ms):
 * - the first `fetch`: VS Code's extension host wraps it (@vscode/proxy-agent's createFetchPatch, installed by
 *   extHostProxyResolver) and on its first call resolves the proxy and loads the system certificates, parsing each
 *   (getOrLoadAdditionalCertificates); Node loads undici, which implements fetch, on its first call too;
 * - the first parse of the next-edit request and answer schemas (zod compiles an object schema's parser then);
 * - for a relay on this machine, the connection the pauses then reuse (vscode/loopbackFetch.ts).
 *
 * The request is `GET /healthz`, which carries no key and no code and counts against no rate limit. Its answer is
 * dropped unread; a relay that is down or is not a tab-relay changes nothing. Never throws.
 */
export async function warmUp(
  deps: { fetch: FetchLike; clock: Clock },
  target: { relayUrl: string; workspaceSlug: string; model: string; timeoutMs: number },
): Promise<"answered" | "unreachable"> {
  buildNextEditRequest(WARM_UP_DOCUMENT, {
    workspaceSlug: target.workspaceSlug,
    model: target.model,
    ...WARM_UP_EXTRA,
  });
  NextEditResponse.safeParse(WARM_UP_ANSWER);
  const controller = new AbortController();
  const timer = deps.clock.setTimeout(() => controller.abort(), target.timeoutMs);
  try {
    const response = await deps.fetch(`${target.relayUrl}${HEALTH_PATH}`, {
      method: "GET",
      headers: { accept: "application/json" },
      signal: controller.signal,
    });
    // Only the request's way there and back is wanted: the body is not read.
    await response.body?.cancel().catch(() => undefined);
    return "answered";
  } catch {
    return "unreachable";
  } finally {
    deps.clock.clearTimeout(timer);
  }
}
