import { LRUCache } from "lru-cache";
import type { CursorText } from "./context";

interface Entry {
  readonly docKey: string;
  /** Length of the text before the cursor when the suggestion was made. */
  readonly anchor: number;
  /** The last characters before the cursor then, to recognise the same place later. */
  readonly anchorTail: string;
  /** The first characters after the cursor then; typing through leaves them untouched. */
  readonly afterHead: string;
  readonly text: string;
  /** The relay's completion id the suggestion came with. */
  readonly id: string | undefined;
}

const ANCHOR_CHARS = 64;
const AFTER_CHARS = 32;

/**
 * Remembers shown suggestions by where they were shown. While the user types characters that match a suggestion
 * (or deletes some of them again), the rest of that suggestion is served from here, so no request is needed.
 */
export class TypingThroughCache {
  private readonly entries: LRUCache<string, Entry>;

  constructor(maxEntries = 100) {
    this.entries = new LRUCache<string, Entry>({ max: maxEntries });
  }

  store(docKey: string, cursor: CursorText, text: string, id?: string): void {
    const anchorTail = cursor.before.slice(-ANCHOR_CHARS);
    const anchor = cursor.before.length;
    this.entries.set(`${docKey}\u0000${anchor}\u0000${anchorTail}`, {
      docKey,
      anchor,
      anchorTail,
      afterHead: cursor.after.slice(0, AFTER_CHARS),
      text,
      id,
    });
  }

  /** The not-yet-typed remainder of a stored suggestion that the text around the cursor still agrees with. */
  lookup(docKey: string, cursor: CursorText): string | undefined {
    return this.find(docKey, cursor)?.text;
  }

  /** Like `lookup`, with the id of the completion the remainder belongs to. */
  find(docKey: string, cursor: CursorText): { text: string; id: string | undefined } | undefined {
    const afterHead = cursor.after.slice(0, AFTER_CHARS);
    for (const [key, entry] of this.entries.entries()) {
      if (entry.docKey !== docKey || entry.afterHead !== afterHead) continue;
      const typed = cursor.before.length - entry.anchor;
      if (typed < 0 || typed >= entry.text.length) continue;
      if (!cursor.before.endsWith(entry.anchorTail + entry.text.slice(0, typed))) continue;
      this.entries.get(key);
      return { text: entry.text.slice(typed), id: entry.id };
    }
    return undefined;
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
