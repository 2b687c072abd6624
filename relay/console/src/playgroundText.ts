/** The playground's words that tests read too: its sample and what an empty answer says. No DOM here. */

/**
 * The text the playground opens with, the cursor at its end: the local engine (the default) answers it with the
 * earlier function's body, so the first press of "Complete at the cursor" shows an answer.
 */
export const PLAYGROUND_SAMPLE =
  "function total(items) {\n  return items.reduce((sum, item) => sum + item.price, 0);\n}\n\nfunction subtotal(items) {\n  ";

/**
 * What an empty answer says, by the relay's provider (`provider` of GET /healthz): the local engine continues only
 * what already stands in the document, so it says so and how to get a real model.
 */
export function emptyAnswerNote(provider: string | undefined): string {
  if (provider !== "local") return "(nothing: the model had no completion here)";
  return (
    "(nothing: the built-in local engine only continues what already stands in the document. For a real code " +
    "model: npm start -- --model qwen2.5-coder-1.5b, or your model server; see docs/engine.md)"
  );
}
