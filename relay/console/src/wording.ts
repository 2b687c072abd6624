/**
 * The relay's error messages name the field they are about first (`webhook_url: must use https`), which suits an API
 * client; the console words them for people: the field as a label in the sentence, or left out where the rest says it.
 */
const LABELS: Record<string, string> = {
  api_key: "The API key",
  name: "The name",
  description: "The description",
  webhook_url: "The webhook URL",
  text: "The message",
  thread_id: "The thread",
  member_ids: "The people chosen",
  visibility: "The visibility",
  scopes: "The scopes",
  role: "The role",
  id: "It",
};

const FIELD_FIRST = /^((?:path|query|body)\.)?([a-z][a-z0-9_]*(?:\.[a-z0-9_]+|\[\d+\])*): (.+)$/s;
/** A rest that continues the field's name as its subject ("must use https"), rather than a sentence of its own. */
const PREDICATE = /^(is|are|was|must|should|cannot|can't|can|needs?|has|have|may|expected|too)\b/i;

function label(field: string): string {
  const last =
    field
      .replace(/\[\d+\]/g, "")
      .split(".")
      .pop() ?? field;
  return LABELS[last] ?? `The ${last.replace(/_/g, " ")}`;
}

function sentence(text: string): string {
  const capital = text.charAt(0).toUpperCase() + text.slice(1);
  return /[\p{L}\p{N})]$/u.test(capital) ? `${capital}.` : capital;
}

export function humanMessage(message: string): string {
  const match = FIELD_FIRST.exec(message.trim());
  if (!match) return message;
  const [, , field = "", rest = ""] = match;
  return PREDICATE.test(rest) ? sentence(`${label(field)} ${rest}`) : sentence(rest);
}

/**
 * The relay names people by id (`role: usr_1 is the workspace's last owner …`); the console knows their names, so a
 * message about someone reads with the name instead.
 */
export function withNames(message: string, names: ReadonlyMap<string, string>): string {
  return message.replace(/\busr_[A-Za-z0-9_]+/g, (id) => names.get(id) ?? id);
}

/** The channel name the relay would accept for what someone typed ("General Chat" → "general-chat"), or null. */
export function channelNameFor(typed: string): string | null {
  const name = typed
    .trim()
    .replace(/^#/, "")
    .toLowerCase()
    .replace(/[^\p{Ll}\p{N}_-]+/gu, "-")
    .replace(/-{2,}/g, "-")
    .replace(/^[-_]+/, "")
    .slice(0, 80)
    .replace(/-+$/, "");
  return /^[\p{Ll}\p{N}][\p{Ll}\p{N}_-]{0,79}$/u.test(name) ? name : null;
}

/** Whether the relay takes the name as typed (it drops a leading # and lowercases it itself). */
export function isChannelName(typed: string): boolean {
  return /^[\p{Ll}\p{N}][\p{Ll}\p{N}_-]{0,79}$/u.test(typed.trim().replace(/^#/, "").toLowerCase());
}

/**
 * An audit entry's detail key as a label for what the console shows under it: a `…_user_id` is shown as the
 * person's name, so `holder_user_id` reads "holder" and a bare `user_id` "person".
 */
export function detailLabel(key: string): string {
  if (key === "user_id") return "person";
  return key.replace(/_user_id$/, "").replace(/_/g, " ");
}
