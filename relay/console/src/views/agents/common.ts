/** What the agents list and one agent's view share: paths, the state badge, owner names, coalesced refreshes. */
import { h } from "../../dom";
import { app } from "../../state";
import type { Agent, User } from "@tab-relay/shared/api";

export function agentPath(id: string): string {
  return `/agents/${encodeURIComponent(id)}`;
}

export function stateBadge(state: Agent["state"]): HTMLSpanElement {
  return h("span", { class: `badge state-${state}`, "data-testid": "agent-state", "data-state": state }, state === "active" ? "Active" : "Paused");
}

export function ownerName(agent: Agent, users: User[]): string {
  if (agent.owner_user_id === app.session?.user.id) return "you";
  return users.find((u) => u.id === agent.owner_user_id)?.name ?? agent.owner_user_id;
}

export interface Refresher {
  now(): Promise<void>;
  soon(delayMs?: number): void;
  cancel(): void;
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
