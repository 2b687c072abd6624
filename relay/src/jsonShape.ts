/**
 * The most any JSON the relay reads may hold. A model server's text sits a few levels down in a handful of fields
 * (`choices[0].message.content`, `usage`, llama.cpp's `timings`); the largest request body of the API (a usage batch
 * of 100 events, a next edit's 16 recent edits of 40 lines each) holds under 2,000 values, 5 deep.
 */
export const JSON_SHAPE_LIMITS = Object.freeze({ maxDepth: 64, maxValues: 10_000 });
/** Below this many characters JSON.parse cannot take long, whatever the shape: no scan first. */
const SCAN_FROM_CHARS = 4 * 1024;

/**
 * What makes `text` too costly to parse, or undefined. JSON.parse takes time by the values it builds, not by
 * bytes: 2 MB of `[[[[…]]]]` (a million arrays) held the event loop for 0.7 s, 900 KB of `{},{},…` for 0.14 s,
 * against 9 ms for 2 MB of one string. One pass over the characters counts nesting and values (objects, arrays
 * and the commas between members) outside strings, so JSON within the size limits cannot stall the relay, whether
 * a model server's answer or a client's request body.
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
