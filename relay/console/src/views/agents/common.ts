/** What the agents list and one agent's view share: paths, the state badge, owner names, coalesced refreshes. */
import { formatTime, h } from "../../dom";
import { app } from "../../state";
import type { Agent, Delivery, DeliveryAttempt, User } from "@tab-relay/shared/api";

export function agentPath(id: string): string {
  return `/agents/${encodeURIComponent(id)}`;
}

export function stateBadge(state: Agent["state"]): HTMLSpanElement {
  return h(
    "span",
    { class: `badge state-${state}`, "data-testid": "agent-state", "data-state": state },
    state === "active" ? "Active" : "Paused",
  );
}

/**
 * How delivery goes, beside the state (an active agent may fail every delivery): the last attempt's outcome and, when
 * the log was read, how many attempts in a row failed (counted as far back as the log that was read goes: `more` marks
 * a count that reached its end).
 */
export function healthBadge(
  last: DeliveryAttempt | null | undefined,
  failures?: { count: number; more: boolean },
): HTMLSpanElement {
  const attrs = { "data-testid": "delivery-health", "data-failures": failures ? String(failures.count) : null };
  if (!last) return h("span", { ...attrs, class: "badge health-none", "data-health": "none" }, "No deliveries yet");
  const when = `Last attempt ${formatTime(last.at)}`;
  if (last.outcome === "success")
    return h("span", { ...attrs, class: "badge health-ok", "data-health": "ok", title: when }, "Last delivery OK");
  const why = last.error ?? (last.status_code !== null ? `HTTP ${last.status_code}` : "failed");
  const row = failures && failures.count > 1 ? ` · ${failures.count}${failures.more ? "+" : ""} in a row` : "";
  return h(
    "span",
    { ...attrs, class: "badge health-failing", "data-health": "failing", title: `${when}: ${why}` },
    `Last delivery failed${row}`,
  );
}

/** The newest attempt in a delivery log and the failed attempts in a row up to it. */
export function deliveryHealth(
  deliveries: Delivery[],
  logIsFull: boolean,
): { last: DeliveryAttempt | null; failures: { count: number; more: boolean } } {
  const attempts = deliveries
    .flatMap((d) => d.attempts)
    .sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : b.attempt - a.attempt));
  let count = 0;
  while (count < attempts.length && attempts[count]?.outcome === "failed") count += 1;
  return { last: attempts[0] ?? null, failures: { count, more: count === attempts.length && count > 0 && logIsFull } };
}

export function ownerName(agent: Agent, users: User[]): string {
  if (agent.owner_user_id === app.session?.user.id) return "you";
  return users.find((u) => u.id === agent.owner_user_id)?.name ?? agent.owner_user_id;
}

export interface Refresher {
  now: () => Promise<void>;
  soon: (delayMs?: number) => void;
  cancel: () => void;
}

/** Coalesces refreshes: live updates come in bursts, and one fetch after the burst is enough. */
export function refresher(run: () => Promise<void>): Refresher {
  let running: Promise<void> | null = null;
  let again = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  function now(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = run().finally(() => {
      running = null;
      if (again) {
        again = false;
        void now();
      }
    });
    return running;
  }
  return {
    now,
    soon(delayMs = 200): void {
      clearTimeout(timer);
      timer = setTimeout(() => void now(), delayMs);
    },
    cancel(): void {
      clearTimeout(timer);
    },
  };
}

/** What the parts of a managed agent's view need from the view around them. */
export interface AgentContext {
  /** The agent's API path, `/agents/{id}`. */
  base: string;
  /** The name the view shows now (it follows renames). */
  name(): string;
  /** Shows an agent the API returned (after pause or resume) in every part at once. */
  show(agent: Agent): void;
  refresh: Refresher;
}
