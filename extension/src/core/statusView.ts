import type { NoticeKind, StatusKind, StatusModel } from "./status";

export type StatusActionId =
  "enable" | "disable" | "snooze" | "resume" | "setApiKey" | "clearApiKey" | "openSettings" | "showLog" | "retry";

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
  rateLimited: "$(watch) Tab: rate limited",
  unreachable: "$(debug-disconnect) Tab: relay unreachable",
};

export const ACTION_LABELS: Readonly<Record<StatusActionId, string>> = {
  enable: "Enable inline completions",
  disable: "Disable inline completions",
  snooze: "Snooze inline completions…",
  resume: "Resume now",
  setApiKey: "Set API key…",
  clearApiKey: "Clear stored API key",
  openSettings: "Open settings",
  showLog: "Show log",
  retry: "Retry now",
};

export function describeStatus(
  kind: StatusKind,
  model: StatusModel,
  now: number,
  formatTime: (at: number) => string,
): StatusView {
  const text = STATUS_TEXT[kind];
  const problem = model.problem;
  switch (kind) {
    case "ready":
    case "requesting":
      return {
        text,
        tooltip: kind === "ready" ? "Tab: inline completions are on" : "Tab: asking the relay…",
        severity: "normal",
        actions: ["snooze", "disable", "setApiKey", "openSettings", "showLog"],
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
          ? ["setApiKey", "openSettings", "disable", "showLog"]
          : ["openSettings", "setApiKey", "disable", "showLog"],
      };
    }
    case "unauthorized":
      return {
        text,
        tooltip: `Tab: the relay rejected the API key (401)${problem ? `: ${problem.message}` : ""}`,
        severity: "error",
        actions: ["setApiKey", "clearApiKey", "retry", "openSettings", "showLog"],
      };
    case "forbidden":
      return {
        text,
        tooltip: `Tab: the API key may not use this workspace (403)${problem ? `: ${problem.message}` : ""}`,
        severity: "error",
        actions: ["openSettings", "setApiKey", "retry", "showLog"],
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
        tooltip: `Tab: cannot reach the relay${problem ? `: ${problem.message}` : ""}`,
        severity: "error",
        actions: ["retry", "openSettings", "snooze", "showLog"],
      };
  }
}

export interface NoticeView {
  readonly message: string;
  readonly actions: readonly StatusActionId[];
}

/** The one-time message for a new problem; later failures of the same kind only show in the status bar and log. */
export function describeNotice(kind: NoticeKind, detail: string, relayUrl: string): NoticeView {
  switch (kind) {
    case "unauthorized":
      return {
        message: `Tab: the relay rejected the API key (${detail}). Set a valid key to get completions again.`,
        actions: ["setApiKey", "showLog"],
      };
    case "forbidden":
      return {
        message: `Tab: the API key may not be used here (${detail}). Check tabRelay.workspaceSlug and the key's scope.`,
        actions: ["openSettings", "showLog"],
      };
    case "unreachable":
      return {
        message: `Tab: cannot reach the relay at ${relayUrl} (${detail}). Retrying in the background.`,
        actions: ["openSettings", "showLog"],
      };
  }
}
