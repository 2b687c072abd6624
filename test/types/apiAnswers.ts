/**
 * Compile-time checks of the API's answer types (shared/src/protocol/api.ts), run by `npm run typecheck` and never
 * executed. The relay's presenters must produce exactly these types, and the types must refuse what the relay
 * does not send. Each `@ts-expect-error` line fails the typecheck once its error goes away, so loosening a type
 * (an index signature, a field made optional, a copy that lets anything through) is caught here.
 */
import { type Api, ERROR_CODES } from "@tab-relay/shared";
import type {
  Agent,
  AgentApiMessage,
  AgentFields,
  Conversation,
  Delivery,
  LiveEvent,
  Message,
  Scope,
  Session,
} from "@tab-relay/shared/api";
import {
  presentAgentApiConversation,
  presentConversation,
  presentMember,
  presentMessage,
  presentNotification,
} from "../../relay/src/conversations/present";
import type { Links } from "../../relay/src/links";
import type * as Rows from "../../relay/src/store/types";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Assert<T extends true> = T;

export function presentersAnswerInTheApiTypes(
  row: { message: Rows.Message; conversation: Rows.Conversation; member: Rows.Member; notification: Rows.Notification },
  links: Links,
) {
  const forPeople = presentMessage(row.message, row.conversation, links, { kind: "person" });
  const forAgents = presentMessage(row.message, row.conversation, links, { kind: "agent" });
  const conversation = presentConversation(row.conversation, { is_member: true });
  const agentConversation = presentAgentApiConversation(row.conversation);
  return [
    forPeople,
    forAgents,
    conversation,
    agentConversation,
    presentMember(row.member),
    presentNotification(row.notification, forPeople),
  ] as const;
}

type Presented = ReturnType<typeof presentersAnswerInTheApiTypes>;
export type PresenterChecks = [
  Assert<Equal<Presented[0], Api.Message>>,
  Assert<Equal<Presented[1], Api.AgentApiMessage>>,
  Assert<Equal<Presented[2], Api.Conversation>>,
  Assert<Equal<Presented[3], Api.AgentApiConversation>>,
  Assert<Equal<Presented[4], Api.Member>>,
  Assert<Equal<Presented[5], Api.Notification>>,
];

export function answersRefuseWhatTheRelayDoesNotSend(
  fields: AgentFields,
  message: AgentApiMessage,
  agent: Agent,
  session: Session,
) {
  const refused = [
    // @ts-expect-error a viewer who cannot manage the agent is never sent its token hint
    ((): Agent => ({ ...fields, can_manage: false, token_hint: "svc_agent_AbCd…wXyZ" }))(),
    // @ts-expect-error a manager's view carries every management field, the connection included
    ((): Agent => ({
      ...fields,
      can_manage: true,
      webhook_url: null,
      token_hint: "svc_agent_AbCd…wXyZ",
      last_delivery: null,
    }))(),
    // @ts-expect-error agents never see asides, so the Agent API's message has no `aside`
    ((): AgentApiMessage => ({ ...message, aside: false }))(),
    // @ts-expect-error a person's message always says whether it is an aside
    ((): Message => ({ ...message }))(),
    // @ts-expect-error a person's conversation always says whether they are in it
    ((): Conversation => ({
      type: "dm",
      id: "dm_1",
      name: null,
      visibility: null,
      created_at: "2026-01-01T00:00:00.000Z",
    }))(),
    // @ts-expect-error the relay has no delivery status `sent`
    ((): Delivery["status"] => "sent")(),
    // @ts-expect-error not a scope of the catalogue (`messages.read` is)
    ((): Scope => "message.read")(),
    // @ts-expect-error the live socket sends no `agent.created` frame
    ((): LiveEvent => ({ type: "agent.created", agent_id: "agt_1" }))(),
    // @ts-expect-error an agent's answer never holds its token (only POST /agents and /token answers do, beside it)
    agent.token,
    // @ts-expect-error a session names its key but never holds a secret
    session.key.secret,
  ];
  return refused;
}

export function errorTableHoldsNoRetryDecision() {
  // @ts-expect-error whether to try again is each client's decision from the status (shared/src/errors.ts says why)
  return ERROR_CODES.RATE_LIMIT_EXCEEDED.retryable;
}
