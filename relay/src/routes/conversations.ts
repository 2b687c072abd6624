import { type Api, RelayError } from "@tab-relay/shared";
import { Router } from "express";
import type { Clock } from "../clock";
import { conversationForPerson, membersOf, membersOfEach } from "../conversations/access";
import { presentConversation, presentMessage, presentNotification } from "../conversations/present";
import {
  AddMemberBody,
  ConversationParams,
  CreateChannelBody,
  CreateDmBody,
  MessagesQuery,
  NotificationsQuery,
  PostMessageBody,
} from "../conversations/schemas";
import type { ConversationService } from "../conversations/service";
import { requireScope } from "../http/authenticate";
import { parseWith } from "../http/body";
import type { Caller } from "../http/context";
import { named } from "../http/requestContext";
import type { Links } from "../links";
import type { SortableIds } from "../store/sortableIds";
import type { MemberRef, Store } from "../store/types";

export const ChannelParams = ConversationParams.pick({ id: true });

/** Channels, DMs, messages and notifications, for people (API keys). */
export function createConversationsRouter(deps: {
  store: Store;
  clock: Clock;
  ids: SortableIds;
  links: Links;
  conversations: ConversationService;
}): Router {
  const router = Router();
  const { store } = deps;
  const iso = () => new Date(deps.clock.now()).toISOString();

  /** A user or agent of this workspace, by id; a missing one is the request's fault. */
  async function member(caller: Caller, id: string, field: string): Promise<MemberRef> {
    const user = await store.users.get(caller.workspace.id, id);
    if (user && user.removed_at === null) return { id, type: "user" };
    if (await store.agents.get(caller.workspace.id, id)) return { id, type: "agent" };
    throw new RelayError("VALIDATION_ERROR", `${field}: no user or agent ${id} in this workspace`);
  }

  router.post("/channels", named("/channels"), requireScope("messages.write"), async (req, res) => {
    const caller = req.caller as Caller;
    if (caller.user.role === "guest") throw new RelayError("FORBIDDEN", "Guests cannot create channels");
    const body = parseWith(CreateChannelBody, req.body);
    const conversation = await store.transaction(async (tx) => {
      const now = iso();
      if (await tx.conversations.findChannel(caller.workspace.id, body.name)) {
        throw new RelayError("CONFLICT", `name: a channel named #${body.name} already exists`);
      }
      const created = await tx.conversations.create({
        id: deps.ids("ch"),
        workspace_id: caller.workspace.id,
        type: "channel",
        name: body.name,
        visibility: body.visibility,
        dm_key: null,
        created_by: caller.user.id,
        created_at: now,
      });
      await tx.conversations.addMember(created.id, { id: caller.user.id, type: "user" }, now);
      return created;
    });
    const members = await membersOf(store, caller.workspace.id, conversation.id);
    res.status(201).json({ data: presentConversation(conversation, { is_member: true, members }) });
  });

  router.post(
    "/channels/:id/members",
    named("/channels/:id/members"),
    requireScope("messages.write"),
    async (req, res) => {
      const caller = req.caller as Caller;
      const { id } = parseWith(ChannelParams, req.params, "path");
      const body = parseWith(AddMemberBody, req.body);
      const conversation = await conversationForPerson(store, caller, "channel", id);
      if (caller.user.role === "guest") throw new RelayError("FORBIDDEN", "Guests cannot add members to channels");
      const ref =
        body.user_id !== undefined
          ? await member(caller, body.user_id, "user_id")
          : await member(caller, body.agent_id as string, "agent_id");
      if ((body.user_id !== undefined) !== (ref.type === "user")) {
        throw new RelayError(
          "VALIDATION_ERROR",
          `${body.user_id !== undefined ? "user_id" : "agent_id"}: ${ref.id} is not a ${ref.type === "user" ? "agent" : "user"}`,
        );
      }
      const added = await store.conversations.addMember(conversation.id, ref, iso());
      const members = await membersOf(store, caller.workspace.id, conversation.id);
      const answer: Api.ChannelMemberAdded = {
        ...presentConversation(conversation, { is_member: true, members }),
        added,
      };
      res.status(added ? 201 : 200).json({ data: answer });
    },
  );

  router.post("/dms", named("/dms"), requireScope("messages.write"), async (req, res) => {
    const caller = req.caller as Caller;
    const body = parseWith(CreateDmBody, req.body);
    const refs: MemberRef[] = [{ id: caller.user.id, type: "user" }];
    for (const [index, id] of body.member_ids.entries()) {
      if (refs.some((ref) => ref.id === id)) continue;
      refs.push(await member(caller, id, `member_ids[${index}]`));
    }
    if (refs.length < 2)
      throw new RelayError("VALIDATION_ERROR", "member_ids: name at least one member besides yourself");
    // The same people and agents always meet in the same DM.
    const dmKey = refs
      .map((ref) => ref.id)
      .sort()
      .join(",");
    const { conversation, created } = await store.transaction(async (tx) => {
      const existing = await tx.conversations.findDm(caller.workspace.id, dmKey);
      if (existing) return { conversation: existing, created: false };
      const now = iso();
      const conversation = await tx.conversations.create({
        id: deps.ids("dm"),
        workspace_id: caller.workspace.id,
        type: "dm",
        name: null,
        visibility: null,
        dm_key: dmKey,
        created_by: caller.user.id,
        created_at: now,
      });
      for (const ref of refs) await tx.conversations.addMember(conversation.id, ref, now);
      return { conversation, created: true };
    });
    const members = await membersOf(store, caller.workspace.id, conversation.id);
    res.status(created ? 201 : 200).json({ data: presentConversation(conversation, { is_member: true, members }) });
  });

  router.get("/conversations", named("/conversations"), requireScope("messages.read"), async (req, res) => {
    const caller = req.caller as Caller;
    const list = await store.conversations.listVisible(
      caller.workspace.id,
      caller.user.id,
      caller.user.role !== "guest",
    );
    const members = await membersOfEach(
      store,
      caller.workspace.id,
      list.filter((c) => c.type === "dm").map((c) => c.id),
    );
    const data = list.map((c) =>
      presentConversation(c, {
        is_member: c.is_member,
        members: c.type === "dm" ? (members.get(c.id) ?? []) : undefined,
      }),
    );
    res.json({ data });
  });

  router.get(
    "/conversations/:type/:id/messages",
    named("/conversations/:type/:id/messages"),
    requireScope("messages.read"),
    async (req, res) => {
      const caller = req.caller as Caller;
      const { type, id } = parseWith(ConversationParams, req.params, "path");
      const query = parseWith(MessagesQuery, req.query, "query");
      const conversation = await conversationForPerson(store, caller, type, id);
      const messages = await store.messages.list(conversation.id, {
        threadId: query.thread_id,
        before: query.before,
        limit: query.limit,
        includeAsides: true,
      });
      res.json({ data: messages.map((m) => presentMessage(m, conversation, deps.links, { kind: "person" })) });
    },
  );

  router.post(
    "/conversations/:type/:id/messages",
    named("/conversations/:type/:id/messages"),
    requireScope("messages.write"),
    async (req, res) => {
      const caller = req.caller as Caller;
      const { type, id } = parseWith(ConversationParams, req.params, "path");
      const body = parseWith(PostMessageBody, req.body);
      const conversation = await conversationForPerson(store, caller, type, id);
      const message = await deps.conversations.post({
        workspace: caller.workspace,
        conversation,
        author: { id: caller.user.id, type: "user", name: caller.user.name },
        text: body.text,
        threadId: body.thread_id ?? undefined,
      });
      res.status(201).json({ data: presentMessage(message, conversation, deps.links, { kind: "person" }) });
    },
  );

  router.get("/notifications", named("/notifications"), requireScope("messages.read"), async (req, res) => {
    const caller = req.caller as Caller;
    const query = parseWith(NotificationsQuery, req.query, "query");
    const notifications = await store.notifications.listForUser(caller.user.id, query);
    const data = await Promise.all(
      notifications.map(async (notification) => {
        const conversation = await store.conversations.get(caller.workspace.id, "dm", notification.conversation_id);
        const message = conversation && (await store.messages.get(conversation.id, notification.message_id));
        return presentNotification(
          notification,
          conversation && message ? presentMessage(message, conversation, deps.links, { kind: "person" }) : undefined,
        );
      }),
    );
    res.json({ data });
  });

  return router;
}
