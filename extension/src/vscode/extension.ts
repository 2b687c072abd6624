// The composition root: the only place that builds real effects (clock, fetch, environment) and wires the core
// pipeline to VS Code.
import { systemClock } from "@tab-relay/shared";
import * as vscode from "vscode";
import {
  checkConnection,
  CompletionSession,
  NextEditSession,
  NextEditUsage,
  RecentFiles,
  StatusController,
  TypingRhythm,
  UsageReporter,
  UsageTracker,
  initialStatus,
  missingConfiguration,
  warmUp,
  type FetchLike,
  type Settings,
} from "../core";
import { ApiKeyStore } from "./apiKeySecret";
import { describeKeySource, registerCommands } from "./commands";
import { createInlineCompletionProvider, trackEditTimes } from "./inlineCompletionProvider";
import { NextEditPresenter } from "./nextEditPresenter";
import { feedRecentFiles } from "./recentFilesFeed";
import { onSettingsChanged, readSettings } from "./settings";
import { COMMANDS, StatusBar, showNotice } from "./statusBar";
import { feedUsage, telemetryAllowed } from "./usageFeed";
import { createLoopbackFetch } from "./loopbackFetch";

/** Where the learned typing rhythm is remembered, so adaptive debounce works from the first keystroke after a restart. */
const RHYTHM_KEY = "tabRelay.typingGaps";
const RHYTHM_SAVE_MS = 60_000;
/** Remembered once the first-run notification was shown, so it shows once per installation. */
const WELCOMED_KEY = "tabRelay.welcomed";

/** Sends the usage events still queued; VS Code waits for it on deactivate. */
let flushUsage: (() => Promise<void>) | undefined;
/** Closes the connections kept to a relay on this machine, once the last usage batch is sent. */
let closeTransport: (() => void) | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  // The output channel goes by the extension's one name (package.json's displayName), as its commands do.
  const log = vscode.window.createOutputChannel(
    (context.extension.packageJSON as { displayName: string }).displayName,
    {
      log: true,
    },
  );
  // One transport for every relay call: a relay on this machine over one kept connection (loopbackFetch.ts), any
  // other through the global fetch, looked up at each call (VS Code's extension host patches it for proxies: see
  // core/warmUp.ts).
  const transport = createLoopbackFetch((url, init) => fetch(url, init));
  closeTransport = () => transport.dispose();
  const relayFetch: FetchLike = transport.fetch;
  const apiKeys = new ApiKeyStore(context.secrets, process.env.TAB_RELAY_API_KEY);
  let settings: Settings = readSettings().settings;
  // An unreachable relay is asked again on the backoff schedule with the cheapest authenticated call there is, so
  // the status returns to "on" by itself once the relay answers, without waiting for a keystroke.
  const probe = async () => {
    const apiKey = await apiKeys.get();
    const check = await checkConnection(
      { fetch: relayFetch, clock: systemClock },
      { ...settings, apiKey: apiKey ?? "", timeoutMs: settings.requestTimeoutMs },
    );
    const reachable = check.kind !== "unreachable";
    log.info(
      `relay ${reachable ? "answers again" : `still unreachable (${check.kind === "unreachable" ? check.message : ""})`}`,
    );
    return { reachable, message: check.kind === "unreachable" ? check.message : "" };
  };
  const status = new StatusController(systemClock, initialStatus(settings.enabled, []), probe);
  const rhythm = new TypingRhythm(context.globalState.get<number[]>(RHYTHM_KEY) ?? []);
  const saveRhythm = () => void context.globalState.update(RHYTHM_KEY, rhythm.learned());
  const rhythmTimer = setInterval(saveRhythm, RHYTHM_SAVE_MS);
  const recentFiles = new RecentFiles(systemClock);
  const recentFilesFeed = feedRecentFiles(recentFiles, () => settings, log);
  let deactivating = false;
  const reporter = new UsageReporter({
    clock: systemClock,
    fetch: relayFetch,
    logger: log,
    getSettings: () => settings,
    getApiKey: () => (deactivating ? Promise.resolve(apiKeys.remembered) : apiKeys.get()),
    telemetryAllowed,
  });
  const usage = new UsageTracker({
    clock: systemClock,
    enabled: () => reporter.enabled,
    report: (event) => reporter.record(event),
  });
  const nextEditUsage = new NextEditUsage({
    clock: systemClock,
    enabled: () => reporter.enabled,
    report: (event) => reporter.record(event),
  });
  flushUsage = async () => {
    deactivating = true;
    usage.flush();
    nextEditUsage.flush();
    await reporter.flush();
  };
  const nextEdits = new NextEditPresenter(
    new NextEditSession({
      clock: systemClock,
      fetch: relayFetch,
      logger: log,
      getSettings: () => settings,
      getApiKey: () => apiKeys.current(),
      files: recentFiles,
    }),
    log,
    nextEditUsage,
  );
  const session = new CompletionSession({
    clock: systemClock,
    fetch: relayFetch,
    logger: log,
    getSettings: () => settings,
    getApiKey: () => apiKeys.current(),
    status,
    rhythm,
    relatedContext: recentFiles,
    usage,
    onPause: (input, signal, debouncedAt) => nextEdits.onPause(input, signal, debouncedAt),
  });

  /** The relay URL the warm-up last ran for. */
  let warmedFor: string | undefined;
  /** Re-reads settings and the key; a new relay, workspace, model or key clears old errors and suggestions. */
  const sync = async (keyChanged: boolean) => {
    const parsed = readSettings();
    for (const problem of parsed.problems) log.warn(`ignored invalid setting ${problem}`);
    const previous = settings;
    settings = parsed.settings;
    if (previous.excludeGlobs.join("\n") !== settings.excludeGlobs.join("\n")) recentFilesFeed.excludesChanged();
    const languages = (x: Settings) => `${x.enabledLanguages.join(",")} ${x.disabledLanguages.join(",")}`;
    if (languages(previous) !== languages(settings)) recentFilesFeed.languagesChanged();
    const hasKey = (await apiKeys.get()) !== undefined;
    const missing = missingConfiguration(settings, hasKey);
    status.dispatch({ type: "configured", enabled: settings.enabled, missing });
    // Once there is a relay to ask, the first pause's costs are paid now, after activation, rather than by it.
    if (settings.enabled && missing.length === 0 && warmedFor !== settings.relayUrl) {
      warmedFor = settings.relayUrl;
      const warmTarget = { ...settings, timeoutMs: settings.requestTimeoutMs };
      setTimeout(() => void warmUp({ fetch: relayFetch, clock: systemClock }, warmTarget), 0);
    }
    const target = (s: Settings) => `${s.relayUrl} ${s.workspaceSlug} ${s.model}`;
    if (keyChanged || target(previous) !== target(settings)) {
      status.dispatch({ type: "credentialsChanged" });
      session.clearCache();
    }
    const source = await apiKeys.source();
    void vscode.commands.executeCommand("setContext", "tabRelay.keyStored", source === "secret storage");
    statusBar.render();
    log.info(
      `relay ${settings.relayUrl}, workspace "${settings.workspaceSlug}", model ${settings.model}, ${describeKeySource(source)}`,
    );
  };
  const statusBar = new StatusBar(
    status,
    () => systemClock.now(),
    () => settings,
  );
  await sync(false);
  const editTimes = trackEditTimes(() => systemClock.now());
  const unsubscribeNotices = status.onNotice((notice) => void showNotice(notice, settings.relayUrl));
  context.subscriptions.push(
    log,
    apiKeys,
    statusBar,
    recentFilesFeed,
    nextEdits,
    vscode.languages.registerInlineCompletionItemProvider(
      [{ pattern: "**" }, { scheme: "untitled" }, { scheme: "vscode-scm" }],
      createInlineCompletionProvider(session, usage, editTimes, nextEdits),
    ),
    editTimes,
    ...registerCommands({ clock: systemClock, status, apiKeys, log, statusBar, getSettings: () => settings }),
    ...feedUsage(usage),
    onSettingsChanged(() => void sync(false)),
    apiKeys.onDidChange(() => void sync(true)),
    {
      dispose: () => {
        clearInterval(rhythmTimer);
        saveRhythm();
        unsubscribeNotices();
        session.dispose();
        reporter.dispose();
        status.dispose();
      },
    },
  );

  if (status.kind === "notConfigured" && !context.globalState.get<boolean>(WELCOMED_KEY)) {
    void context.globalState.update(WELCOMED_KEY, true);
    void vscode.window
      .showInformationMessage(
        "Tab Relay shows inline completions from your team's tab-relay server. Set it up: the relay's URL, your workspace and your API key.",
        "Set up…",
      )
      .then((choice) => (choice === undefined ? undefined : vscode.commands.executeCommand(COMMANDS.setup)));
  }
}

export async function deactivate(): Promise<void> {
  await flushUsage?.();
  flushUsage = undefined;
  closeTransport?.();
  closeTransport = undefined;
}
