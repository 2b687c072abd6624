/** @mention completion for a textarea: a listbox under it, filtered by what follows "@", driven by the keyboard. */
import { announce, h } from "./dom";
import type { Member } from "@tab-relay/shared/api";

const MAX_OPTIONS = 8;
// "@" at the start or after a non-word character (x@ada.com mentions nobody), then up to 40 characters of a name.
const TRIGGER = /(?:^|[^\p{L}\p{N}_])@([^@\n]{0,40})$/u;

export interface MentionQuery {
  start: number;
  query: string;
}

/** Where the mention being typed starts (its "@") and what has been typed of the name, if the caret is in one. */
export function mentionAt(text: string, caret: number): MentionQuery | null {
  const before = text.slice(0, caret);
  const match = TRIGGER.exec(before);
  if (!match) return null;
  const query = match[1] ?? "";
  return { start: caret - query.length - 1, query };
}

/** Names starting with the query, or with a word of them starting with it ("love" finds Ada Lovelace). */
export function matchCandidates(candidates: Member[], query: string): Member[] {
  const q = query.toLowerCase();
  if (q.trim() === "" && q !== "") return [];
  const starts = candidates.filter((c) => c.name.toLowerCase().startsWith(q));
  const words = candidates.filter(
    (c) =>
      !starts.includes(c) &&
      c.name
        .toLowerCase()
        .split(/\s+/)
        .some((w) => w.startsWith(q)),
  );
  return [...starts, ...words].slice(0, MAX_OPTIONS);
}

export interface MentionBox {
  listbox: HTMLUListElement;
  /** Call first in the textarea's keydown handler; true means the key was used to drive the list. */
  handleKey(event: KeyboardEvent): boolean;
  close(): void;
}

export function attachMentions(textarea: HTMLTextAreaElement, candidates: () => Member[]): MentionBox {
  const listbox = h("ul", {
    class: "mention-list",
    role: "listbox",
    id: `${textarea.id}-mentions`,
    "aria-label": "Mention suggestions",
    "data-testid": "mention-listbox",
    hidden: true,
  });
  textarea.setAttribute("aria-autocomplete", "list");
  textarea.setAttribute("aria-controls", listbox.id);
  let options: Member[] = [];
  let active = 0;
  let current: MentionQuery | null = null;
  let wasOpen = false;

  function open(): boolean {
    return !listbox.hidden;
  }

  function close(): void {
    listbox.hidden = true;
    listbox.replaceChildren();
    options = [];
    current = null;
    wasOpen = false;
    textarea.removeAttribute("aria-activedescendant");
  }

  function render(): void {
    listbox.replaceChildren(
      ...options.map((option, index) =>
        h(
          "li",
          {
            id: `${listbox.id}-${index}`,
            role: "option",
            class: "mention-option",
            "aria-selected": String(index === active),
            "data-testid": "mention-option",
            "data-member-id": option.id,
            "data-member-type": option.type,
            // Keep focus in the textarea while the mouse picks.
            onmousedown: (event: MouseEvent) => event.preventDefault(),
            onclick: () => pick(index),
          },
          h("span", null, option.name),
          h(
            "span",
            { class: option.type === "agent" ? "badge agent" : "tag" },
            option.type === "agent" ? "agent" : "person",
          ),
        ),
      ),
    );
    listbox.hidden = false;
    textarea.setAttribute("aria-activedescendant", `${listbox.id}-${active}`);
    listbox.children[active]?.scrollIntoView({ block: "nearest" });
  }

  function update(): void {
    const caret = textarea.selectionStart;
    current = textarea.selectionStart === textarea.selectionEnd ? mentionAt(textarea.value, caret) : null;
    const found = current ? matchCandidates(candidates(), current.query) : [];
    if (!current || found.length === 0) {
      if (open()) close();
      return;
    }
    const previous = options[active]?.id;
    options = found;
    active = Math.max(
      0,
      options.findIndex((o) => o.id === previous),
    );
    render();
    if (!wasOpen)
      announce(
        `${options.length} ${options.length === 1 ? "suggestion" : "suggestions"}; Up and Down to choose, Enter or Tab to insert, Escape to close`,
        { quiet: true },
      );
    wasOpen = true;
  }

  function pick(index: number): void {
    const option = options[index];
    if (!option || !current) return;
    const insert = `@${option.name} `;
    const end = textarea.selectionStart;
    textarea.setRangeText(insert, current.start, end, "end");
    close();
    textarea.focus();
    textarea.dispatchEvent(new Event("input", { bubbles: true }));
  }

  textarea.addEventListener("input", update);
  textarea.addEventListener("click", update);
  textarea.addEventListener("keyup", (event) => {
    if (event.key === "ArrowLeft" || event.key === "ArrowRight" || event.key === "Home" || event.key === "End")
      update();
  });
  textarea.addEventListener("blur", () => setTimeout(close, 0));

  return {
    listbox,
    close,
    handleKey(event: KeyboardEvent): boolean {
      if (!open() || event.isComposing) return false;
      switch (event.key) {
        case "ArrowDown":
          active = (active + 1) % options.length;
          break;
        case "ArrowUp":
          active = (active - 1 + options.length) % options.length;
          break;
        case "Enter":
        case "Tab":
          if (event.shiftKey) return false;
          pick(active);
          event.preventDefault();
          return true;
        case "Escape":
          close();
          event.preventDefault();
          event.stopPropagation();
          return true;
        default:
          return false;
      }
      event.preventDefault();
      render();
      return true;
    },
  };
}
