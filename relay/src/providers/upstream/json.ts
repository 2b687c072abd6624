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

/**
 * The most any answer or stream event of a model server may hold: its text sits a few levels down in a handful of
 * fields (`choices[0].message.content`, `usage`, llama.cpp's `timings`), so these leave room for any real server.
 */
export const JSON_SHAPE_LIMITS = Object.freeze({ maxDepth: 64, maxValues: 10_000 });
/** Below this many characters JSON.parse cannot take long, whatever the shape: no scan first. */
const SCAN_FROM_CHARS = 4 * 1024;

/**
 * What makes `text` too costly to parse, or undefined. JSON.parse takes time by the values it builds, not by
 * bytes: 2 MB of `[[[[…]]]]` (a million arrays) held the event loop for 0.7 s, 900 KB of `{},{},…` for 0.14 s,
 * against 9 ms for 2 MB of one string. One pass over the characters counts nesting and values (objects, arrays
 * and the commas between members) outside strings, so an answer within the size limits cannot stall the relay.
 */
export function jsonShapeProblem(
  text: string,
  limits: { maxDepth: number; maxValues: number } = JSON_SHAPE_LIMITS,
): "depth" | "values" | undefined {
  if (text.length < SCAN_FROM_CHARS) return undefined;
  let depth = 0;
  let values = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limits.maxDepth) return "depth";
      if (++values > limits.maxValues) return "values";
    } else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c && ++values > limits.maxValues) return "values";
  }
  return undefined;
}
