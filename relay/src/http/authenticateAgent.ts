import { RelayError } from "@tab-relay/shared";
import type { RequestHandler } from "express";
import { hashSecret, looksLikeAgentToken } from "../auth/secrets";
import type { Store } from "../store/types";
import { bearerToken } from "./authenticate";
import type { AgentCaller } from "./context";

/**
 * The agent behind an `Authorization: Bearer <agent token>` header, or why there is none: INVALID_TOKEN (missing,
 * malformed, unknown, replaced, removed) or AGENT_PAUSED (with the agent, which is still known). The Agent API and
 * Socket Mode's handshake both ask this.
 */
export async function resolveAgentToken(
  store: Store,
  header: string | undefined,
): Promise<{ caller?: AgentCaller; error?: RelayError }> {
  const token = bearerToken(header);
  if (token === undefined)
    return { error: new RelayError("INVALID_TOKEN", "Send the agent token as `Authorization: Bearer <token>`") };
  const caller = looksLikeAgentToken(token) ? await store.agents.findByTokenHash(hashSecret(token)) : undefined;
  if (!caller)
    return {
      error: new RelayError(
        "INVALID_TOKEN",
        "Invalid agent token: it is unknown, was replaced, or the agent was removed",
      ),
    };
  if (caller.agent.state === "paused")
    return {
      caller,
      error: new RelayError("AGENT_PAUSED", "This agent is paused; someone must resume it in the workspace"),
    };
  return { caller };
}

/**
 * Resolves the agent token for the Agent API. Like the API-key check, a failure is recorded and raised only after
 * the rate limiter has counted the request.
 */
export function createAuthenticateAgent(deps: { store: Store }): RequestHandler {
  return async function authenticateAgent(req, _res, next) {
    const { caller, error } = await resolveAgentToken(deps.store, req.headers.authorization);
    if (caller) req.agentCaller = caller;
    if (error) req.authError = error;
    next();
  };
}
