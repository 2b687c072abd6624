import { API_PREFIX } from "@tab-relay/shared";
import type { ConversationType } from "./store/types";

/** Absolute links the relay hands out in events: under the configured public URL, else the listening address. */
export interface Links {
  base(): string;
  /** Called once the relay listens, for when no public URL was configured. */
  setListeningUrl(url: string): void;
  agentMessages(type: ConversationType, conversationId: string): string;
  message(type: ConversationType, conversationId: string, messageId: string): string;
}

export function createLinks(publicUrl: string | undefined): Links {
  let listening = "http://127.0.0.1";
  const base = () => publicUrl ?? listening;
  return {
    base,
    setListeningUrl(url) {
      listening = url;
    },
    agentMessages: (type, id) => `${base()}${API_PREFIX}/agent-api/conversations/${type}/${id}/messages`,
    // The console (served at `/`) opens a conversation at this path and scrolls to the message.
    message: (type, id, messageId) => `${base()}/conversations/${type}/${id}/messages/${messageId}`,
  };
}
