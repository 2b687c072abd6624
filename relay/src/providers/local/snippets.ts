/**
 * The snippets of `surrounding_context` as the local engine needs them: where each ends and which file it is
 * from. Each snippet is introduced by a header line `--- file: <path> ---`, written by formatSnippets in
 * shared/src/protocol/snippets.ts, which escapes a line of code that looks like one with a leading space; text
 * before the first header (or a context with no header, from another client) belongs to no file.
 */
export class SnippetMap {
  /** Offsets of the header lines, ascending, and the path each names. */
  private readonly starts: number[] = [];
  private readonly paths: string[] = [];

  constructor(private readonly surrounding: string) {
    const header = /^--- file: (.+) ---\r?$/gm;
    for (let found = header.exec(surrounding); found !== null; found = header.exec(surrounding)) {
      this.starts.push(found.index);
      this.paths.push(found[1] ?? "");
    }
  }

  /**
   * Where the snippet holding `from` ends: before the next header line, at `limit` at most. What follows a header
   * is another file, or another part of one: a continuation that ran on into it would suggest the header and
   * code from somewhere else.
   */
  end(from: number, limit: number): number {
    const next = this.headerAfter(from);
    const header = this.starts[next];
    if (header === undefined || header >= limit) return Math.min(limit, this.surrounding.length);
    // The line break before the header (\n or \r\n) ends the snippet's text.
    const lineBreak = this.surrounding[header - 2] === "\r" ? 2 : 1;
    return Math.max(from, header - lineBreak);
  }

  /** The path of the snippet holding `at`, or undefined before the first header. */
  pathAt(at: number): string | undefined {
    return this.paths[this.headerAfter(at) - 1];
  }

  /** Index of the first header at or after `at` (its line is not part of the snippet before it). */
  private headerAfter(at: number): number {
    let low = 0;
    let high = this.starts.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((this.starts[middle] ?? 0) < at) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}
