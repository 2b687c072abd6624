/** Reads `value[key]` from parsed JSON of unknown shape; undefined for anything that is not an object or array. */
export function field(value: unknown, key: string | number): unknown {
  if (typeof value !== "object" || value === null) return undefined;
  return (value as Record<string | number, unknown>)[key];
}

/** `choices[0].delta.content` of a stream chunk, or `choices[0].message.content` of a whole answer. */
export function chatText(json: unknown): string | undefined {
  const choice = field(field(json, "choices"), 0);
  const text = field(field(choice, "delta"), "content") ?? field(field(choice, "message"), "content");
  return typeof text === "string" ? text : undefined;
}

/** `choices[0].text` of a legacy completion, streamed or whole. */
export function completionText(json: unknown): string | undefined {
  const text = field(field(field(json, "choices"), 0), "text");
  return typeof text === "string" ? text : undefined;
}
