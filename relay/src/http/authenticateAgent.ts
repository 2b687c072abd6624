import { RelayError } from "@tab-relay/shared";
import type { RequestHandler } from "express";
import { hashSecret, looksLikeAgentToken } from "../auth/secrets";
import type { Store } from "../store/types";

const BEARER = /^Bearer ([^\s]+)$/;

/**
 * Resolves the agent token in `Authorization: Bearer <token>` for the Agent API. Like the API-key check, a failure
 * is recorded and raised only after the rate limiter has counted the request.
 */
export function createAuthenticateAgent(deps: { store: Store }): RequestHandler {
  return async function authenticateAgent(req, _res, next) {
    const header = req.headers.authorization;
    const token = header === undefined ? undefined : BEARER.exec(header)?.[1];
    if (token === undefined) {
      req.authError = new RelayError("INVALID_TOKEN", "Send the agent token as `Authorization: Bearer <token>`");
      return next();
    }
    const found = looksLikeAgentToken(token) ? await deps.store.agents.findByTokenHash(hashSecret(token)) : undefined;
    if (!found) {
      req.authError = new RelayError("INVALID_TOKEN", "Invalid agent token: it is unknown, was replaced, or the agent was removed");
      return next();
    }
    req.agentCaller = found;
    if (found.agent.state === "paused") {
      req.authError = new RelayError("AGENT_PAUSED", "This agent is paused; someone must resume it in the workspace");
    }
    next();
  };
}
