/**
 * The completion playground: a real streamed completion from this relay, sent with the signed-in session as the
 * editor would send it, with its timing and the model's text before the relay's postprocessing.
 */
import { ApiError, api, postForEvents } from "../api";
import { clearError, errorSlot, field, h, onSubmit, uid } from "../dom";
import { emptyAnswerNote, PLAYGROUND_SAMPLE } from "../playgroundText";
import { app } from "../state";
import type { View } from "./view";

const SURFACES = ["code", "docs", "notes", "messages"] as const;
const LANGUAGES = ["typescript", "javascript", "python", "go", "rust", "java", "markdown", "plaintext"];

interface Chunk {
  /** The relay's model id the answer is for (tab-v1). */
  model?: string;
  choices?: { delta?: { content?: string }; finish_reason?: string | null }[];
}

/** What GET /tab/models says serves a model (TabModel in @tab-relay/shared, as far as this page reads it). */
interface ModelsAnswer {
  models: { id: string; served_by?: { provider: string; model?: string; engine?: string } }[];
}

/** The model that answered: the relay's id, and what serves it there when the relay says (the embedded engine's GGUF). */
export function answeredBy(id: string, servedBy: ModelsAnswer["models"][number]["served_by"]): string {
  if (servedBy?.model !== undefined)
    return `${id}: ${servedBy.model}${servedBy.provider === "engine" ? " on the embedded engine" : ""}${servedBy.engine ? ` (${servedBy.engine})` : ""}`;
  return id;
}

/** Line and column (both from 1) of an offset in a text. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - (before.lastIndexOf("\n") + 1) + 1 };
}

export function playgroundView(): View {
  const heading = h("h1", { tabindex: "-1" }, "Completion playground");
  const text = h("textarea", {
    name: "text",
    rows: "10",
    spellcheck: "false",
    class: "code-input",
    "data-testid": "playground-text",
  });
  text.value = PLAYGROUND_SAMPLE;
  const cursor = h("p", { class: "hint", "aria-live": "polite", "data-testid": "playground-cursor" });
  const surface = h(
    "select",
    { name: "surface", "data-testid": "playground-surface" },
    SURFACES.map((s) => h("option", { value: s }, s)),
  );
  const languages = h(
    "datalist",
    { id: uid("languages") },
    LANGUAGES.map((l) => h("option", { value: l })),
  );
  const language = h("input", {
    name: "language",
    value: "javascript",
    list: languages.id,
    autocomplete: "off",
    spellcheck: "false",
    "data-testid": "playground-language",
  });
  const submit = h(
    "button",
    { type: "submit", class: "primary", "data-testid": "playground-send" },
    "Complete at the cursor",
  );
  const stop = h("button", { type: "button", hidden: true, "data-testid": "playground-stop" }, "Stop");
  const error = errorSlot();

  const answer = h("pre", { class: "playground-out", "data-testid": "playground-answer" });
  const raw = h("pre", { class: "playground-out", "data-testid": "playground-raw" });
  const firstMs = h("dd", { "data-testid": "playground-first-ms" }, "–");
  const totalMs = h("dd", { "data-testid": "playground-total-ms" }, "–");
  const finish = h("dd", { "data-testid": "playground-finish" }, "–");
  const model = h("dd", { "data-testid": "playground-model" }, "–");
  const result = h(
    "section",
    {
      class: "playground-result",
      "aria-labelledby": "playground-answer-h",
      "data-testid": "playground-result",
      "data-state": "idle",
    },
    h("h2", { id: "playground-answer-h" }, "Answer"),
    h("p", { class: "hint" }, "What the editor would show as ghost text after the cursor, as it streams in."),
    answer,
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "First text after"),
      firstMs,
      h("dt", null, "Finished after"),
      totalMs,
      h("dt", null, "Finish reason"),
      finish,
      h("dt", null, "Answered by"),
      model,
    ),
    h("h2", null, "The model's raw text"),
    h(
      "p",
      { class: "hint" },
      "What the model answered before the relay cut it to the cursor's line, the text after the cursor and the token limit.",
    ),
    raw,
  );

  let offset = text.value.length;
  function showCursor(): void {
    offset = text.selectionStart ?? text.value.length;
    const { line, column } = lineAndColumn(text.value, offset);
    cursor.textContent = `Cursor at line ${line}, column ${column} (character ${offset} of ${text.value.length}). The text before it and after it are sent apart.`;
  }
  for (const type of ["input", "select", "keyup", "click", "focus"]) text.addEventListener(type, showCursor);
  requestAnimationFrame(() => {
    text.setSelectionRange(text.value.length, text.value.length);
    showCursor();
  });

  let running: AbortController | null = null;
  stop.addEventListener("click", () => running?.abort());

  const form = h(
    "form",
    { class: "playground", "data-testid": "playground-form" },
    field("Text (put the cursor where the completion goes)", text),
    cursor,
    h("div", { class: "row top" }, field("Surface", surface), h("div", null, field("Language", language), languages)),
    h("div", { class: "row" }, submit, stop),
    error,
  );

  onSubmit(form, submit, error, async () => {
    const session = app.session;
    if (!session) return;
    const at = Math.min(offset, text.value.length);
    const lang = language.value.trim();
    const tabContext: Record<string, string> = {
      surface: surface.value,
      workspace_slug: session.workspace.slug,
      entity_id: "console-playground",
      document_type: lang === "markdown" ? "markdown" : "plaintext",
      active_text_before_cursor: text.value.slice(0, at),
      active_text_after_cursor: text.value.slice(at),
    };
    if (lang) tabContext.code_language = lang;
    answer.textContent = "";
    raw.textContent = "";
    firstMs.textContent = "–";
    totalMs.textContent = "–";
    finish.textContent = "–";
    model.textContent = "–";
    let modelId: string | undefined;
    result.dataset.state = "streaming";
    const controller = new AbortController();
    running = controller;
    stop.hidden = false;
    const started = performance.now();
    const since = () => `${Math.round(performance.now() - started)} ms`;
    let sawText = false;
    try {
      await postForEvents(
        "/tab/chat/completions",
        { stream: true, tab_raw_text: true, tab_context: tabContext },
        ({ event, data }) => {
          if (event === "error") {
            const envelope = (JSON.parse(data) as { error?: { code?: string; message?: string } }).error;
            throw new ApiError(
              200,
              envelope?.code ?? "UPSTREAM_ERROR",
              envelope?.message ?? "The completion failed mid-stream",
            );
          }
          if (event === "raw") {
            raw.append((JSON.parse(data) as { text: string }).text);
            return;
          }
          if (data === "[DONE]") return;
          const chunk = JSON.parse(data) as Chunk;
          if (modelId === undefined && chunk.model) {
            modelId = chunk.model;
            model.textContent = modelId;
          }
          const choice = chunk.choices?.[0];
          const content = choice?.delta?.content;
          if (content) {
            if (!sawText) firstMs.textContent = since();
            sawText = true;
            answer.append(content);
          }
          if (choice?.finish_reason) finish.textContent = choice.finish_reason;
        },
        controller.signal,
      );
      totalMs.textContent = since();
      if (modelId !== undefined) {
        // The answer names the relay's model id; the model list says what serves it on this relay.
        const listed = await api<ModelsAnswer>("GET", "/tab/models").catch(() => undefined);
        const id = modelId;
        model.textContent = answeredBy(id, listed?.models.find((m) => m.id === id)?.served_by);
      }
      if (!sawText) answer.append(h("span", { class: "muted" }, emptyAnswerNote(await relayProvider())));
      if (!raw.textContent) raw.append(h("span", { class: "muted" }, "(none)"));
      result.dataset.state = "done";
    } catch (failure) {
      result.dataset.state = controller.signal.aborted ? "stopped" : "failed";
      if (!controller.signal.aborted) throw failure;
    } finally {
      running = null;
      stop.hidden = true;
    }
  });
  form.addEventListener("input", () => clearError(error));

  const element = h(
    "div",
    { class: "page" },
    heading,
    h(
      "p",
      { class: "muted" },
      "Sends a real completion to this relay with your session, the way the editor extension does, to check the relay and its model from a browser.",
    ),
    form,
    result,
  );
  return { title: "Playground", element, focusTarget: heading };
}

/** Which provider answers (`provider` of GET /healthz), to say why an answer is empty; undefined when unknown. */
async function relayProvider(): Promise<string | undefined> {
  try {
    const health = (await (await fetch("/healthz", { cache: "no-store" })).json()) as { provider?: unknown };
    return typeof health.provider === "string" ? health.provider : undefined;
  } catch {
    return undefined;
  }
}
