/**
 * The text of a stream's events without `JSON.parse` of each whole event, where that gives exactly what parsing gives.
 *
 * A model server's chunks of one stream differ only in their text: `{"id":"chatcmpl-1",…,"choices":[{"index":0,
 * "delta":{"content":"<text>"},"finish_reason":null}]}`. Once one event has been parsed the usual way, its bytes
 * before and after the text's string literal are this stream's template. A later event that is those same bytes
 * around one well-formed JSON string literal is the same JSON with another string in that one place, so it parses
 * to the same tree with that string where the text was: what the extractor reads there is that string. Anything
 * else (another shape, a second event type, an escape the check below does not take, a long event) goes to
 * `JSON.parse` as before, so every error and limit is still the slow path's own.
 *
 * That the extractor reads the text at that place, and nothing else depends on it, is checked when the template is
 * learned: the event is parsed again with a sentinel string there, and the extractor must return the sentinel (a
 * reader of any other place would give the same value for both parses, and the two values differ). The caller
 * uses this only with extractors that read fixed places (`chatText`, `completionText`), no `isLast`, and once
 * the mode has nothing more to notice; the error fields (`error`, `object`, `message`) are at the top level, which
 * the template's bytes fix, and the template is refused unless they say "no error" for the sentinel too.
 */

/** Events this long go to `JSON.parse`, since the shape scan before it (jsonShape.ts) starts at this length. */
const MAX_FAST_CHARS = 4 * 1024;
const SENTINEL = "\u0001tab-relay template probe\u0001";
const SENTINEL_LITERAL = JSON.stringify(SENTINEL);
/** Learning costs a parse; a stream whose events never fit is not tried for ever. */
const MAX_ATTEMPTS = 2;

export class EventTemplate {
  private prefix = "";
  private suffix = "";
  private ready = false;
  private attempts = 0;

  constructor(
    /** The mode's text extractor: `chatText` or `completionText`. */
    private readonly extract: (json: unknown) => string | undefined,
    /** Whether a parsed event reports an upstream error (the provider's `streamErrorMessage`). */
    private readonly isError: (json: unknown) => boolean,
  ) {}

  /** The text of `data` by the template, or undefined when only `JSON.parse` can say. */
  text(data: string): string | undefined {
    if (!this.ready) return undefined;
    const { prefix, suffix } = this;
    const end = data.length - suffix.length;
    if (data.length >= MAX_FAST_CHARS || end - prefix.length < 2) return undefined;
    if (!data.startsWith(prefix) || !data.endsWith(suffix)) return undefined;
    return stringLiteral(data, prefix.length, end);
  }

  /** Learns the template from an event that `JSON.parse` read, whose extracted text was `text`. */
  learn(data: string, text: string): void {
    if (this.ready || this.attempts >= MAX_ATTEMPTS || text === "" || text === SENTINEL) return;
    if (data.length >= MAX_FAST_CHARS) return;
    this.attempts++;
    // The text as V8 writes it; a server that escapes differently (`\u00e9`) keeps the slow path.
    const literal = JSON.stringify(text);
    const at = data.indexOf(literal);
    if (at === -1) return;
    const prefix = data.slice(0, at);
    const suffix = data.slice(at + literal.length);
    let probe: unknown;
    try {
      probe = JSON.parse(prefix + SENTINEL_LITERAL + suffix);
    } catch {
      // The bytes found were inside another string or a key: not the text's place.
      return;
    }
    if (this.extract(probe) !== SENTINEL || this.isError(probe)) return;
    this.prefix = prefix;
    this.suffix = suffix;
    this.ready = true;
  }
}

/**
 * The value of the JSON string literal that is exactly `data[start, end)`, or undefined when it is not one: it must
 * open and close with a quote and hold no other unescaped quote and no control character (RFC 8259 §7). Escapes
 * are decoded by `JSON.parse` of the literal alone, which refuses any that is not valid JSON.
 */
function stringLiteral(data: string, start: number, end: number): string | undefined {
  const last = end - 1;
  if (data.charCodeAt(start) !== 0x22 || data.charCodeAt(last) !== 0x22) return undefined;
  let escaped = false;
  for (let i = start + 1; i < last; i++) {
    const c = data.charCodeAt(i);
    if (c === 0x5c) {
      escaped = true;
      // The escaped character is skipped; an escape that would swallow the closing quote is no literal.
      if (++i >= last) return undefined;
    } else if (c === 0x22 || c < 0x20) return undefined;
  }
  if (!escaped) return data.slice(start + 1, last);
  try {
    return JSON.parse(data.slice(start, end)) as string;
  } catch {
    return undefined;
  }
}
