import { systemClock } from "@tab-relay/shared";
import { CompletionSession } from "../../extension/src/core/completionSession";
import { DEFAULT_SETTINGS, type Settings } from "../../extension/src/core/settings";
import { StatusController, initialStatus } from "../../extension/src/core/status";
import { UsageReporter } from "../../extension/src/core/usageReporter";
import { UsageTracker } from "../../extension/src/core/usageTracker";

export type ReportedUsageEvent = Parameters<UsageReporter["record"]>[0];

/**
 * The extension's core as the extension wires it (completion session, usage tracker and reporter), against a real
 * relay over real HTTP, with a 5 ms debounce. `onEvent` sees each usage event as the tracker hands it to the reporter.
 */
export function realExtensionCore(options: {
  relayUrl: string;
  workspaceSlug: string;
  apiKey: string;
  onEvent?: (event: ReportedUsageEvent) => void;
}): { settings: Settings; session: CompletionSession; tracker: UsageTracker; reporter: UsageReporter } {
  const settings: Settings = {
    ...DEFAULT_SETTINGS,
    relayUrl: options.relayUrl,
    workspaceSlug: options.workspaceSlug,
    debounceMs: 5,
  };
  const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
  const getApiKey = () => Promise.resolve(options.apiKey);
  const fetchLike = (url: string, init: Parameters<typeof fetch>[1]) => fetch(url, init);
  const reporter = new UsageReporter({
    clock: systemClock,
    fetch: fetchLike,
    logger,
    getSettings: () => settings,
    getApiKey,
    telemetryAllowed: () => true,
  });
  const tracker = new UsageTracker({
    clock: systemClock,
    enabled: () => reporter.enabled,
    report: (event) => {
      options.onEvent?.(event);
      reporter.record(event);
    },
  });
  const session = new CompletionSession({
    clock: systemClock,
    fetch: fetchLike,
    logger,
    getSettings: () => settings,
    getApiKey,
    status: new StatusController(systemClock, initialStatus(true, [])),
    usage: tracker,
  });
  return { settings, session, tracker, reporter };
}
