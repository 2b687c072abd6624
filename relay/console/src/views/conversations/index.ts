/** Conversations: the home page (browse, create a channel, start a DM) and one open conversation with its threads. */
export { homeView } from "./home";
export { conversationView, isOwnMessage } from "./conversation";
