/** One message as a list item, its text with mentions marked, and the list kept in time order. */
import { h, timeEl } from "../../dom";
import type { Message } from "@tab-relay/shared/api";

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The text with its mentions marked; `<@id>` shows as the member's name. */
export function richText(message: Message): (string | Node)[] {
  const byId = new Map(message.mentions.map((m) => [m.id, m]));
  const names = [...new Set(message.mentions.map((m) => m.name))].sort((a, b) => b.length - a.length).map(escapeRegExp);
  const pattern = new RegExp(`<@([\\w-]+)>${names.length ? `|@(?:${names.join("|")})` : ""}`, "giu");
  const out: (string | Node)[] = [];
  let last = 0;
  for (const match of message.text.matchAll(pattern)) {
    const start = match.index ?? 0;
    const ref = match[1] === undefined ? null : byId.get(match[1]);
    if (match[1] !== undefined && !ref) continue;
    out.push(message.text.slice(last, start), h("span", { class: "mention" }, ref ? `@${ref.name}` : match[0]));
    last = start + match[0].length;
  }
  out.push(message.text.slice(last));
  return out;
}

/** Inserts a message item keeping the list in id order (ids sort by time), so live and paged messages interleave. */
export function insertInOrder(list: HTMLOListElement, item: HTMLLIElement, id: string): void {
  let after: Element | null = list.lastElementChild;
  while (after && ((after as HTMLElement).dataset.messageId ?? "") > id) after = after.previousElementSibling;
  if (after) after.after(item);
  else list.prepend(item);
}

/**
 * A message as shown in the conversation ("main", with its thread button under it) or in the thread panel. `actions` is
 * the thread button, built by the conversation, which knows the reply counts.
 */
export function messageItem(
  message: Message,
  context: "main" | "thread",
  permalink: string,
  actions: HTMLElement | null,
): HTMLLIElement {
  const fromAgent = message.author.type === "agent";
  const isReply = message.thread_id !== null;
  return h(
    "li",
    {
      class: `message${message.aside ? " aside" : ""}${fromAgent ? " from-agent" : ""}${isReply && context === "main" ? " reply" : ""}`,
      "data-testid": "message",
      "data-message-id": message.id,
      "data-author-type": message.author.type,
      "data-thread-id": message.thread_id,
      "data-aside": message.aside ? "true" : null,
      tabindex: "-1",
    },
    h(
      "div",
      { class: "msg-head" },
      h("span", { class: "author", "data-testid": "message-author" }, message.author.name),
      fromAgent ? h("span", { class: "badge agent", "data-testid": "agent-badge" }, "Agent") : null,
      message.aside
        ? h("span", { class: "badge aside-badge", "data-testid": "aside-badge" }, "Aside: hidden from agents")
        : null,
      isReply && context === "main" ? h("span", { class: "tag" }, "in a thread") : null,
      h("a", { class: "time", href: permalink }, timeEl(message.created_at, true)),
    ),
    h("div", { class: "msg-text", "data-testid": "message-text" }, richText(message)),
    actions,
  );
}

export function nearBottom(el: HTMLElement): boolean {
  return el.scrollHeight - el.scrollTop - el.clientHeight < 80;
}

export function scrollToBottom(el: HTMLElement): void {
  el.scrollTop = el.scrollHeight;
}
