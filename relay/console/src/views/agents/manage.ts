/** What the agent's owner, an admin or the workspace owner sees: connection, actions, deliveries, edit and remove. */
import { h } from "../../dom";
import type { Agent, Delivery } from "@tab-relay/shared/api";
import { actionsPart } from "./actions";
import type { AgentContext } from "./common";
import { connectionPart } from "./connection";
import { deliveriesPart } from "./deliveries";
import { editPart, removePart } from "./edit";

export interface ManagerParts {
  element: HTMLElement;
  update(agent: Agent): void;
  loadDeliveries(): Promise<Delivery[] | null>;
}

export function managerParts(initial: Agent, context: AgentContext): ManagerParts {
  const connection = connectionPart();
  const actions = actionsPart(context);
  const deliveries = deliveriesPart(context);
  const element = h(
    "div",
    null,
    connection.element,
    actions.element,
    deliveries.element,
    editPart(initial, context),
    removePart(context),
  );
  return {
    element,
    update(agent: Agent): void {
      connection.update(agent);
      actions.update(agent);
    },
    loadDeliveries: () => deliveries.load(),
  };
}
