import type { NoticeKind, StatusKind, StatusModel } from "./status";

export type StatusActionId =
  | "enable"
  | "disable"
  | "snooze"
  | "resume"
  | "setup"
  | "setApiKey"
  | "clearApiKey"
  | "openSettings"
  | "showLog"
  | "retry"
  | "useKeyWorkspace"
  | "disableLanguage"
  | "enableLanguage";

/** Why the file in the active editor gets no suggestions although completions are on, shown in the status. */
export interface ActiveEditorInfo {
  /** The language's name as people say it ("TypeScript"), for the status and the per-language switch. */
  readonly languageName: string;
  /** `excluded`: `tabRelay.excludeGlobs` covers it; `language`: its language is switched off. */
  readonly off: "excluded" | "language" | undefined;
  /** The file's name, as the status names an excluded file. */
  readonly fileName: string;
}

export interface StatusView {
  /** Status bar text with a codicon; distinct per state so people (and the e2e test) can tell them apart. */
  readonly text: string;
  readonly tooltip: string;
  readonly severity: "normal" | "warning" | "error";
  /** What clicking the item offers, most useful first. */
  readonly actions: readonly StatusActionId[];
}

export const STATUS_TEXT: Readonly<Record<StatusKind, string>> = {
  ready: "$(sparkle) Tab",
  requesting: "$(loading~spin) Tab",
  disabled: "$(circle-slash) Tab: off",
  snoozed: "$(debug-pause) Tab: snoozed",
  notConfigured: "$(gear) Tab: set up",
  unauthorized: "$(error) Tab: unauthorized",
  forbidden: "$(error) Tab: forbidden",
  wrongWorkspace: "$(error) Tab: wrong workspace",
  rateLimited: "$(watch) Tab: rate limited",
  unreachable: "$(debug-disconnect) Tab: relay unreachable",
  timingOut: "$(watch) Tab: relay not answering",
};

export const ACTION_LABELS: Readonly<Record<StatusActionId, string>> = {
  enable: "Enable inline completions",
  disable: "Disable inline completions",
  snooze: "Snooze inline completions…",
  resume: "Resume now",
  setup: "Set up (relay, workspace, key)…",
  setApiKey: "Set API key…",
  clearApiKey: "Clear stored API key",
  openSettings: "Open settings",
  showLog: "Show log",
  retry: "Retry now",
  useKeyWorkspace: "Use the key's workspace",
  disableLanguage: "Disable for this language",
  enableLanguage: "Enable for this language",
};

/** The label of an action in the status menu, naming the active editor's language where it is about one. */
export function actionLabel(id: StatusActionId, editor?: ActiveEditorInfo): string {
  if (editor !== undefined && id === "disableLanguage") return `Disable for ${editor.languageName}`;
  if (editor !== undefined && id === "enableLanguage") return `Enable for ${editor.languageName}`;
  return ACTION_LABELS[id];
}

export function describeStatus(
  kind: StatusKind,
  model: StatusModel,
  now: number,
  formatTime: (at: number) => string,
  editor?: ActiveEditorInfo,
): StatusView {
  const text = STATUS_TEXT[kind];
  const problem = model.problem;
  const languageSwitch: StatusActionId[] = editor === undefined ? [] : ["disableLanguage"];
  if ((kind === "ready" || kind === "requesting" || kind === "timingOut") && editor?.off !== undefined) {
    const excluded = editor.off === "excluded";
    return {
      text: excluded
        ? `$(circle-slash) Tab: off for ${editor.fileName} (excluded)`
        : `$(circle-slash) Tab: off for ${editor.languageName}`,
      tooltip: excluded
        ? `Tab: no suggestions in ${editor.fileName}: tabRelay.excludeGlobs covers it, so it is never sent to the relay`
        : `Tab: no suggestions in ${editor.languageName} files: the language is switched off (tabRelay.disabledLanguages or tabRelay.enabledLanguages)`,
      severity: "normal",
      actions: excluded
        ? ["openSettings", "snooze", "disable", "showLog"]
        : ["enableLanguage", "snooze", "disable", "openSettings", "showLog"],
    };
  }
  switch (kind) {
    case "ready":
    case "requesting":
      return {
        text,
        tooltip: kind === "ready" ? "Tab: inline completions are on" : "Tab: asking the relay…",
        severity: "normal",
        actions: ["snooze", ...languageSwitch, "disable", "setup", "openSettings", "showLog"],
      };
    case "timingOut":
      return {
        text,
        tooltip: `Tab: the last ${model.timeoutStreak} requests got no answer in time (tabRelay.requestTimeoutMilliseconds); the relay or its model server may be overloaded or hung`,
        severity: "warning",
        actions: ["showLog", "snooze", ...languageSwitch, "disable", "openSettings"],
      };
    case "disabled":
      return {
        text,
        tooltip: "Tab: inline completions are off",
        severity: "normal",
        actions: ["enable", "openSettings", "showLog"],
      };
    case "snoozed":
      return {
        text,
        tooltip: `Tab: snoozed until ${formatTime(model.snoozedUntil ?? now)}`,
        severity: "normal",
        actions: ["resume", "snooze", "disable", "showLog"],
      };
    case "notConfigured": {
      const needsKey = model.missing.includes("API key");
      return {
        text,
        tooltip: `Tab: missing ${model.missing.join(", ")}`,
        severity: "warning",
        actions: needsKey
          ? ["setup", "setApiKey", "openSettings", "disable", "showLog"]
          : ["setup", "openSettings", "setApiKey", "disable", "showLog"],
      };
    }
    case "unauthorized":
      return {
        text,
        tooltip: `Tab: the relay rejected the API key (401)${problem ? `: ${problem.message}` : ""}`,
        severity: "error",
        actions: ["setApiKey", "setup", "clearApiKey", "retry", "showLog"],
      };
    case "wrongWorkspace": {
      const belongs = problem?.kind === "wrongWorkspace" ? problem : undefined;
      return {
        text,
        tooltip: belongs
          ? `Tab: the API key belongs to workspace ${belongs.keyWorkspace.slug}, not ${belongs.configured} (tabRelay.workspaceSlug)`
          : "Tab: the API key belongs to another workspace",
        severity: "error",
        actions: ["useKeyWorkspace", "setup", "openSettings", "showLog"],
      };
    }
    case "forbidden":
      return {
        text,
        tooltip: `Tab: the API key may not use this workspace (403)${problem ? `: ${problem.message}` : ""}`,
        severity: "error",
        actions: ["setup", "openSettings", "setApiKey", "retry", "showLog"],
      };
    case "rateLimited": {
      const until = problem?.kind === "rateLimited" ? problem.until : now;
      return {
        text,
        tooltip: `Tab: rate limited (429); resumes by itself at ${formatTime(until)}`,
        severity: "warning",
        actions: ["snooze", "disable", "showLog"],
      };
    }
    case "unreachable":
      return {
        text,
        tooltip: `Tab: cannot reach the relay${problem ? `: ${problem.message}` : ""}; asking it again in the background`,
        severity: "error",
        actions: ["retry", "setup", "openSettings", "snooze", "showLog"],
      };
  }
}

export interface NoticeView {
  readonly message: string;
  readonly actions: readonly StatusActionId[];
}

/** The one-time message for a new problem; later failures of the same kind only show in the status bar and log. */
export function describeNotice(
  kind: NoticeKind,
  detail: string,
  relayUrl: string,
  keyWorkspace?: { readonly slug: string; readonly name: string },
  configured?: string,
): NoticeView {
  switch (kind) {
    case "unauthorized":
      return {
        message: `Tab Relay: the relay rejected the API key (${detail}). Set a valid key to get completions again.`,
        actions: ["setApiKey", "setup", "showLog"],
      };
    case "wrongWorkspace": {
      const owner = keyWorkspace
        ? keyWorkspace.name === keyWorkspace.slug
          ? `workspace ${keyWorkspace.slug}`
          : `workspace ${keyWorkspace.name} (${keyWorkspace.slug})`
        : "another workspace";
      return {
        message: `Tab Relay: your API key belongs to ${owner}, not "${configured ?? "?"}" (tabRelay.workspaceSlug). Switch to ${keyWorkspace?.slug ?? "the key's workspace"}, or set up another key.`,
        actions: ["useKeyWorkspace", "setup"],
      };
    }
    case "forbidden":
      return {
        message: `Tab Relay: the API key may not be used for completions (${detail}). Its scopes need tab.complete.`,
        actions: ["setup", "showLog"],
      };
    case "unreachable":
      return {
        message: `Tab Relay: cannot reach the relay at ${relayUrl} (${detail}). Retrying in the background.`,
        actions: ["setup", "openSettings", "showLog"],
      };
  }
}
