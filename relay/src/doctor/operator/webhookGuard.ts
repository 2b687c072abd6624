import { type OperatorConfig, isLoopbackHost } from "../../config";
import { ALLOW_PRIVATE_VARIABLE, webhookUrlProblem } from "../../delivery/addresses";
import type { DoctorCheck } from "../checks";
import type { AgentWebhook } from "./probes";
import { operatorResult } from "./result";

/** Whether only this machine reaches the relay: it listens on loopback and no public URL says otherwise. */
function localOnly(config: Pick<OperatorConfig, "host" | "publicUrl">): boolean {
  if (!isLoopbackHost(config.host)) return false;
  if (config.publicUrl === undefined) return true;
  return isLoopbackHost(new URL(config.publicUrl).hostname.replace(/^\[(.*)\]$/, "$1"));
}

/**
 * The webhook guard (delivery/addresses.ts): webhook URLs must be https and reach public addresses only.
 * TAB_RELAY_WEBHOOK_ALLOW_PRIVATE lifts it for agents on the same machine; on a relay others reach, it lets anyone
 * who may create an agent make the relay send requests into its own network.
 */
export function webhookGuardCheck(
  config: Pick<OperatorConfig, "host" | "publicUrl" | "webhookAllowPrivate">,
  webhooks: () => Promise<AgentWebhook[] | undefined> = async () => undefined,
): DoctorCheck {
  const name = "webhook guard";
  const label = "Webhooks";
  return {
    name,
    async run() {
      const details = { allow_private: config.webhookAllowPrivate };
      if (!config.webhookAllowPrivate) {
        // An agent made while the guard was lifted gets every delivery refused once the relay runs without it.
        const listed = await webhooks().catch(() => undefined);
        const refused = (listed ?? []).flatMap((agent) => {
          const problem = webhookUrlProblem(agent.url, false);
          return problem === undefined ? [] : [{ ...agent, problem }];
        });
        if (refused.length > 0)
          return operatorResult(name, label, {
            status: "warn",
            summary: `${refused.length} agent${refused.length === 1 ? "'s" : "s'"} webhook URL will be refused, so every delivery to ${refused.length === 1 ? "it" : "them"} fails`,
            notes: refused.map(
              (agent) => `${agent.name} (${agent.id}, workspace ${agent.workspace}): ${agent.problem}`,
            ),
            todo: [
              `for an agent on this machine or a private network, run the relay with ${ALLOW_PRIVATE_VARIABLE}=true; otherwise give the agent an https URL on a public address, or connect it through Socket Mode`,
            ],
            details: { ...details, refused: refused.map(({ id, url }) => ({ id, url })) },
          });
        return operatorResult(name, label, {
          status: "ok",
          summary:
            "webhook URLs must be https and reach public addresses (private, loopback and link-local ones are refused)",
          details,
        });
      }
      if (localOnly(config)) {
        return operatorResult(name, label, {
          status: "ok",
          summary:
            "TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true, on a relay only this machine reaches: fine for agents developed here",
          details,
        });
      }
      return operatorResult(name, label, {
        status: "warn",
        summary: "TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true on a relay other machines reach",
        notes: [
          "anyone who may create an agent can make the relay send requests to private addresses (a cloud metadata service at 169.254.169.254, the database, Redis, admin consoles) and over plain http",
        ],
        todo: [
          "unset TAB_RELAY_WEBHOOK_ALLOW_PRIVATE (or set it to false); an agent inside your network can connect out through Socket Mode instead",
        ],
        details,
      });
    },
  };
}
