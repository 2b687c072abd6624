/** The message box under a conversation and a thread: Enter sends, @ offers people and agents. */
import { InputError, clearError, errorSlot, h, onSubmit, uid } from "../../dom";
import { attachMentions } from "../../mentions";
import type { Member } from "@tab-relay/shared/api";

export interface Composer {
  element: HTMLFormElement;
  textarea: HTMLTextAreaElement;
  setLabel(label: string): void;
}

// Kept across conversations, so a newly opened one offers mentions before its own directory load returns.
let candidateCache: Member[] = [];

export function setMentionCandidates(candidates: Member[]): void {
  candidateCache = candidates;
}

export function createComposer(options: {
  testid: string;
  label: string;
  send: (text: string) => Promise<void>;
}): Composer {
  const textarea = h("textarea", {
    id: uid("composer"),
    rows: "2",
    maxlength: "8000",
    placeholder: options.label,
    "data-testid": "composer-input",
  });
  const hint = h(
    "p",
    { class: "hint composer-hint", id: uid("hint") },
    "Enter sends, Shift+Enter adds a line, @ mentions someone. Start with /aside for a note only people see.",
  );
  textarea.setAttribute("aria-describedby", hint.id);
  const mentions = attachMentions(textarea, () => candidateCache);
  const submit = h("button", { type: "submit", class: "primary", "data-testid": "composer-send" }, "Send");
  const error = errorSlot();
  const labelEl = h("label", { for: textarea.id, class: "sr-only" }, options.label);
  const element = h(
    "form",
    { class: "composer", "data-testid": options.testid },
    labelEl,
    h("div", { class: "composer-row" }, textarea, submit),
    mentions.listbox,
    error,
    hint,
  );
  textarea.addEventListener("keydown", (event) => {
    if (mentions.handleKey(event)) return;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && !event.altKey) {
      event.preventDefault();
      element.requestSubmit();
    }
  });
  textarea.addEventListener("input", () => clearError(error));
  let sending = false;
  onSubmit(element, submit, error, async () => {
    if (sending) return;
    const text = textarea.value;
    if (!text.trim()) throw new InputError("Write a message first.");
    sending = true;
    try {
      await options.send(text);
      textarea.value = "";
      mentions.close();
    } finally {
      sending = false;
      textarea.focus();
    }
  });
  return {
    element,
    textarea,
    setLabel(label: string): void {
      labelEl.textContent = label;
      textarea.placeholder = label;
    },
  };
}
