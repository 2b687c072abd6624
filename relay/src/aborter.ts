/**
 * What the completion path needs of an abort signal: an `AbortSignal` is one, and so is an `Aborter`. Providers,
 * the completion service and `HttpPost` take this, so a completion needs no AbortController.
 */
export interface AbortLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  throwIfAborted(): void;
  addEventListener(type: "abort", listener: () => void, options: { once: true }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/**
 * A signal and its controller in one plain object: what an AbortController's signal does for the completion path,
 * without the EventTarget Node builds for each one. Creating, listening to and aborting the two controllers of every
 * completion (the route's and the provider's) was about 3 % of the relay's busy time outside `writev` in a profile
 * (docs/benchmarks.md). As with an AbortSignal, listeners run at once on `abort`, in the order they were added, each
 * once; the first reason stays, and a listener added after the abort is not called.
 */
export class Aborter implements AbortLike {
  aborted = false;
  reason: unknown = undefined;
  #listeners: (() => void)[] = [];

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) listener();
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  /** Every listener is called once, as with `{ once: true }`, the only way the completion path listens. */
  addEventListener(_type: "abort", listener: () => void, _options?: { once: true }): void {
    if (!this.aborted && !this.#listeners.includes(listener)) this.#listeners.push(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    const at = this.#listeners.indexOf(listener);
    if (at !== -1) this.#listeners.splice(at, 1);
  }
}
