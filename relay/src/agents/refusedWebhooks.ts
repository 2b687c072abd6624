import { webhookUrlProblem } from "../delivery/addresses";
import type { Store } from "../store/types";

export interface RefusedWebhook {
  workspace: string;
  agent: { id: string; name: string };
  url: string;
  problem: string;
}

/**
 * The agents whose webhook URL this relay's guard refuses (an agent made while TAB_RELAY_WEBHOOK_ALLOW_PRIVATE was
 * true, on a relay restarted without it): each of their deliveries would fail until the setting or the URL changes.
 * Paused agents count too, as they get deliveries again once resumed.
 */
export async function refusedWebhooks(store: Store, allowPrivate: boolean): Promise<RefusedWebhook[]> {
  if (allowPrivate) return [];
  const refused: RefusedWebhook[] = [];
  for (const workspace of await store.workspaces.list()) {
    for (const agent of await store.agents.list(workspace.id)) {
      if (agent.webhook_url === null) continue;
      const problem = webhookUrlProblem(agent.webhook_url, false);
      if (problem !== undefined)
        refused.push({
          workspace: workspace.slug,
          agent: { id: agent.id, name: agent.name },
          url: agent.webhook_url,
          problem,
        });
    }
  }
  return refused;
}

/** One warning line for a refused webhook: whose, why, and what to do. */
export function refusedWebhookWarning(refused: RefusedWebhook): string {
  return `agent ${refused.agent.name} (${refused.agent.id}, workspace ${refused.workspace}): its webhook URL ${refused.url} will be refused, so every delivery to it fails. ${refused.problem} Otherwise give it an https URL on a public address, or connect it through Socket Mode`;
}
