/** Agents: the list with the create form, and one agent's management view (connection, controls, delivery log). */
export { agentsView } from "./list";
export { agentView } from "./detail";
