import { TAB_DEFAULTS, parseSnippets } from "@tab-relay/shared";
import { TypingThroughCache } from "./cache";
import { checkConnection } from "./connection";
import { buildTabContext, cursorText, isSingleLineContext } from "./context";
import { TypingRhythm, debounce } from "./debounce";
import { postprocess, visibleLength } from "./postprocess";
import { prefilter } from "./prefilter";
import type { RelatedContextSource } from "./relatedContext";
import { buildRequestBody, requestCompletion, type RequestOutcome } from "./request";
import type { Settings } from "./settings";
import type { StatusController } from "./status";
import type { Clock, CompletionInput, FetchLike, Logger, Suggestion } from "./types";
import type { UsageTracker } from "./usageTracker";

export interface SessionDeps {
  readonly clock: Clock;
  readonly fetch: FetchLike;
  readonly logger: Logger;
  readonly getSettings: () => Settings;
  /** The API key, looked up per request so a new key takes effect at once; never logged. */
  readonly getApiKey: () => Promise<string | undefined>;
  readonly status: StatusController;
  readonly cache?: TypingThroughCache;
  /** The user's typing rhythm, shared across sessions and remembered across restarts by the adapter. */
  readonly rhythm?: TypingRhythm;
  /**
   * Code from the files the user worked in (RecentFiles), for `surrounding_context`; without it only this
   * document's far parts are sent.
   */
  readonly relatedContext?: RelatedContextSource;
  /** Told of every suggestion returned, with its completion id, for usage reports. */
  readonly usage?: UsageTracker;
  /** Called as things happen, for benchmarks and tests that need timings. */
  readonly onEvent?: (event: SessionEvent) => void;
  /**
   * Told when a pause has outlasted the debounce, with the pause's signal (aborted when typing goes on) and when the
   * debounce ran out (`debouncedAt`, the clock's time): the next-edit session asks in the same pause, under the same
   * cancellation, and times its answer from there.
   */
  readonly onPause?: (input: CompletionInput, signal: AbortSignal, debouncedAt: number) => void;
}

export type SessionEvent =
  | { readonly type: "cacheHit"; readonly at: number }
  | { readonly type: "requestStarted"; readonly at: number }
  | { readonly type: "requestEnded"; readonly at: number; readonly outcome: RequestOutcome }
  | { readonly type: "shown"; readonly at: number; readonly suggestion: Suggestion };

/** Running totals since the session started. */
export interface SessionStats {
  provideCalls: number;
  skipped: number;
  cacheHits: number;
  debounceCancelled: number;
  requestsStarted: number;
  requestsCompleted: number;
  requestsAborted: number;
  requestsTimedOut: number;
  requestsFailed: number;
  suggestionsShown: number;
}

/**
 * The inline completion pipeline: one `provide` call per cursor position, read top to bottom in `run`.
 * A newer call aborts the older one, whether it is still waiting out the debounce or already streaming.
 */
export class CompletionSession {
  private readonly cache: TypingThroughCache;
  private readonly rhythm: TypingRhythm;
  private current: AbortController | undefined;
  private readonly counters: SessionStats = {
    provideCalls: 0,
    skipped: 0,
    cacheHits: 0,
    debounceCancelled: 0,
    requestsStarted: 0,
    requestsCompleted: 0,
    requestsAborted: 0,
    requestsTimedOut: 0,
    requestsFailed: 0,
    suggestionsShown: 0,
  };

  constructor(private readonly deps: SessionDeps) {
    this.cache = deps.cache ?? new TypingThroughCache();
    this.rhythm = deps.rhythm ?? new TypingRhythm();
  }

  get stats(): Readonly<SessionStats> {
    return { ...this.counters };
  }

  async provide(input: CompletionInput, signal?: AbortSignal): Promise<Suggestion | undefined> {
    this.counters.provideCalls++;
    this.current?.abort();
    const controller = new AbortController();
    this.current = controller;
    const cancel = () => controller.abort();
    signal?.addEventListener("abort", cancel, { once: true });
    if (signal?.aborted) controller.abort();
    try {
      return await this.run(input, controller.signal);
    } finally {
      signal?.removeEventListener("abort", cancel);
      if (this.current === controller) this.current = undefined;
    }
  }

  /** Forgets shown suggestions, e.g. after the relay or model changed. */
  clearCache(): void {
    this.cache.clear();
  }

  dispose(): void {
    this.current?.abort();
  }

  private async run(input: CompletionInput, signal: AbortSignal): Promise<Suggestion | undefined> {
    const { clock, status } = this.deps;
    const settings = this.deps.getSettings();
    // The keystroke itself, when the adapter saw the edit: VS Code calls the provider some time after it (its own
    // debounce), and that time counts toward the wait rather than being added to it.
    const now = clock.now();
    const pausedAt = input.editedAt !== undefined && input.editedAt <= now ? input.editedAt : now;
    this.rhythm.keystroke(pausedAt);
    const gate = status.gate();
    if (prefilter(input, settings, gate.pause) !== undefined) return this.skip();

    const cursor = cursorText(input);
    const remainder = this.cache.find(input.uri, cursor);
    if (remainder !== undefined) {
      this.counters.cacheHits++;
      this.deps.onEvent?.({ type: "cacheHit", at: clock.now() });
      return this.show(input, remainder.text, true, remainder.id, pausedAt);
    }
    if (gate.blocked !== undefined) return this.skip();

    const debounceMs = settings.adaptiveDebounce ? this.rhythm.waitMs(settings.debounceMs) : settings.debounceMs;
    const wait = Math.max(0, debounceMs - (clock.now() - pausedAt));
    if (!(await debounce(clock, wait, signal))) {
      this.counters.debounceCancelled++;
      return undefined;
    }
    const debouncedAt = clock.now();
    const apiKey = await this.deps.getApiKey();
    if (apiKey === undefined || apiKey === "" || signal.aborted) return this.skip();

    const singleLine = isSingleLineContext(input, cursor);
    const body = buildRequestBody(settings, buildTabContext(input, settings, this.deps.relatedContext));
    this.counters.requestsStarted++;
    this.deps.onEvent?.({ type: "requestStarted", at: clock.now() });
    status.dispatch({ type: "requestStarted" });
    // The ghost text is what the person waits for: its request goes out first (requestCompletion calls fetch before
    // its first await), the pause's next edit after it. A relay that takes requests in arrival order (the local
    // engine computes on one thread) then does not keep the completion behind the next edit: in the real-VS-Code
    // e2e, a first pause's next edit, sent first, took 849 ms and the completion that waited behind it 1,137 ms.
    const answered = requestCompletion(this.deps, {
      relayUrl: settings.relayUrl,
      apiKey,
      body,
      timeoutMs: settings.requestTimeoutMs,
      singleLine,
      signal,
    });
    this.deps.onPause?.(input, signal, debouncedAt);
    const outcome = await answered;
    status.dispatch({
      type: "requestEnded",
      outcome,
      keyWorkspace: await this.keyWorkspaceOf(outcome, settings, apiKey),
    });
    this.count(outcome);
    this.deps.onEvent?.({ type: "requestEnded", at: clock.now(), outcome });

    const text =
      outcome.kind === "ok"
        ? postprocess(outcome.text, {
            before: cursor.before,
            after: cursor.after,
            singleLine,
            minVisibleChars: TAB_DEFAULTS.minVisibleSuggestionLength,
          })
        : undefined;
    this.log(input, body.tab_context.surface, outcome, text, body.tab_context.surrounding_context, pausedAt);
    if (text === undefined) return undefined;
    const id = outcome.kind === "ok" ? outcome.completionId : undefined;
    this.cache.store(input.uri, cursor, text, id);
    return this.show(input, text, false, id, pausedAt);
  }

  private show(
    input: CompletionInput,
    text: string,
    fromCache: boolean,
    id: string | undefined,
    pausedAt: number,
  ): Suggestion | undefined {
    // Remainders served from the cache skip postprocessing, so the minimum is checked here for both paths.
    if (visibleLength(text) < TAB_DEFAULTS.minVisibleSuggestionLength) return undefined;
    const selected = input.selected;
    // With an IntelliSense item selected, ghost text must extend that item and replace the same range.
    const suggestion: Suggestion = selected
      ? { insertText: selected.text + text, start: selected.start, end: selected.end, fromCache }
      : { insertText: text, start: input.offset, end: input.offset, fromCache };
    this.counters.suggestionsShown++;
    this.deps.usage?.offer(suggestion, {
      id,
      uri: input.uri,
      languageId: input.languageId,
      documentOffset: input.documentOffset ?? 0,
      pausedAt,
    });
    this.deps.onEvent?.({ type: "shown", at: this.deps.clock.now(), suggestion });
    return suggestion;
  }

  /**
   * A 401 means a bad key or a key of another workspace (the relay answers both alike); `GET /me` tells them apart,
   * and names the key's workspace, so the status can offer to switch rather than to replace a good key.
   */
  private async keyWorkspaceOf(
    outcome: RequestOutcome,
    settings: Settings,
    apiKey: string,
  ): Promise<{ slug: string; name: string; configured: string } | undefined> {
    if (outcome.kind !== "failed" || outcome.status !== 401) return undefined;
    const check = await checkConnection(this.deps, {
      relayUrl: settings.relayUrl,
      apiKey,
      workspaceSlug: settings.workspaceSlug,
      timeoutMs: settings.requestTimeoutMs,
    });
    if (check.kind !== "wrongWorkspace") return undefined;
    return { ...check.owner.workspace, configured: settings.workspaceSlug };
  }

  private skip(): undefined {
    this.counters.skipped++;
    return undefined;
  }

  private count(outcome: RequestOutcome): void {
    if (outcome.kind === "ok") this.counters.requestsCompleted++;
    else if (outcome.kind === "aborted") this.counters.requestsAborted++;
    else if (outcome.kind === "timeout") this.counters.requestsTimedOut++;
    else this.counters.requestsFailed++;
  }

  private log(
    input: CompletionInput,
    surface: string,
    outcome: RequestOutcome,
    shown: string | undefined,
    context: string | undefined,
    pausedAt: number,
  ): void {
    const where = `${surface} ${input.relativePath ?? input.uri}`;
    const line = `${where}: ${describeOutcome(outcome)}${this.deps.relatedContext ? describeContext(context) : ""}`;
    if (outcome.kind === "failed" || outcome.kind === "unreachable") this.deps.logger.warn(line);
    else if (outcome.kind === "ok") {
      // The person's wait runs from the keystroke VS Code asked about, through the debounce, to the suggestion.
      const waited = this.deps.clock.now() - pausedAt;
      this.deps.logger.info(
        `${line}; ${shown === undefined ? "nothing to show" : `showing ${shown.length} chars, ${waited} ms after the keystroke`}`,
      );
    } else this.deps.logger.info(line);
  }
}

/** Which files' code went with the request, so the log shows what left the machine. */
export function describeContext(context: string | undefined): string {
  if (context === undefined || context === "") return " (no context from other code)";
  const paths = [...new Set(parseSnippets(context).map((snippet) => snippet.path ?? "(no path)"))];
  return ` (context ${context.length} chars from ${paths.join(", ")})`;
}

/** One line per request for the output channel: status, timing, and how it ended. */
export function describeOutcome(outcome: RequestOutcome): string {
  switch (outcome.kind) {
    case "ok": {
      const first = outcome.firstChunkMs === undefined ? "" : `, first chunk ${outcome.firstChunkMs} ms`;
      const ended = outcome.ended === "done" ? "" : ` (${outcome.ended})`;
      return `${outcome.status} in ${outcome.durationMs} ms${first}, ${outcome.text.length} chars${ended}`;
    }
    case "aborted":
      return `aborted after ${outcome.durationMs} ms (typing went on)`;
    case "timeout":
      return `timed out after ${outcome.durationMs} ms`;
    case "unreachable":
      return `relay unreachable after ${outcome.durationMs} ms: ${outcome.message}`;
    case "failed":
      return `${outcome.status ?? "stream"} ${outcome.code} in ${outcome.durationMs} ms: ${outcome.message}`;
  }
}
