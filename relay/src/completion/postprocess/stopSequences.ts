import type { Stage } from "./stage";

// Stop sequences: a server may pass a model's file separator or FIM token through as text (it was not among the
// few stops sent upstream, or the server does not match stops on special tokens); the output ends before it.

export class StopSequenceStop implements Stage {
  stopped = false;
  /** The end of the text so far that could be the start of a stop sequence, held until the next text decides. */
  private held = "";
  private readonly longest: number;

  constructor(private readonly stops: readonly string[]) {
    this.longest = Math.max(...stops.map((stop) => stop.length));
  }

  push(text: string): string {
    const all = this.held + text;
    let cut = -1;
    for (const stop of this.stops) {
      const at = stop === "" ? -1 : all.indexOf(stop);
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    if (cut >= 0) {
      this.stopped = true;
      this.held = "";
      return all.slice(0, cut);
    }
    const keep = this.partialTail(all);
    this.held = all.slice(all.length - keep);
    return all.slice(0, all.length - keep);
  }

  end(): string {
    const out = this.held;
    this.held = "";
    return out;
  }

  /** The length of the longest end of `text` that begins some stop sequence. */
  private partialTail(text: string): number {
    for (let length = Math.min(text.length, this.longest - 1); length > 0; length--) {
      const tail = text.slice(text.length - length);
      if (this.stops.some((stop) => stop.startsWith(tail))) return length;
    }
    return 0;
  }
}
