/** The agent's delivery log: recent events with every attempt, and redelivery. */
import { api } from "../../api";
import { announce, busy, clearError, errorSlot, h, replaceKeepingFocus, showError, timeEl } from "../../dom";
import type { Delivery, DeliveryAttempt } from "@tab-relay/shared/api";
import type { AgentContext } from "./common";

export const DELIVERY_LIMIT = 20;

function attemptRow(attempt: DeliveryAttempt): HTMLTableRowElement {
  const excerpt = attempt.response_excerpt;
  return h(
    "tr",
    { "data-testid": "attempt", "data-outcome": attempt.outcome },
    h("td", { "data-label": "#" }, String(attempt.attempt)),
    h("td", { "data-label": "Trigger" }, attempt.trigger),
    h("td", { "data-label": "Time" }, timeEl(attempt.at)),
    h(
      "td",
      { class: `outcome-${attempt.outcome}`, "data-label": "Result" },
      `${attempt.outcome === "success" ? "Success" : "Failed"}${attempt.status_code !== null ? ` · ${attempt.status_code}` : ""}`,
      attempt.error ? h("div", { class: "small" }, attempt.error) : null,
    ),
    h("td", { "data-label": "Duration" }, `${attempt.duration_ms} ms`),
    h(
      "td",
      { class: "excerpt", "data-label": "Response" },
      excerpt.length > 60
        ? h("details", null, h("summary", null, `${excerpt.slice(0, 40)}…`), h("pre", null, excerpt))
        : excerpt
          ? h("code", null, excerpt)
          : "–",
    ),
    h("td", { "data-label": "Next retry" }, attempt.next_attempt_at ? timeEl(attempt.next_attempt_at) : "–"),
  );
}

export function deliveriesPart(context: AgentContext): { element: HTMLElement; load(): Promise<Delivery[] | null> } {
  const { base, refresh } = context;
  const deliveriesError = errorSlot();
  const deliveryList = h("ol", { class: "deliveries", "data-testid": "delivery-list" });
  const deliveryErrors = new Map<string, unknown>();

  function deliveryItem(delivery: Delivery): HTMLLIElement {
    const redeliver = h(
      "button",
      { type: "button", "data-testid": "redeliver", "data-focus-key": `redeliver:${delivery.id}` },
      "Redeliver",
    );
    const error = errorSlot();
    const stored = deliveryErrors.get(delivery.id);
    if (stored) showError(error, stored);
    redeliver.addEventListener("click", () => {
      clearError(error);
      deliveryErrors.delete(delivery.id);
      void busy(redeliver, async () => {
        await api("POST", `${base}/deliveries/${encodeURIComponent(delivery.id)}/redeliver`);
        announce("Redelivery started");
        await refresh.now();
      }).catch((failure: unknown) => {
        deliveryErrors.set(delivery.id, failure);
        showError(error, failure);
      });
    });
    const attempts = [...delivery.attempts].sort((a, b) => a.attempt - b.attempt);
    return h(
      "li",
      {
        class: "delivery",
        "data-testid": "delivery",
        "data-delivery-id": delivery.id,
        "data-status": delivery.status,
        "data-event-type": delivery.event_type,
      },
      h(
        "div",
        { class: "delivery-head" },
        h("strong", null, delivery.event_type),
        h("span", { class: `badge status-${delivery.status}`, "data-testid": "delivery-status" }, delivery.status),
        h("code", { class: "small" }, delivery.id),
        h("span", { class: "muted small" }, "queued ", timeEl(delivery.created_at)),
        delivery.next_attempt_at && delivery.status === "pending"
          ? h("span", { class: "small" }, "next attempt ", timeEl(delivery.next_attempt_at))
          : null,
        redeliver,
      ),
      attempts.length
        ? h(
            "div",
            { class: "table-wrap" },
            h(
              "table",
              { class: "attempts" },
              h("caption", { class: "sr-only" }, `Attempts for ${delivery.event_type} ${delivery.id}`),
              h(
                "thead",
                null,
                h(
                  "tr",
                  null,
                  ["#", "Trigger", "Time", "Result", "Duration", "Response", "Next retry"].map((label) =>
                    h("th", { scope: "col" }, label),
                  ),
                ),
              ),
              h("tbody", null, attempts.map(attemptRow)),
            ),
          )
        : h("p", { class: "muted small" }, "No attempts yet."),
      error,
    );
  }

  const element = h(
    "section",
    { "aria-labelledby": "agent-deliveries-h", "data-testid": "deliveries" },
    h("h2", { id: "agent-deliveries-h" }, "Recent deliveries"),
    deliveriesError,
    deliveryList,
  );
  return {
    element,
    async load(): Promise<Delivery[] | null> {
      try {
        const deliveries = await api<Delivery[]>("GET", `${base}/deliveries`, { query: { limit: DELIVERY_LIMIT } });
        clearError(deliveriesError);
        replaceKeepingFocus(
          deliveryList,
          ...(deliveries.length
            ? deliveries.map(deliveryItem)
            : [h("li", { class: "muted" }, "No deliveries yet. Send a test event to try the connection.")]),
        );
        return deliveries;
      } catch (failure) {
        showError(deliveriesError, failure);
        return null;
      }
    },
  };
}
