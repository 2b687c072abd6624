import type { api } from "../../api";
import type { showError } from "../../dom";
import type { Session } from "@tab-relay/shared/api";

/**
 * What the console lends the Insights bundle: its one API client (with the session's CSRF token and sign-out on 401)
 * and its error wording, so the second bundle holds no copy of either's state.
 */
export interface InsightsHost {
  api: typeof api;
  showError: typeof showError;
  session: Session;
}

export interface InsightsModule {
  /** Fills the page with the view; the returned function stops it (the view was left). */
  render(page: HTMLElement, host: InsightsHost): () => void;
}

declare global {
  interface Window {
    tabRelayInsights?: InsightsModule;
  }
}
