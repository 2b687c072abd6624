/**
 * One step of the pipeline. Each stage decides from its input text alone, never from where fragments were
 * split, and holds back only a bounded tail; so the stages compose, and the concatenated output of any split
 * equals the output of the same text pushed in one piece.
 */
export interface Stage {
  /** Returns what is safe to pass on. Once `stopped` is set, the return value was the stage's last output. */
  push(text: string): string;
  end(): string;
  readonly stopped: boolean;
}
