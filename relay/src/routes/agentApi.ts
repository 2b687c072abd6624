import type { Api } from "@tab-relay/shared";
import { Router } from "express";
import type { Clock } from "../clock";
import type { RateLimits } from "../config";
import { conversationForAgent, membersOfEach } from "../conversations/access";
import { presentAgentApiConversation, presentMessage } from "../conversations/present";
import { ConversationParams, MessagesQuery, PostMessageBody } from "../conversations/schemas";
import type { ConversationService } from "../conversations/service";
import { createAuthenticateAgent } from "../http/authenticateAgent";
import { createJsonBody, parseWith } from "../http/body";
import type { AgentCaller } from "../http/context";
import { notFound } from "../http/errors";
import { type ClientAddress, rateLimitAddress } from "../http/clientAddress";
import { createRateLimit } from "../http/rateLimit";
import { named } from "../http/requestContext";
import type { Links } from "../links";
import type { Metrics } from "../metrics";
import type { RateLimitStore } from "../rateLimit/types";
import type { Store } from "../store/types";

/** Agents post messages, not documents: a body this size holds the longest message many times over. */
export const AGENT_API_MAX_BODY_BYTES = 64 * 1024;

const READ_METHODS = new Set(["GET", "HEAD"]);

function presentMe({ agent, workspace }: AgentCaller): Api.AgentApiMe {
  return {
    agent: {
      id: agent.id,
      name: agent.name,
      description: agent.description,
      state: agent.state,
      created_at: agent.created_at,
    },
    workspace: { slug: workspace.slug, name: workspace.name },
  };
}

/** The Agent API (`/api/v1/agent-api`): agents read and write the conversations they are in, with their token. */
export function createAgentApiRouter(deps: {
  store: Store;
  clock: Clock;
  links: Links;
  metrics: Metrics;
  rateLimitStore: RateLimitStore;
  clientAddress: ClientAddress;
  limits: Readonly<RateLimits>;
  windowMs: number;
  conversations: ConversationService;
}): Router {
  const router = Router();
  const { store } = deps;
  router.use(
    createAuthenticateAgent(deps),
    createRateLimit({
      store: deps.rateLimitStore,
      clock: deps.clock,
      metrics: deps.metrics,
      windowMs: deps.windowMs,
      policy(req) {
        const label = READ_METHODS.has(req.method) ? "read" : "post";
        const subject = req.agentCaller
          ? `agent:${req.agentCaller.agent.id}`
          : `agent-api:ip:${rateLimitAddress(deps.clientAddress(req))}`;
        return {
          bucket: `${subject}:${label}`,
          limit: label === "read" ? deps.limits.agent_reads : deps.limits.agent_posts,
          label,
        };
      },
    }),
    function requireAgent(req, _res, next) {
      next(req.authError);
    },
    createJsonBody(AGENT_API_MAX_BODY_BYTES),
  );

  router.get("/me", named("/me"), (req, res) => {
    res.json({ data: presentMe(req.agentCaller as AgentCaller) });
  });

  router.get("/conversations", named("/conversations"), async (req, res) => {
    const { agent, workspace } = req.agentCaller as AgentCaller;
    const list = await store.conversations.listVisible(workspace.id, agent.id, false);
    const members = await membersOfEach(
      store,
      workspace.id,
      list.filter((c) => c.type === "dm").map((c) => c.id),
    );
    const data = list.map((c) =>
      presentAgentApiConversation(c, c.type === "dm" ? (members.get(c.id) ?? []) : undefined),
    );
    res.json({ data });
  });

  router.get("/conversations/:type/:id/messages", named("/conversations/:type/:id/messages"), async (req, res) => {
    const caller = req.agentCaller as AgentCaller;
    const { type, id } = parseWith(ConversationParams, req.params, "path");
    const q = parseWith(MessagesQuery, req.query, "query");
    const conversation = await conversationForAgent(store, caller, type, id);
    const messages = await store.messages.list(conversation.id, {
      threadId: q.thread_id,
      before: q.before,
      limit: q.limit,
      includeAsides: false,
    });
    res.json({ data: messages.map((m) => presentMessage(m, conversation, deps.links, { kind: "agent" })) });
  });

  router.post("/conversations/:type/:id/messages", named("/conversations/:type/:id/messages"), async (req, res) => {
    const caller = req.agentCaller as AgentCaller;
    const { type, id } = parseWith(ConversationParams, req.params, "path");
    const body = parseWith(PostMessageBody, req.body);
    const conversation = await conversationForAgent(store, caller, type, id);
    const message = await deps.conversations.post({
      workspace: caller.workspace,
      conversation,
      author: { id: caller.agent.id, type: "agent", name: caller.agent.name },
      text: body.text,
      threadId: body.thread_id ?? undefined,
    });
    res.status(201).json({ data: presentMessage(message, conversation, deps.links, { kind: "agent" }) });
  });

  router.use(notFound);
  return router;
}
