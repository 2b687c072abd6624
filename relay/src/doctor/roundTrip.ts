import { TAB_DEFAULTS, type TabContext } from "@tab-relay/shared";
import type { WallClock } from "../clock";
import type { Logger } from "../logger";
import type { HttpPost } from "../providers/httpPost";
import { type UpstreamApi, createUpstreamProvider, upstreamMode } from "../providers/upstream";

/** The code doctor asks the model to complete: short, in every code model's training data, and cursor at a line's end. */
export const TEST_CONTEXT: Readonly<TabContext> = Object.freeze({
  surface: "code",
  workspace_slug: "doctor",
  entity_id: "add.js",
  document_type: "plaintext",
  code_language: "javascript",
  file_path: "add.js",
  active_text_before_cursor: "function add(a, b) {\n  ",
  active_text_after_cursor: "\n}\n",
});

/** Enough tokens for a line of code, few enough to come back fast on a CPU. */
export const TEST_MAX_TOKENS = 16;

export interface RoundTripSettings {
  api: UpstreamApi;
  /** TAB_RELAY_UPSTREAM_URL as the relay would be given it. */
  url: string;
  model: string;
  fimTemplate?: string | undefined;
  infillMaxPredictMs: number;
  apiKey?: string | undefined;
  timeoutMs: number;
}

export interface RoundTrip {
  ok: boolean;
  /** Where the completion went. */
  url: string;
  /** The HTTP status of the answer, when one came. */
  status?: number;
  /** The raw text the provider passed on, before the relay's postprocessing. */
  text: string;
  firstFragmentMs?: number;
  totalMs: number;
  /** The relay's error message, as a client would get it (with the hint, when there is one). */
  error?: string;
  /** The hint the relay logs for the operator: after a failure, or a server that took the request but is the wrong kind. */
  hint?: string;
}

/**
 * One completion through the relay's own provider (the same mode, request body, stream reading and hints as
 * `tab-relay serve`), timed from the request to the first fragment and to the end.
 */
export async function sendTestCompletion(
  settings: RoundTripSettings,
  deps: { post: HttpPost; clock: WallClock },
): Promise<RoundTrip> {
  const mode = upstreamMode({
    api: settings.api,
    baseUrl: settings.url,
    model: settings.model,
    fimTemplate: settings.fimTemplate,
    infillMaxPredictMs: settings.infillMaxPredictMs,
  });
  const hints: string[] = [];
  let status: number | undefined;
  const post: HttpPost = async (url, init) => {
    const response = await deps.post(url, init);
    status = response.status;
    return response;
  };
  const provider = createUpstreamProvider({
    mode,
    model: settings.model,
    post,
    timeoutMs: settings.timeoutMs,
    logger: hintCollector(hints),
    ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
  });
  const started = deps.clock.now();
  let firstFragmentMs: number | undefined;
  let text = "";
  const result = (extra: Partial<RoundTrip>): RoundTrip => ({
    ok: false,
    url: mode.url,
    text,
    totalMs: Math.round(deps.clock.now() - started),
    ...(status === undefined ? {} : { status }),
    ...(firstFragmentMs === undefined ? {} : { firstFragmentMs }),
    ...(hints[0] === undefined ? {} : { hint: hints[0] }),
    ...extra,
  });
  try {
    await provider.complete(
      { context: TEST_CONTEXT, maxTokens: TEST_MAX_TOKENS, temperature: TAB_DEFAULTS.temperature },
      new AbortController().signal,
      (fragment) => {
        firstFragmentMs ??= Math.round(deps.clock.now() - started);
        text += fragment;
      },
    );
    return result({ ok: true });
  } catch (error) {
    return result({ error: error instanceof Error ? error.message : String(error) });
  }
}

/** The provider logs each hint as a warning beginning `upstream: `; doctor shows them instead. */
function hintCollector(hints: string[]): Logger {
  const ignore = () => {};
  return {
    enabled: (level) => level === "warn",
    debug: ignore,
    info: ignore,
    warn: (msg) => hints.push(msg.replace(/^upstream: /, "")),
    error: ignore,
  };
}
