/** Small DOM helpers: element building (text only, never HTML strings), errors in place, status, dialogs, secrets. */
import { ApiError } from "./api";
import { humanMessage } from "./wording";

type Child = Node | string | null | undefined | false;
type AttrValue = string | number | boolean | null | undefined | ((event: never) => void);

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Record<string, AttrValue> | null,
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.slice(2), value as unknown as EventListener);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat())
    if (child !== null && child !== undefined && child !== false) element.append(child);
  return element;
}

let idCounter = 0;
export function uid(prefix: string): string {
  idCounter += 1;
  return `${prefix}-${idCounter}`;
}

/** An empty alert next to a form or action; it exists before any error so screen readers announce the change. */
export function errorSlot(): HTMLParagraphElement {
  return h("p", { class: "error", role: "alert", "data-testid": "error" });
}

export function describeError(error: unknown): string {
  if (error instanceof ApiError) return humanMessage(error.message);
  return error instanceof Error ? error.message : String(error);
}

export function showError(slot: HTMLElement, error: unknown): void {
  slot.textContent = describeError(error);
  if (error instanceof ApiError) slot.dataset.code = error.code;
  else delete slot.dataset.code;
}

export function clearError(slot: HTMLElement): void {
  slot.textContent = "";
  delete slot.dataset.code;
}

let statusTimer: ReturnType<typeof setTimeout> | undefined;

/** Polite status for things that succeeded ("Agent paused"); unless quiet, it also shows briefly on screen. */
export function announce(text: string, options: { quiet?: boolean } = {}): void {
  const region = document.getElementById("status");
  if (!region) return;
  region.classList.toggle("quiet", options.quiet === true);
  region.textContent = "";
  // A fresh text node after a tick makes screen readers repeat an identical message.
  requestAnimationFrame(() => {
    region.textContent = text;
  });
  clearTimeout(statusTimer);
  statusTimer = setTimeout(() => {
    region.textContent = "";
  }, 5000);
}

/**
 * Runs an action with its button marked busy, so a double click never sends twice. The button stays enabled (aria-disabled)
 * because disabling a focused button drops keyboard focus to the page.
 */
export async function busy<T>(button: HTMLButtonElement | null, action: () => Promise<T>): Promise<T | undefined> {
  if (button?.getAttribute("aria-busy") === "true") return undefined;
  button?.setAttribute("aria-busy", "true");
  button?.setAttribute("aria-disabled", "true");
  try {
    return await action();
  } finally {
    button?.removeAttribute("aria-busy");
    button?.removeAttribute("aria-disabled");
  }
}

/** Replaces a container's content and puts focus back on the element with the same data-focus-key, if it had it. */
export function replaceKeepingFocus(container: Element, ...nodes: Node[]): void {
  const active = document.activeElement;
  const key = active instanceof HTMLElement && container.contains(active) ? active.dataset.focusKey : undefined;
  container.replaceChildren(...nodes);
  if (key) container.querySelector<HTMLElement>(`[data-focus-key="${CSS.escape(key)}"]`)?.focus();
}

export function formatTime(iso: string, short = false): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const today = new Date().toDateString() === date.toDateString();
  if (short && today) return date.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: short ? "short" : "medium" });
}

export function timeEl(iso: string, short = false): HTMLTimeElement {
  return h("time", { datetime: iso, title: new Date(iso).toString() }, formatTime(iso, short));
}

export function field(
  label: string,
  control: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement,
  hint?: string,
): HTMLDivElement {
  control.id ||= uid("field");
  const hintEl = hint ? h("p", { class: "hint", id: uid("hint") }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control, hintEl);
}

/** A modal confirmation; resolves true only when the person chose the confirming button. */
export function confirmDialog(options: { title: string; body: string; confirm: string }): Promise<boolean> {
  const titleId = uid("dialog-title");
  const bodyId = uid("dialog-body");
  const cancel = h(
    "button",
    { type: "submit", value: "cancel", "data-testid": "confirm-cancel", autofocus: true },
    "Cancel",
  );
  const dialog = h(
    "dialog",
    { class: "dialog", "data-testid": "confirm-dialog", "aria-labelledby": titleId, "aria-describedby": bodyId },
    h(
      "form",
      { method: "dialog" },
      h("h2", { id: titleId }, options.title),
      h("p", { id: bodyId }, options.body),
      h(
        "div",
        { class: "row end" },
        cancel,
        h(
          "button",
          { type: "submit", value: "confirm", class: "danger", "data-testid": "confirm-ok" },
          options.confirm,
        ),
      ),
    ),
  );
  const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  document.body.append(dialog);
  dialog.showModal();
  cancel.focus();
  return new Promise((resolve) => {
    dialog.addEventListener(
      "close",
      () => {
        const confirmed = dialog.returnValue === "confirm";
        dialog.remove();
        if (opener?.isConnected) opener.focus();
        resolve(confirmed);
      },
      { once: true },
    );
  });
}

export interface SecretItem {
  key: string;
  label: string;
  value: string;
}

/** A labelled value shown whole, with a button that copies it (a secret, or a line to paste). */
export function copyable(item: SecretItem): HTMLElement {
  const labelId = uid("secret-label");
  const value = h(
    "code",
    { class: "secret-value", "data-testid": `secret-${item.key}`, "aria-labelledby": labelId },
    item.value,
  );
  const copy = h("button", { type: "button", "data-testid": `copy-${item.key}` }, `Copy ${inline(item.label)}`);
  copy.addEventListener("click", () => void copyText(item.value, item.label, copy, value));
  return h("div", { class: "secret" }, h("span", { class: "secret-label", id: labelId }, item.label), value, copy);
}

/** Secrets the relay shows once: visible values, copy buttons and a plain warning. */
export function secretsPanel(title: string, items: SecretItem[], extra?: Node): HTMLElement {
  const titleId = uid("secrets");
  const heading = h("h3", { id: titleId, tabindex: "-1" }, title);
  const panel = h(
    "section",
    { class: "secrets", "aria-labelledby": titleId, "data-testid": "secrets-panel" },
    heading,
    h(
      "p",
      { class: "warning", "data-testid": "secrets-warning" },
      h("strong", null, "You will not see this again."),
      " Copy it now and keep it somewhere safe: the relay cannot show it a second time.",
    ),
    items.map(copyable),
    extra ?? null,
    h(
      "div",
      { class: "row" },
      h(
        "button",
        { type: "button", "data-testid": "secrets-done", onclick: () => panel.remove() },
        "I have saved it, hide",
      ),
    ),
  );
  requestAnimationFrame(() => heading.focus());
  return panel;
}

/**
 * Brings a panel that appeared below other content (secrets after a form that the page re-rendered above) into view,
 * under the top bar, and moves focus to its heading so it is read out.
 */
export function reveal(panel: HTMLElement): void {
  if (!panel.isConnected) return;
  panel.scrollIntoView({ block: "start" });
  panel.querySelector<HTMLElement>("h2, h3")?.focus({ preventScroll: true });
}

/** A label as it reads mid-sentence: "Signing secret" → "signing secret", "API key" stays. */
function inline(label: string): string {
  return label.replace(/^[A-Z][a-z]/, (start) => start.toLowerCase());
}

async function copyText(text: string, label: string, button: HTMLButtonElement, source: HTMLElement): Promise<void> {
  try {
    if (!navigator.clipboard) throw new Error("no clipboard");
    await navigator.clipboard.writeText(text);
    const before = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => {
      button.textContent = before;
    }, 2000);
    announce(`${label} copied to the clipboard`);
  } catch {
    // Without clipboard access (plain http, denied permission) select it, so one keystroke copies it.
    const range = document.createRange();
    range.selectNodeContents(source);
    getSelection()?.removeAllRanges();
    getSelection()?.addRange(range);
    announce(`Could not copy automatically; the ${inline(label)} is selected, press Ctrl+C or Cmd+C`);
  }
}

export function byId<T extends HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (!element) throw new Error(`missing #${id}`);
  return element as T;
}

/** Submits through the API with the button busy; any error (the API's, or a thrown check) appears in place. */
export function onSubmit(
  form: HTMLFormElement,
  submit: HTMLButtonElement,
  error: HTMLElement,
  action: () => Promise<void>,
): void {
  form.noValidate = true;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    clearError(error);
    void busy(submit, action).catch((failure: unknown) => showError(error, failure));
  });
}

/** A check made before calling the API, worded for the person, shown like the API's own errors. */
export class InputError extends Error {}

export function headed(title: string, level: "h2" | "h3", ...content: (Node | null)[]): HTMLElement {
  const id = uid("section");
  return h("section", { "aria-labelledby": id }, h(level, { id }, title), ...content);
}
