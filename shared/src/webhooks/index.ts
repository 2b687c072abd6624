// What the relay and agents both speak: the events, their Standard Webhooks signatures, and Socket Mode's path and
// close codes. The agent's side (receiving, the Agent API client, the Socket Mode client) is @tab-relay/agent.
export * from "./events";
export * from "./signing";
export * from "./socketMode";
