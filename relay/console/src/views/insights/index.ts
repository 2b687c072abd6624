/** The Insights page in the main bundle: only a loader; the view and its charting library are insights.js. */
import { api } from "../../api";
import { errorSlot, h, showError } from "../../dom";
import { app } from "../../state";
import type { View } from "../view";
import type { InsightsModule } from "./host";

let loading: Promise<InsightsModule> | null = null;

/** Adds insights.js once (a script from 'self', as the CSP allows); a failed load may be tried again. */
function loadInsights(): Promise<InsightsModule> {
  loading ??= new Promise<InsightsModule>((resolve, reject) => {
    const script = document.createElement("script");
    script.src = "/insights.js";
    script.addEventListener("load", () => {
      if (window.tabRelayInsights) resolve(window.tabRelayInsights);
      else reject(new Error("The Insights view did not start. Reload the page to try again."));
    });
    script.addEventListener("error", () => {
      script.remove();
      loading = null;
      reject(new Error("Could not load the Insights view. Check the connection and reload the page."));
    });
    document.head.append(script);
  });
  return loading;
}

export function insightsView(): View {
  const heading = h("h1", { tabindex: "-1" }, "Insights");
  const loadingNote = h("p", { class: "muted" }, "Loading…");
  const error = errorSlot();
  const page = h("div", { class: "page insights", "data-testid": "insights" }, heading, loadingNote, error);
  let stop: (() => void) | null = null;
  let left = false;
  void loadInsights().then(
    (module) => {
      loadingNote.remove();
      const session = app.session;
      if (left || !session) return;
      stop = module.render(page, { api, showError, session });
    },
    (failure: unknown) => {
      loadingNote.remove();
      showError(error, failure);
    },
  );
  return {
    title: "Insights",
    element: page,
    focusTarget: heading,
    dispose: () => {
      left = true;
      stop?.();
    },
  };
}
