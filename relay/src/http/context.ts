import type { RelayError } from "@tab-relay/shared";
import type { Scope } from "../auth/scopes";
import type { Agent, KeyOwner, Workspace } from "../store/types";

/** What the auth middleware learned about the caller. */
export interface Caller extends KeyOwner {
  scopes: ReadonlySet<Scope>;
}

/** The agent an Agent API request came from. */
export interface AgentCaller {
  agent: Agent;
  workspace: Workspace;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- express's documented way to type request fields
  namespace Express {
    interface Request {
      requestId: string;
      caller?: Caller;
      /** Set when the caller came with the console's session cookie rather than a bearer key. */
      session?: { id: string; token: string };
      agentCaller?: AgentCaller;
      /** Why authentication failed; raised after the rate limiter has counted the request. */
      authError?: RelayError;
      /** The route pattern used in logs and metrics (never the raw path, which may hold ids). */
      routeName?: string;
    }
  }
}
