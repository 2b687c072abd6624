/**
 * One replay: a typist types the rest of a document, keystroke by keystroke, through the extension's core
 * `CompletionSession`, against a relay over real HTTP. Calls the session the way the VS Code adapter does
 * (`extension/src/vscode/inlineCompletionProvider.ts`): one `provide` per keystroke with its own cancellation,
 * the previous call cancelled when the next keystroke arrives, and a result dropped when it comes back after that.
 * Records what happened; `typingReport.ts` turns the records into figures.
 */
// The core's files one by one: its index re-exports with `export *`, which Node cannot name from ESM.
import { CompletionSession, type SessionStats } from "../../extension/src/core/completionSession";
import type { TypingRhythm } from "../../extension/src/core/debounce";
import type { RequestOutcome } from "../../extension/src/core/request";
import type { RelatedContextSource } from "../../extension/src/core/relatedContext";
import { DEFAULT_SETTINGS, type Settings } from "../../extension/src/core/settings";
import { StatusController, initialStatus } from "../../extension/src/core/status";
import type { Suggestion } from "../../extension/src/core/types";
import type { ReplayClock } from "./typingClock";
import {
  type Gap,
  type GapKind,
  type TypistModel,
  acceptance,
  nextGap,
  nextKeystroke,
  seededRandom,
} from "./typingTypist";

export interface ReplayOptions {
  readonly relayUrl: string;
  readonly apiKey: string;
  readonly workspaceSlug: string;
  /** The clock the relay runs on too; fresh per run. */
  readonly clock: ReplayClock;
  /** The whole file; the document starts as `text.slice(0, start)` and the typist types up to `end`. */
  readonly text: string;
  readonly start: number;
  readonly end: number;
  readonly path: string;
  readonly languageId: string;
  readonly debounceMs: number;
  readonly typist: TypistModel;
  readonly seed: number;
  /** The typist's rhythm as the extension has learned it; shared across replays like one VS Code across files. */
  readonly rhythm?: TypingRhythm;
  /** The document's URI; by default one under `file:///work/project/`. */
  readonly uri?: string;
  /** Settings that differ from the extension's defaults (the relay, workspace and debounce are set from above). */
  readonly settings?: Partial<Settings>;
  /** Code from other files for `surrounding_context`, as the adapter hands the session a RecentFiles. */
  readonly relatedContext?: RelatedContextSource;
  /** Every change to the document, as VS Code reports it to the adapter: `deleted` characters at `offset` of `text`. */
  readonly onChange?: (change: DocumentChange) => void;
  /** Every request body as it goes on the wire (JSON). */
  readonly onRequest?: (body: string) => void;
}

export interface DocumentChange {
  /** The document before the change. */
  readonly text: string;
  readonly offset: number;
  readonly deleted: number;
  readonly inserted: string;
}

export type ActionKind = "type" | "typo" | "backspace" | "acceptAll" | "acceptLine";

export interface ActionRecord {
  readonly kind: ActionKind;
  /** What the key put into the document ("" for Backspace). */
  readonly text: string;
  readonly at: number;
  /** The wait that followed it, as the typist planned it. */
  gap: Gap;
  /** What the session answered for this keystroke, if anything, and when; undefined when cancelled or empty. */
  shown?: { readonly at: number; readonly fromCache: boolean; readonly chars: number };
}

export interface RequestRecord {
  /** Index of the keystroke whose `provide` call made it. */
  readonly action: number;
  readonly gapKind: GapKind;
  readonly startedAt: number;
  endedAt?: number;
  outcome?: RequestOutcome["kind"];
  status?: number | undefined;
  /** The next keystroke arrived while it was still in flight. */
  supersededInFlight: boolean;
}

export interface ReplayResult {
  readonly actions: readonly ActionRecord[];
  readonly requests: readonly RequestRecord[];
  readonly stats: Readonly<SessionStats>;
  /** The document at the end; equals the target text unless something went wrong. */
  readonly finalText: string;
  readonly target: string;
  /** Virtual time the typing took, and how much of it was skipped as idle. */
  readonly virtualMs: number;
  readonly skippedMs: number;
  /** Requests started while an earlier one had not ended yet. */
  readonly overlapping: number;
  readonly warnings: readonly string[];
}

export async function replayTyping(options: ReplayOptions): Promise<ReplayResult> {
  const { clock, typist } = options;
  const random = seededRandom(options.seed);
  const target = options.text.slice(0, options.end);
  const actions: ActionRecord[] = [];
  const requests: RequestRecord[] = [];
  const open: RequestRecord[] = [];
  const warnings: string[] = [];
  let overlapping = 0;

  const status = new StatusController(clock, initialStatus(true, []));
  const session = new CompletionSession({
    clock,
    fetch: (url, init) => {
      if (init.body !== undefined) options.onRequest?.(init.body);
      return fetch(url, init);
    },
    logger: { info: () => undefined, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) },
    getSettings: () => ({
      ...DEFAULT_SETTINGS,
      ...options.settings,
      relayUrl: options.relayUrl,
      workspaceSlug: options.workspaceSlug,
      debounceMs: options.debounceMs,
    }),
    getApiKey: () => Promise.resolve(options.apiKey),
    status,
    ...(options.rhythm ? { rhythm: options.rhythm } : {}),
    ...(options.relatedContext ? { relatedContext: options.relatedContext } : {}),
    onEvent: (event) => {
      if (event.type === "requestStarted") {
        // A request belongs to the latest keystroke: every older provide call was cancelled before it could send.
        const action = actions.length - 1;
        const record: RequestRecord = {
          action,
          gapKind: actions[action]?.gap.kind ?? "typing",
          startedAt: event.at,
          supersededInFlight: false,
        };
        if (open.length > 0) overlapping++;
        requests.push(record);
        open.push(record);
        clock.beginIo();
      } else if (event.type === "requestEnded") {
        // Requests end in the order they started: a newer one waits out a whole debounce first.
        const record = open.shift();
        if (record) {
          record.endedAt = event.at;
          record.outcome = event.outcome.kind;
          record.status = event.outcome.kind === "failed" ? event.outcome.status : undefined;
        }
        clock.endIo();
      }
    },
  });

  const uri = options.uri ?? `file:///work/project/${options.path}`;
  const title = options.path.slice(options.path.lastIndexOf("/") + 1);
  let doc = options.text.slice(0, options.start);
  let ghost: { text: string; visibleSince: number } | undefined;
  let cancelPrevious: (() => void) | undefined;
  const began = clock.now();

  for (;;) {
    const now = clock.now();
    const key = pickKey();
    if (key === undefined) break;
    const before = ghost;
    const change: DocumentChange =
      key.kind === "backspace"
        ? { text: doc, offset: doc.length - 1, deleted: 1, inserted: "" }
        : { text: doc, offset: doc.length, deleted: 0, inserted: key.text };
    doc = key.kind === "backspace" ? doc.slice(0, -1) : doc + key.text;
    options.onChange?.(change);
    ghost = undefined;
    const action: ActionRecord = { kind: key.kind, text: key.text, at: now, gap: nextGap(random, typist, key.text) };
    const index = actions.push(action) - 1;
    for (const request of open) request.supersededInFlight = true;

    // VS Code cancels the previous provider call's token on the next keystroke and calls the provider again.
    cancelPrevious?.();
    const controller = new AbortController();
    cancelPrevious = () => controller.abort();
    const offset = doc.length;
    void session
      .provide(
        { uri, relativePath: options.path, scheme: "file", languageId: options.languageId, title, text: doc, offset },
        controller.signal,
      )
      .then((suggestion) => {
        if (index !== actions.length - 1 || controller.signal.aborted || suggestion === undefined) return;
        show(action, suggestion, offset, before);
      });
    // After the last keystroke the typist waits one long pause, so the last request is measured too.
    const last = target.length === doc.length;
    if (last) action.gap = { kind: "pause", ms: typist.pauseMaxMs };
    await clock.runUntil(now + action.gap.ms);
    if (last) break;
  }
  await clock.runUntil(clock.now() + 10);
  cancelPrevious?.();
  session.dispose();
  status.dispose();
  await clock.runUntil(clock.now() + 10);

  return {
    actions,
    requests,
    stats: session.stats,
    finalText: doc,
    target,
    virtualMs: clock.now() - began,
    skippedMs: clock.skipped,
    overlapping,
    warnings,
  };

  /** Tab when the ghost text on screen (long enough to be read) is what comes next; else the next key. */
  function pickKey(): { kind: ActionKind; text: string } | undefined {
    if (ghost !== undefined && clock.now() - ghost.visibleSince >= typist.reactionMs && target.startsWith(doc)) {
      const taken = acceptance(ghost.text, target.slice(doc.length));
      if (taken) return { kind: taken.kind === "all" ? "acceptAll" : "acceptLine", text: taken.text };
    }
    const key = nextKeystroke(random, typist, target, doc);
    if (key === undefined) return undefined;
    if (key.kind === "backspace") return { kind: "backspace", text: "" };
    return { kind: key.typo ? "typo" : "type", text: key.text };
  }

  function show(action: ActionRecord, suggestion: Suggestion, offset: number, before: typeof ghost): void {
    if (suggestion.start !== offset || suggestion.end !== offset) {
      warnings.push(
        `suggestion replaces [${suggestion.start}, ${suggestion.end}) at offset ${offset}; the typist cannot judge it`,
      );
      return;
    }
    const at = clock.now();
    action.shown = { at, fromCache: suggestion.fromCache, chars: suggestion.insertText.length };
    // Typing through a suggestion keeps it on screen: the typist has been reading it all along.
    const continued =
      suggestion.fromCache && before !== undefined && before.text === action.text + suggestion.insertText;
    ghost = { text: suggestion.insertText, visibleSince: continued ? before.visibleSince : at };
  }
}
