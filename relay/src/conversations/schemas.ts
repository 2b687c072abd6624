import { z } from "zod";
import { MAX_MESSAGE_CHARS } from "./service";

const Id = z.string().min(1).max(64);

export const ConversationParams = z.object({ type: z.enum(["channel", "dm"]), id: Id });

/** The same paging rules on the main API and the Agent API. */
export const MessagesQuery = z.object({
  thread_id: Id.optional(),
  limit: z.coerce.number("must be an integer from 1 to 100").int().min(1).max(100).default(30),
  before: Id.optional(),
});

export const PostMessageBody = z.object({
  text: z
    .string()
    .max(MAX_MESSAGE_CHARS, `must be at most ${MAX_MESSAGE_CHARS} characters`)
    .refine((text) => text.trim() !== "", "must not be empty"),
  thread_id: Id.nullable().optional(),
});

export const CreateChannelBody = z.object({
  name: z
    .string()
    .trim()
    .transform((name) => name.replace(/^#/, "").toLowerCase())
    .pipe(
      z
        .string()
        .regex(
          /^[\p{Ll}\p{N}][\p{Ll}\p{N}_-]{0,79}$/u,
          "must be 1-80 lowercase letters, digits, - or _ (a leading # is fine)",
        ),
    ),
  visibility: z.enum(["public", "private"]).default("public"),
});

export const AddMemberBody = z
  .object({ user_id: Id.optional(), agent_id: Id.optional() })
  .refine(
    (body) => (body.user_id === undefined) !== (body.agent_id === undefined),
    "give exactly one of user_id and agent_id",
  );

export const CreateDmBody = z.object({ member_ids: z.array(Id).min(1).max(8) });

export const NotificationsQuery = z.object({
  limit: z.coerce.number("must be an integer from 1 to 100").int().min(1).max(100).default(30),
  before: Id.optional(),
});
