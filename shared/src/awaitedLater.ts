/**
 * A promise started now and awaited later, once other work is done. Until it is awaited nothing handles its
 * rejection, and an unhandled rejection ends a Node process: the promise gets a handler at once, and the awaiter
 * still sees the rejection. The brand lets the `tab-relay/no-held-promise` lint rule (scripts/eslint/heldPromises.mjs)
 * tell such a promise from one that is held across an `await` unguarded.
 */
export type AwaitedLater<T> = Promise<T> & { readonly __awaitedLater: true };

export function awaitedLater<T>(promise: Promise<T>): AwaitedLater<T> {
  // A promise that is never awaited (the request failed first) is dropped on purpose: what awaits it reports it.
  promise.catch(() => undefined);
  return promise as AwaitedLater<T>;
}
