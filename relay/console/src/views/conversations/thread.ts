/** The thread panel beside a conversation: a root message's replies, with its own composer. */
import { api } from "../../api";
import { clearError, errorSlot, h, showError, uid } from "../../dom";
import type { Message } from "@tab-relay/shared/api";
import { createComposer } from "./composer";
import { insertInOrder, nearBottom, scrollToBottom } from "./messages";

export interface ThreadPanel {
  element: HTMLElement;
  /** The root message of the open thread, or null. */
  openId(): string | null;
  open(rootId: string, opener: HTMLElement | null): Promise<void>;
  close(): void;
  /** Shows a message of the open thread, staying at the bottom if the panel was there. */
  add(message: Message): void;
  scrollToEnd(): void;
  /** Reads the open thread again (after the live connection was down). */
  reload(): void;
}

export function threadPanel(options: {
  apiPath: string;
  item: (message: Message) => HTMLLIElement;
  send: (text: string, threadId: string | null) => Promise<void>;
  /** The conversation makes room for the panel, and takes it back. */
  shown: (open: boolean) => void;
  /** Where focus goes on closing when the button that opened the thread is gone. */
  fallbackFocus: () => HTMLElement;
}): ThreadPanel {
  const threadHeading = h("h2", { tabindex: "-1", id: uid("thread-title") }, "Thread");
  const threadList = h("ol", { class: "messages", "data-testid": "thread-message-list" });
  const threadError = errorSlot();
  const threadComposer = createComposer({
    testid: "thread-composer",
    label: "Reply in thread",
    send: (text) => options.send(text, openThreadId),
  });
  const closeThreadButton = h("button", { type: "button", "data-testid": "close-thread" }, "Close thread");
  const element = h(
    "aside",
    { class: "thread-panel", "aria-labelledby": threadHeading.id, "data-testid": "thread-panel", hidden: true },
    h("header", { class: "thread-header" }, threadHeading, closeThreadButton),
    h(
      "div",
      { class: "messages-scroll thread-scroll" },
      threadError,
      h("div", { role: "log", "aria-label": "Thread messages", class: "log" }, threadList),
    ),
    threadComposer.element,
  );
  const threadShown = new Set<string>();
  let openThreadId: string | null = null;
  let threadOpener: HTMLElement | null = null;

  function scrollToEnd(): void {
    const scroll = threadList.closest<HTMLElement>(".messages-scroll");
    if (scroll) scrollToBottom(scroll);
  }

  function add(message: Message): void {
    if (threadShown.has(message.id)) return;
    threadShown.add(message.id);
    const scroll = threadList.closest<HTMLElement>(".messages-scroll");
    const stick = scroll ? nearBottom(scroll) : false;
    insertInOrder(threadList, options.item(message), message.id);
    if (scroll && stick) scrollToBottom(scroll);
  }

  async function open(rootId: string, opener: HTMLElement | null): Promise<void> {
    openThreadId = rootId;
    threadOpener = opener;
    threadShown.clear();
    threadList.replaceChildren();
    clearError(threadError);
    element.hidden = false;
    element.dataset.threadId = rootId;
    options.shown(true);
    threadComposer.textarea.focus();
    try {
      const page = await api<Message[]>("GET", options.apiPath, { query: { thread_id: rootId, limit: 100 } });
      if (openThreadId !== rootId) return;
      for (const message of page.reverse()) add(message);
      scrollToEnd();
    } catch (error) {
      showError(threadError, error);
    }
  }

  function close(): void {
    openThreadId = null;
    element.hidden = true;
    delete element.dataset.threadId;
    options.shown(false);
    if (threadOpener?.isConnected) threadOpener.focus();
    else options.fallbackFocus().focus();
  }

  closeThreadButton.addEventListener("click", close);
  element.addEventListener("keydown", (event) => {
    if (event.key === "Escape") close();
  });

  return {
    element,
    openId: () => openThreadId,
    open,
    close,
    add,
    scrollToEnd,
    reload(): void {
      if (openThreadId) void open(openThreadId, threadOpener);
    },
  };
}
